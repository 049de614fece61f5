"""Short texts made from long ones: chat titles, one-line errors, why a summary fell back."""

from __future__ import annotations

from ..core.model.messages import Message
from ..core.model.records import SummaryRecord

NEW_CHAT_TITLE = "New chat"
TITLE_CHARS = 48
# Errors in one-line places (status bar, hints) are cut to this; the whole text is in the tooltip or the log.
BRIEF_CHARS = 160


def title_from(text: str) -> str:
    """A chat title from its first message: the first line, whitespace collapsed, cut at a word."""
    line = " ".join(next((row for row in text.splitlines() if row.strip()), "").split())
    if len(line) <= TITLE_CHARS:
        return line or NEW_CHAT_TITLE
    return line[:TITLE_CHARS].rsplit(" ", 1)[0].rstrip(" ,.;:") + "…"


def brief(text: str) -> str:
    """The first line of a message, cut to BRIEF_CHARS."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= BRIEF_CHARS else line[:BRIEF_CHARS - 1] + "…"


def fallback_sentence(record: SummaryRecord) -> str:
    """'Fell back to rules: the model took longer than 6 s, the summary's time limit'."""
    return record.fallback[:1].upper() + record.fallback[1:]


def stop_mark(message: Message) -> str | None:
    """What a reply that did not end by itself is marked with, as stored: cut at its token limit, or stopped."""
    if message.cut_at is not None:
        return f"Stopped at the {message.cut_at:,}-token limit: Continue goes on from here."
    if message.incomplete:
        return "Incomplete: the reply stopped before its end."
    return None


def waiting_text(progress: tuple[int, int] | None, seconds: float) -> str:
    """What a reply shows before its first text: the model reading the prompt, how far, and for how long."""
    elapsed = f"{seconds:.0f} s"
    if progress is None:
        return f"Waiting for the model… {elapsed}"
    read, total = progress
    if read >= total:
        return f"Read the prompt ({total:,} tokens); writing… {elapsed}"
    return f"Reading the prompt: {read:,} of {total:,} tokens… {elapsed}"
