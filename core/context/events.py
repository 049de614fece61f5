"""What the context engine tells its subscribers (EngineEvent: a summary made, folded in, undone or declined) and
the errors it raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..model.counted import counted
from ..model.records import SummaryRecord

EventKind = Literal["summarized", "merged", "undone", "declined"]


class NothingToSummarize(Exception):
    pass


class SummaryNotSmaller(NothingToSummarize):
    """A summary that would take as many tokens of the prompt as the messages it replaces, or more: not kept."""

    def __init__(self, record: SummaryRecord, covered: int, before: int, after: int):
        super().__init__(f"not summarized: a summary of {counted(covered, 'message')} would leave the prompt at {after:,} "
                         f"tokens, not fewer than the {before:,} it holds now; the messages stay as they are")
        self.record, self.before, self.after = record, before, after


class NothingToUndo(Exception):
    pass


class IntegrityError(RuntimeError):
    """An archived original no longer matches its stored fingerprint."""


@dataclass
class EngineEvent:
    """A summary made, folded in, undone or declined (an automatic one that saved nothing, not kept): its record
    (depth, kind, who wrote it) and the prompt's tokens before and after (for a declined one, what they would be)."""

    kind: EventKind
    record: SummaryRecord
    reason: str
    tokens_before: int
    tokens_after: int
