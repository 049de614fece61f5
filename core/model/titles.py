"""Chat titles: a new chat is called NEW_CHAT_TITLE until its first message names it (in the window, on the terminal
and in an import alike)."""

from __future__ import annotations

NEW_CHAT_TITLE = "New chat"
TITLE_CHARS = 48


def title_from(text: str) -> str:
    """A chat title from its first message: the first line, whitespace collapsed, cut at a word."""
    line = " ".join(next((row for row in text.splitlines() if row.strip()), "").split())
    if len(line) <= TITLE_CHARS:
        return line or NEW_CHAT_TITLE
    return line[:TITLE_CHARS].rsplit(" ", 1)[0].rstrip(" ,.;:") + "…"


def first_message_title(title: str, messages: int, text: str) -> str | None:
    """The title a chat called `title`, holding `messages` messages, takes as `text` is added to it, or None when it
    keeps its own: the first message names a chat still called NEW_CHAT_TITLE; a chat named by hand, or one with
    messages already, is never renamed."""
    if title != NEW_CHAT_TITLE or messages:
        return None
    named = title_from(text)
    return named if named != title else None
