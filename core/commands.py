"""Slash commands typed in the composer: the table, parsing and help. The tool runs they start are in tools.py."""

from __future__ import annotations

from dataclasses import dataclass

# command -> (argument hint, what it does); the order is the order of the help text.
COMMANDS: dict[str, tuple[str, str]] = {
    "context": ("", "show what the model sees: tokens by kind and the summary chain"),
    "summarize": ("[instructions]", "summarize older messages now, optionally with extra instructions"),
    "undo-summary": ("", "undo the latest summary and bring its messages back"),
    "history": ("", "list the summaries, then the recent messages"),
    "pin": ("", "pin the selected (or last) message so it is never summarized"),
    "unpin": ("", "unpin the selected (or last) message"),
    "run": ("CMD", "run a shell command and add its output and exit code as a tool message"),
    "grep": ("PATTERN [PATH]", "search files for a regular expression and add the matches as a tool message"),
}
NEEDS_ARGUMENT = {"run", "grep"}


@dataclass(frozen=True)
class SlashCommand:
    name: str
    argument: str = ""


class SlashError(ValueError):
    """A line that starts with '/' but is not a valid command; the message is a hint for the user."""


def help_text() -> str:
    width = max(len(f"/{name} {hint}".strip()) for name, (hint, _) in COMMANDS.items())
    return "\n".join(f"{f'/{name} {hint}'.strip():<{width}}  {what}" for name, (hint, what) in COMMANDS.items())


def parse(text: str) -> SlashCommand | None:
    """The slash command in `text`, None for an ordinary message; raises SlashError with a hint for a bad one.

    A line starting with '//' is an escaped slash: an ordinary message (the caller strips one '/').
    """
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    head, _, rest = stripped[1:].partition(" ")
    name = head.strip().lower()
    argument = rest.strip()
    if name not in COMMANDS:
        close = [c for c in COMMANDS if c.startswith(name[:2])] if name else []
        suggestion = f" Did you mean /{close[0]}?" if close else ""
        raise SlashError(
            f"Unknown command /{head}.{suggestion} Commands:\n{help_text()}\n"
            "(Start a message with // to send a literal slash.)")
    if name in NEEDS_ARGUMENT and not argument:
        raise SlashError(f"/{name} needs {COMMANDS[name][0]}: {COMMANDS[name][1]}")
    return SlashCommand(name, argument)


def unescape(text: str) -> str:
    """An ordinary message typed as '//...' is sent with one leading slash."""
    stripped = text.lstrip()
    return stripped[1:] if stripped.startswith("//") else text


