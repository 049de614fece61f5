"""The one command registry: every command the user can give, typed as /name or chosen in a menu, with its handler.

The slash-command parser, /help, the window's menus and shortcuts and the composer's completion all read
REGISTRY. A chat command's handler is here, written once for the window and the terminal, which only present its
CommandResult; a command with no handler here (new chat, import, zoom, ...) is the window's own.
"""

from __future__ import annotations

import difflib
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..context.engine import IntegrityError, NothingToSummarize, NothingToUndo
from ..model.counted import counted
from ..model.messages import Message
from ..providers.base import CancelToken
from ..settings import ChatSettings
from ..storage.store import MessageNotFound, StoreError
from ..summary.summarizers import SummarizationFailed
from ..tools.bounded import ToolInputError, grep, grep_argument, run_command_messages, tool_exchange
from ..tools.workspace import workspace_problem
from .history import history_lines, message_ref, one_line
from .session import ChatSession
from .snapshot import Snapshot


@dataclass(frozen=True)
class CommandResult:
    """What a chat command did: `text` says it (the terminal prints it; the window shows it where the command's
    kind of answer goes), `snapshot` is the chat after it, `failed` marks a refusal (nothing changed)."""

    text: str
    snapshot: Snapshot | None = None
    failed: bool = False
    # A refusal of what was asked (nothing to undo, no such message, a bad argument, a command of the window's),
    # not a failure to do it (the store, the summarizer): `precis chat` exits 2 for it, as for a line that is no
    # command, and 1 for the others, as `precis undo-summary` and the other commands do.
    bad_input: bool = False


# A chat command's handler: (the open chat, its argument, a token that Stop sets) -> what it did.
Handler = Callable[[ChatSession, str, CancelToken], CommandResult]


@dataclass(frozen=True)
class Command:
    name: str  # typed as /name; also the key the window's handler is found by
    title: str  # the menu item's text
    help: str  # one line for /help and the menu's tooltip
    argument: str = ""  # hint for the argument, e.g. "CMD" or "[instructions]" (brackets: optional)
    shortcut: str = ""  # key sequence, e.g. "Ctrl+E"
    menu: str = ""  # the menu it appears in ("File", "Chat", "View"), or none
    slash: bool = True  # whether it can be typed as /name
    handler: Handler | None = None  # the chat's handler; None: a command of the window's own
    tool: bool = False  # runs a tool: the window runs it beside the chat (Stop ends it), then adds what it gave

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


def _context(session: ChatSession, _argument: str, _cancel: CancelToken) -> CommandResult:
    snapshot = session.snapshot()
    usage = snapshot.usage
    assert usage is not None  # a session's snapshot always has it (only load_rows' partial one has none)
    return CommandResult(f"Context: {usage.total:,} / {usage.available:,} tokens ({usage.ratio:.0%}), "
                         f"{counted(len(snapshot.chain), 'summary')} in the chain.",
                         snapshot)


def _summarize(session: ChatSession, argument: str, _cancel: CancelToken) -> CommandResult:
    snapshot = session.summarize_now(argument or None)
    # A full chain is folded first (a "merged" event), then the summary is made: the last "summarized" event.
    record = next(e.record for e in reversed(snapshot.events) if e.kind == "summarized")
    return CommandResult(f"{record.result().describe()}\n{record.contents()}", snapshot)


def _undo_summary(session: ChatSession, _argument: str, _cancel: CancelToken) -> CommandResult:
    snapshot = session.undo_last()
    record = next(e.record for e in reversed(snapshot.events) if e.kind == "undone")
    return CommandResult(f"Summary undone: {record.undone_description()}.", snapshot)


def _history(session: ChatSession, argument: str, _cancel: CancelToken) -> CommandResult:
    if argument not in ("", "--full"):
        raise ToolInputError(f"/history takes nothing or --full, not {argument!r}")
    engine = session.built_engine
    return CommandResult("\n".join(history_lines(engine.messages, engine.records, full=argument == "--full")))


def _pinning(pinned: bool) -> Handler:
    def pin(session: ChatSession, argument: str, _cancel: CancelToken) -> CommandResult:
        """`argument`: the message's id (the window's selection) or its number in /history; none: the last
        message."""
        messages = session.built_engine.messages
        if not messages:
            raise ToolInputError("There is no message to pin yet.")
        try:
            message_id = message_ref(messages, argument) if argument else messages[-1].id
        except KeyError as exc:
            raise ToolInputError(f"/{'pin' if pinned else 'unpin'}: {exc.args[0]}") from None
        snapshot = session.set_pinned(message_id, pinned)
        message = next(m for m in snapshot.messages if m.id == message_id)
        said = ("Pinned: this message is always sent and never summarized." if pinned else
                "Unpinned: this message can be summarized again.")
        return CommandResult(f"{said} ({one_line(message)})", snapshot)
    return pin


def tool_messages(name: str, argument: str, cancel: CancelToken, settings: ChatSettings) -> tuple[Message, ...]:
    """What a tool command gives the chat: its call and result as messages, /run within the chat's limits. Both work
    in the chat's workspace folder when it names one (as the model's tools do), else where Precis runs. Touches no
    chat (run beside it)."""
    folder = _workspace_folder(name, settings)
    if name == "run":
        return run_command_messages(argument, cancel, cwd=folder, timeout=settings.run_timeout,
                                    memory_mb=settings.run_memory_mb, processes=settings.run_processes)
    pattern, path = grep_argument(argument)
    if folder is None:
        return tool_exchange("grep", {"pattern": pattern, "path": path}, grep(pattern, path, cancel))
    searched = (folder / Path(path).expanduser()).resolve()
    shown_under = folder if searched.is_relative_to(folder) else None  # named from the folder, as typed
    return tool_exchange("grep", {"pattern": pattern, "path": path},
                         grep(pattern, searched, cancel, shown_under=shown_under))


def _workspace_folder(name: str, settings: ChatSettings) -> Path | None:
    """The chat's workspace folder, resolved; None when it names none. ToolInputError when it is not there."""
    if not settings.workspace.strip():
        return None
    problem = workspace_problem(settings.workspace)
    if problem:
        raise ToolInputError(f"/{name} works in the chat's workspace folder, but {problem} "
                             "(Settings → This chat names it)")
    return Path(settings.workspace).expanduser().resolve()


def _tool(name: str) -> Handler:
    def run(session: ChatSession, argument: str, cancel: CancelToken) -> CommandResult:
        messages = tool_messages(name, argument, cancel, session.settings)
        return CommandResult(messages[-1].content, session.add_messages(list(messages)))
    return run


class NothingToRegenerate(ValueError):
    """The last message is neither a reply to write again nor a message of the user's left unanswered."""


def regenerate_target(messages: list[Message]) -> Message | None:
    """What Regenerate writes, one rule for the window and the terminal: the last reply, written again in its place
    (returned); None when the last message is the user's, left unanswered (its reply failed or was stopped before
    its first word), which is then answered. NothingToRegenerate when it is neither (a tool result, no message)."""
    last = messages[-1] if messages else None
    if last is not None and last.role == "user":
        return None
    if last is not None and last.role == "assistant":
        return last
    raise NothingToRegenerate("The last message is not a reply; there is nothing to regenerate.")


# What a refused command raises: said to the user, nothing changed. The first are refusals of what was asked.
ASKED_WRONGLY = (NothingToSummarize, NothingToUndo, ToolInputError, MessageNotFound)
REFUSALS = (*ASKED_WRONGLY, IntegrityError, StoreError, SummarizationFailed)


def run_command(session: ChatSession, command: SlashCommand, cancel: CancelToken | None = None) -> CommandResult:
    """Run a chat command (one with a handler) on the open chat; a refusal comes back as a failed result."""
    handler = REGISTRY[command.name].handler
    if handler is None:
        return CommandResult(f"/{command.name} works in the window only", failed=True, bad_input=True)
    try:
        return handler(session, command.argument, cancel or CancelToken())
    except REFUSALS as exc:
        return CommandResult(str(exc), failed=True, bad_input=isinstance(exc, ASKED_WRONGLY))


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
register("edit-last", "Edit and resend the last message", "put your last message back in the box; sending it makes "
         "a new version, and ‹ › on it pages back to the earlier one and its reply",
         shortcut="Ctrl+E", menu="Chat", slash=False)
register("regenerate", "Regenerate the last reply", "write the last reply again (or the reply your last message "
         "lacks, if it failed); in the window ‹ › on it pages back to the earlier one", shortcut="Ctrl+R",
         menu="Chat")
register("continue", "Continue the reply", "have the model go on with the last reply (cut at its token limit, or "
         "stopped); what it writes is added to that reply", menu="Chat")
register("use", "Use a tool", "send a message the model must answer by calling TOOL first (a chat with tools; "
         "a small model rarely calls one by itself)", argument="TOOL MESSAGE")
register("context", "Show the context", "show what the model sees: tokens by kind and the summary chain",
         menu="Chat", handler=_context)
register("summarize", "Summarize now", "summarize older messages now, optionally with extra instructions",
         argument="[instructions]", menu="Chat", handler=_summarize)
register("undo-summary", "Undo the latest summary", "undo the latest summary and bring its messages back",
         menu="Chat", handler=_undo_summary)
register("history", "History", "list the summaries, then the recent messages (--full: what each covers and says)",
         argument="[--full]", menu="Chat", handler=_history)
register("pin", "Pin the message", "pin a message so it is never summarized: the one selected (in the terminal, "
         "N: its number in /history, or its id), else the last",
         argument="[N]", menu="Chat", handler=_pinning(True))
register("unpin", "Unpin the message", "unpin a message: the one selected (in the terminal, N: its number in "
         "/history, or its id), else the last", argument="[N]", menu="Chat",
         handler=_pinning(False))
register("run", "Run a shell command", "run a shell command (in the chat's workspace folder, if it names one) and "
         "add its output and exit code as a tool message",
         argument="CMD", handler=_tool("run"), tool=True)
register("grep", "Search files", "search files (under the chat's workspace folder, if it names one) for a regular "
         "expression and add the matches as a tool message",
         argument="PATTERN [PATH]", handler=_tool("grep"), tool=True)
register("mcp", "MCP servers", "list the MCP servers and their states; restart NAME starts one that failed or "
         "ended again (the window: Settings → Tools, with a Restart button each)", argument="[restart NAME]")
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
# Each face lists them its own way (the window in a text window, the terminal fitted to its width): needs no chat.
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
    """A line that starts with '/' but is not a valid command; the message is a hint for the user, one line."""


# Below this many columns for a command's help beside its usage, the help goes on the lines under it.
NARROWEST_HELP = 30
# How alike a mistyped name and a command must be to suggest it (difflib's ratio: /hlep and /help are 0.75).
SUGGEST_RATIO = 0.6
MOST_SUGGESTED = 3


def help_text(width: int | None = None) -> str:
    """One line a command: its usage, then what it does. Within `width` columns (a terminal's), the help is wrapped
    beside the usages, or under each when the column beside them would be too narrow; None: a line each, unwrapped."""
    commands = slash_commands()
    usage_width = max(len(command.usage) for command in commands)
    if width is None:
        return "\n".join(f"{command.usage:<{usage_width}}  {command.help}" for command in commands)
    beside = width - usage_width - 2 >= NARROWEST_HELP
    lines = []
    for command in commands:
        if beside:
            wrapped = textwrap.wrap(command.help, width - usage_width - 2)
            lines.append(f"{command.usage:<{usage_width}}  {wrapped[0]}")
            lines += [" " * (usage_width + 2) + line for line in wrapped[1:]]
        else:
            lines.append(command.usage)
            lines += textwrap.wrap(command.help, width, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(lines)


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
        raise SlashError(unknown_command(head))
    if command.needs_argument and not argument:
        raise SlashError(f"/{name} needs {command.argument}: {command.help}")
    if argument and not command.argument:  # `/context all` did as /context, as if the word had been read
        raise SlashError(f"/{name} takes nothing after it, not {argument!r}: {command.help}")
    return SlashCommand(name, argument)


def unknown_command(typed: str) -> str:
    """What is said of /`typed`, a name no command has: the commands it is likely a slip for (a prefix of theirs, or
    close by edit distance: /hlep, /sumarize, /undo), where all are listed, and how to send a message that starts with
    a slash. One line: listing all ~30 lines of /help after each typo buried the suggestion above them."""
    name = typed.lower()
    names = [command.name for command in slash_commands()]
    started = [command for command in names if len(name) >= 2 and command.startswith(name)]
    close = [*started, *difflib.get_close_matches(name, names, MOST_SUGGESTED, SUGGEST_RATIO)]
    likely = list(dict.fromkeys(close))[:MOST_SUGGESTED]
    suggestion = f" Did you mean {' or '.join(f'/{command}' for command in likely)}?" if likely else ""
    return f"Unknown command /{typed}.{suggestion} /help lists the commands; // starts a message with a slash."


def unescape(text: str) -> str:
    """An ordinary message typed as '//...' is sent with one leading slash."""
    stripped = text.lstrip()
    return stripped[1:] if stripped.startswith("//") else text


def mcp_restart(argument: str) -> str | None:
    """/mcp's argument: the server to start again (`restart NAME`), None to list them. ValueError for anything else."""
    verb, _, name = argument.strip().partition(" ")
    if not verb:
        return None
    if verb.lower() != "restart" or not name.strip() or " " in name.strip():
        raise ValueError(f"/mcp takes nothing (the servers and their states) or restart NAME, not {argument.strip()!r}")
    return name.strip()


def forced_tool(argument: str) -> tuple[str, str]:
    """/use's argument: (the tool's name, the message). ValueError when either is missing."""
    tool, _, message = argument.strip().partition(" ")
    if not tool or not message.strip():
        raise ValueError("/use needs a tool and a message: /use TOOL MESSAGE (e.g. /use read_file what does main.py do?)")
    return tool, message.strip()
