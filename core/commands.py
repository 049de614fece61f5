"""The one command registry: every command the user can give, typed as /name in the composer or chosen in a menu.

The slash-command parser, /help, the window's menus and shortcuts and the composer's completion all read
REGISTRY, so a new command is one `register(...)` call here (and its handler in the window). The tool runs the
commands start are in tools.py.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str  # typed as /name; also the key the window's handler is found by
    title: str  # the menu item's text
    help: str  # one line for /help and the menu's tooltip
    argument: str = ""  # hint for the argument, e.g. "CMD" or "[instructions]" (brackets: optional)
    shortcut: str = ""  # key sequence, e.g. "Ctrl+E"
    menu: str = ""  # the menu it appears in ("File", "Chat", "View"), or none
    slash: bool = True  # whether it can be typed as /name

    @property
    def needs_argument(self) -> bool:
        return bool(self.argument) and not self.argument.startswith("[")

    @property
    def usage(self) -> str:
        return f"/{self.name} {self.argument}".strip()


REGISTRY: dict[str, Command] = {}


def register(name: str, title: str, help: str, **details) -> Command:
    if name in REGISTRY:
        raise ValueError(f"the command {name} is registered twice")
    REGISTRY[name] = command = Command(name, title, help, **details)
    return command


# The order is the order of the menus and of /help.
register("new-chat", "New chat", "start a new chat", shortcut="Ctrl+N", menu="File", slash=False)
register("import", "Import transcript…", "import a chat file (JSONL, OpenAI JSON, Claude Code session)",
         shortcut="Ctrl+I", menu="File", slash=False)
register("export", "Export…", "write the chat to a file: Markdown or Precis JSONL (with its summaries) or OpenAI "
         "chat JSON", shortcut="Ctrl+Shift+E", menu="File", slash=False)
register("settings", "Settings…", "the model, the summarization policy and this chat's overrides",
         shortcut="Ctrl+,", menu="File", slash=False)
register("quit", "Quit", "close the window (a reply being written keeps what arrived)", shortcut="Ctrl+Q",
         menu="File", slash=False)
register("edit-last", "Edit and resend the last message", "put your last message back in the box to change it",
         shortcut="Ctrl+E", menu="Chat", slash=False)
register("regenerate", "Regenerate the last reply", "replace the last reply with a new one (Undo brings it back)",
         shortcut="Ctrl+R", menu="Chat", slash=False)
register("context", "Show the context", "show what the model sees: tokens by kind and the summary chain",
         menu="Chat")
register("summarize", "Summarize now", "summarize older messages now, optionally with extra instructions",
         argument="[instructions]", menu="Chat")
register("undo-summary", "Undo the latest summary", "undo the latest summary and bring its messages back",
         menu="Chat")
register("history", "History", "list the summaries, then the recent messages", menu="Chat")
register("pin", "Pin the message", "pin the selected (or last) message so it is never summarized",
         menu="Chat")
register("unpin", "Unpin the message", "unpin the selected (or last) message", menu="Chat")
register("run", "Run a shell command", "run a shell command and add its output and exit code as a tool message",
         argument="CMD")
register("grep", "Search files", "search files for a regular expression and add the matches as a tool message",
         argument="PATTERN [PATH]")
register("inspector", "Context inspector", "show or hide the context inspector", shortcut="Ctrl+Shift+I",
         menu="View", slash=False)
register("search", "Search all chats", "full-text search across all chats, archived messages included",
         shortcut="Ctrl+K", menu="View", slash=False)
register("zoom-in", "Zoom in", "larger text in the conversation and the message box", shortcut="Ctrl+=",
         menu="View", slash=False)
register("zoom-out", "Zoom out", "smaller text in the conversation and the message box", shortcut="Ctrl+-",
         menu="View", slash=False)
register("zoom-reset", "Actual size", "the conversation's text at the system's size", shortcut="Ctrl+0",
         menu="View", slash=False)
register("help", "Commands", "list the commands", shortcut="F1", menu="View")


def slash_commands() -> list[Command]:
    return [command for command in REGISTRY.values() if command.slash]


def menus() -> dict[str, list[Command]]:
    """Menu name -> its commands, in registration order."""
    grouped: dict[str, list[Command]] = {}
    for command in REGISTRY.values():
        if command.menu:
            grouped.setdefault(command.menu, []).append(command)
    return grouped


def completions(prefix: str) -> list[Command]:
    """The slash commands whose /name starts with what is typed (`/su` -> /summarize, `/SU` too): the composer's
    completion list."""
    typed = prefix.strip().lower().lstrip("/")
    return [command for command in slash_commands() if command.name.startswith(typed)]


@dataclass(frozen=True)
class SlashCommand:
    name: str
    argument: str = ""


class SlashError(ValueError):
    """A line that starts with '/' but is not a valid command; the message is a hint for the user."""


def help_text() -> str:
    commands = slash_commands()
    width = max(len(command.usage) for command in commands)
    return "\n".join(f"{command.usage:<{width}}  {command.help}" for command in commands)


def short_help() -> str:
    return " ".join(f"/{command.name}" for command in slash_commands())


def is_command(text: str) -> bool:
    """Whether `text` is a slash command (never sent to the model), not an ordinary message ('//' escapes one)."""
    stripped = text.strip()
    return stripped.startswith("/") and not stripped.startswith("//")


def parse(text: str) -> SlashCommand | None:
    """The slash command in `text`, None for an ordinary message; raises SlashError with a hint for a bad one.

    A line starting with '//' is an escaped slash: an ordinary message (the caller strips one '/').
    """
    if not is_command(text):
        return None
    head, _, rest = text.strip()[1:].partition(" ")
    name = head.strip().lower()
    argument = rest.strip()
    command = REGISTRY.get(name)
    if command is None or not command.slash:
        close = [c.name for c in slash_commands() if c.name.startswith(name[:2])] if name else []
        suggestion = f" Did you mean /{close[0]}?" if close else ""
        raise SlashError(
            f"Unknown command /{head}.{suggestion} Commands:\n{help_text()}\n"
            "(Start a message with // to send a literal slash.)")
    if command.needs_argument and not argument:
        raise SlashError(f"/{name} needs {command.argument}: {command.help}")
    return SlashCommand(name, argument)


def unescape(text: str) -> str:
    """An ordinary message typed as '//...' is sent with one leading slash."""
    stripped = text.lstrip()
    return stripped[1:] if stripped.startswith("//") else text
