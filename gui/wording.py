"""Short texts made from long ones: one-line errors, failures in the user's words, why a summary fell
back, a conversation row as a screen reader says it."""

from __future__ import annotations

import time

from ..core.chat.commands import REFUSALS as COMMAND_REFUSALS
from ..core.chat.rows import Row
from ..core.chat.snapshot import ReplyResult
from ..core.model.counted import counted
from ..core.model.messages import Message
from ..core.model.records import SummaryRecord
from ..core.models.download import DownloadError
from ..core.providers.base import ProviderError
from ..core.storage.store import Versions
from .message_text import FAILED_MARK, first_line_and_count, outcome_mark, tool_call_line

# Errors in one-line places (status bar, hints) are cut to this; the whole text is in the tooltip or the log.
BRIEF_CHARS = 160


def brief(text: str) -> str:
    """The first line of a message, cut to BRIEF_CHARS."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= BRIEF_CHARS else line[:BRIEF_CHARS - 1] + "…"


# What Precis raises on purpose, already worded for the user: the store, a provider or a download said no, a file
# could not be read, a value was refused. Anything else that ends a job is a fault in Precis itself.
REFUSALS = (*COMMAND_REFUSALS, ProviderError, DownloadError, OSError, ValueError)


def is_refusal(error: BaseException) -> bool:
    return isinstance(error, REFUSALS)


def failure_text(error: BaseException, doing: str = "") -> str:
    """Why a job failed, in one sentence. A refusal says its own words, after what was being done when that is
    given ('Could not rename the chat: …', said once: the store's own errors already begin 'could not rename the
    chat'). A fault says it is one: its bare text (a KeyError's "'id'") would read as nonsense."""
    refused = is_refusal(error)
    said = (str(error) or type(error).__name__) if refused else (
        f"an error inside Precis ({type(error).__name__}: {error}); please report it")
    if doing and not said.startswith("could not "):
        said = f"could not {doing}: {said}"
    return said if refused and not doing else said[0].upper() + said[1:]


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


def reply_stopped_text(result: ReplyResult) -> str | None:
    """What the status bar says of a reply that ended early: the user's own Stop is no failure."""
    if not result.kept:  # nothing arrived: the chat is as it was before it was asked
        why = "stopped before its first word" if result.stopped else f"failed: {brief(result.problem or '')}"
        back = "the earlier reply is back" if result.message.content else "your message is kept"
        return f"The reply {why}; {back}. Regenerate (Ctrl+R) asks again."
    if result.stopped:
        return "Reply stopped: what arrived is kept; Continue goes on from there."
    return f"Reply stopped: {brief(result.problem)}" if result.problem else None


def reply_finished_text(result: ReplyResult) -> str:
    """What a screen reader is told of a reply that ended by itself, and its length (a stopped or failed one is told by
    the status bar: reply_stopped_text); nothing for the others."""
    return "" if result.problem else f"Reply finished, {counted(len(result.message.content.split()), 'word')}"


def waiting_text(progress: tuple[int, int] | None, seconds: float) -> str:
    """What a reply shows before its first text: the model reading the prompt, how far, and for how long."""
    elapsed = f"{seconds:.0f} s"
    if progress is None:
        return f"Waiting for the model… {elapsed}"
    read, total = progress
    if read >= total:
        return f"Read the prompt ({total:,} tokens); writing… {elapsed}"
    return f"Reading the prompt: {read:,} of {total:,} tokens… {elapsed}"


def row_title(row: Row) -> str:
    """What a row's header says it is: "You", "System prompt" (the chat's opening), "System" (a later marker)..."""
    if row.record is not None:
        record = row.record
        return (f"SUMMARY · depth {record.depth} · {counted(row.covered, 'message')} · "
                f"{record.tokens_before:,} → {record.tokens_after:,} tokens · {record.kind}")
    return {"user": "You", "assistant": "Assistant", "system": "System prompt" if row.opening else "System"}.get(
        row.message.role, row.message.role.title())


_OUTCOMES = {"✓": "succeeded", FAILED_MARK: "failed"}


def spoken_row(row: Row, versions: Versions | None) -> str:
    """A conversation row as a screen reader says it: who or what, its state, when, then its text. The card draws
    the first parts in its header, and a row of tool calls only has calls, no text, so its text alone is not enough."""
    if row.record is not None:
        record = row.record
        when = time.strftime("%H:%M", time.localtime(record.created_at))
        return (f"Summary of {counted(row.covered, 'earlier message')}, depth {record.depth}"
                f"{', fallback' if record.fallback_used else ''}, {when}: {record.text}")
    message = row.message
    when = time.strftime("%H:%M", time.localtime(message.created_at))
    if row.kind == "tool_call":
        return f"Tool call, {when}: {tool_call_line(message)}"
    if row.kind == "tool_result":
        first, total = first_line_and_count(message.content)
        outcome = _OUTCOMES.get(outcome_mark(message), "outcome unknown")
        return (f"Output of {message.name or 'a tool'}, {outcome}, {total} line{'s' if total != 1 else ''}, {when}: "
                f"{first}")
    states = [row_title(row)]
    if message.pinned:
        states.append("pinned")
    if versions is not None:
        states.append(f"version {versions.shown + 1} of {len(versions.texts)}")
    if row.streaming:
        states.append("being written")
    elif mark := stop_mark(message):
        states.append(mark.split(":", 1)[0].lower())
    if row.error:
        states.append(f"error: {row.error}")
    text = message.content or row.waiting or ""
    if message.tool_calls:
        text = (text + " " if text else "") + "Calls " + "; ".join(tool_call_line(message).splitlines())
    return f"{', '.join(states)}, {when}: {text}"
