"""Summary records: what a summarization produced, what it covered, and how it was made."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from pydantic import AliasChoices, BaseModel, Field, model_validator

from .counted import counted
from .messages import new_id

T = TypeVar("T")

SummaryMode = Literal["rule", "llm", "hybrid"]
RecordStatus = Literal["active", "merged", "undone"]

MAX_KEY_POINTS = 30


class ActionItem(BaseModel):
    owner: str = ""
    task: str
    due: str = ""


class CommandRun(BaseModel):
    command: str
    exit_code: int | None = None
    count: int = 1


class ToolUsage(BaseModel):
    tool: str
    count: int
    notable: list[str] = Field(default_factory=list)


class Facets(BaseModel):
    """The record's structured fields of the covered messages, stored and shown (the documents' key decisions,
    action items, open questions, entities, files, commands). Not core.summary.trail_coverage.TrailFacts, the unsaved
    checklist the trail-coverage check matches against the context."""

    decisions: list[str] = Field(default_factory=list)
    action_items: list[ActionItem] = Field(default_factory=list)
    unresolved_questions: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    files_read: list[str] = Field(default_factory=list)
    files_modified: list[str] = Field(default_factory=list)
    # Files neither read nor modified through a tool, only named: in a shell command, the user's or the assistant's text.
    files_named: list[str] = Field(default_factory=list)
    commands: list[CommandRun] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    tool_usage: list[ToolUsage] = Field(default_factory=list)
    participants: list[str] = Field(default_factory=list)
    user_requests: list[str] = Field(default_factory=list)
    # How many entries of each kind a merged record left out to stay bounded (the originals stay in the archive).
    dropped: dict[str, int] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CoveredMessage:
    """A covered message and the fingerprint of its original. Slotted, not a model: a record of a long chat holds
    one per message (a pydantic object each was 40 MB at 100,000)."""

    id: str
    sha256: str


class TrailCoverage(BaseModel):
    """Which facts of the covered messages are still visible to the model (see core.summary.trail_coverage)."""

    kept: dict[str, int] = Field(default_factory=dict)
    total: dict[str, int] = Field(default_factory=dict)
    # The first missing facts of each kind (total - kept says how many there are in all).
    missing: dict[str, list[str]] = Field(default_factory=dict)

    def describe(self, limit: int = 5) -> str:
        parts = [f"{kind} {self.kept.get(kind, 0)}/{n}" for kind, n in self.total.items() if n]
        missing = [item for items in self.missing.values() for item in items]
        text = ", ".join(parts) if parts else "no facts to keep"
        if missing:
            count = sum(n - self.kept.get(kind, 0) for kind, n in self.total.items())
            more = f" (+{count - limit} more)" if count > limit else ""
            text += "; missing: " + ", ".join(missing[:limit]) + more
        return text


# A summary that reduces the context by less than this is reported as saving almost nothing.
LITTLE_SAVING_PERCENT = 5.0


@dataclass(frozen=True)
class SummaryResult:
    """What one summarization did, as the result card and the command line report it: messages and context tokens
    before and after, and the reduction. A summary that saves nothing (or costs tokens) says so."""

    messages_before: int  # the messages it replaced
    messages_after: int  # the summary that replaces them
    tokens_before: int  # the context before and after
    tokens_after: int

    @property
    def saved(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def reduction_percent(self) -> float:
        return 100.0 * self.saved / self.tokens_before if self.tokens_before else 0.0

    @property
    def saves_nothing(self) -> bool:
        return self.saved <= 0

    @property
    def saves_little(self) -> bool:
        """Saves something, but too little to count as a success (e.g. 31 of 1,752 tokens)."""
        return not self.saves_nothing and self.reduction_percent < LITTLE_SAVING_PERCENT

    def describe(self) -> str:
        """`12 messages → 1 summary · 4,210 → 380 tokens (−91%)`, or `(saves nothing: 15 tokens more)`."""
        messages = f"{counted(self.messages_before, 'message')} → {counted(self.messages_after, 'summary')}"
        tokens = f"{self.tokens_before:,} → {self.tokens_after:,} tokens"
        if self.saves_nothing:
            more = -self.saved
            verdict = f"saves nothing: {more:,} tokens more" if more else "saves nothing"
        else:
            verdict = f"{self.saved:,} saved, −{self.reduction_percent:.0f}%"
        return f"{messages} · {tokens} ({verdict})"


_WORD = re.compile(r"\w+")


class SummaryRecord(BaseModel):
    id: str = Field(default_factory=new_id)
    created_at: float = Field(default_factory=time.time)
    depth: int = 1
    parent_id: str | None = None
    mode: SummaryMode = "rule"
    text: str = ""
    key_points: list[str] = Field(default_factory=list, max_length=MAX_KEY_POINTS)
    facets: Facets = Field(default_factory=Facets)
    # Messages this summarization archived directly, with a fingerprint of each original.
    covered: list[CoveredMessage] = Field(default_factory=list)
    # Earlier summaries folded into this one (merge at the maximum chain depth).
    merged_ids: list[str] = Field(default_factory=list)
    # The first and last message of the range it covers (merges: of all the ranges they fold).
    first_message_id: str | None = None
    last_message_id: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    tokens: int = 0  # its own size in the context
    summarizer_tokens: int = 0  # what the summary calls to a model used, prompt and reply (0 for rules)
    # Who wrote it: "rules" (rule mode, a fallback, a merge) or the provider and model ("local: SmolLM2-135M-Instruct").
    written_by: str = ""
    trigger: str = "manual"
    usage_ratio: float = 0.0
    instructions: str | None = None
    fallback_used: bool = False
    fallback_reason: str | None = None
    redactions: int = 0
    duration_ms: float = 0.0
    status: RecordStatus = "active"
    # Saved as "retention" before the window's name, trail coverage, became the code's: old records still load.
    trail_coverage: TrailCoverage | None = Field(default=None,
                                                 validation_alias=AliasChoices("trail_coverage", "retention"))

    @model_validator(mode="after")
    def _rules_wrote_it(self) -> SummaryRecord:
        """Records saved before the writer was recorded: the rules wrote every one but a model's (left unknown)."""
        if not self.written_by and (self.mode == "rule" or self.fallback_used or self.merged_ids):
            self.written_by = "rules"
        return self

    @property
    def kind(self) -> str:
        """What it is, for display: its mode, or "fold" for a summary of summaries (its mode is its newest summary's,
        and "llm, written by rules" read as a contradiction)."""
        return "fold" if self.merged_ids else self.mode

    @property
    def writer(self) -> str:
        """Who wrote it, for display (records saved before it was recorded may not say)."""
        return self.written_by or "a model (not recorded)"

    @property
    def fallback(self) -> str:
        """'' or why the rules wrote it in the model's place: 'fell back to rules: the model took longer than 6 s,
        the summary's time limit'."""
        if not self.fallback_used:
            return ""
        return f"fell back to rules: {self.fallback_reason or 'the model could not summarize'}"

    def result(self, messages: int | None = None) -> SummaryResult:
        """What it did; `messages`: how many it stands for where that is not the ones it archived itself (a fold's
        are its summaries')."""
        return SummaryResult(len(self.covered) if messages is None else messages, 1, self.tokens_before,
                             self.tokens_after)

    def contents(self) -> str:
        """Document 003's counts after /summarize, its key points standing for the key topics: '3 key points ·
        2 files modified · 34 commands run · 5 decisions'."""
        facets = self.facets
        return " · ".join((counted(len(self.key_points), "key point"),
                           counted(len(facets.files_modified), "file") + " modified",
                           counted(sum(c.count for c in facets.commands), "command") + " run",
                           counted(len(facets.decisions), "decision")))

    def key_points_beside_text(self) -> list[str]:
        """The key points its text does not already say, in order: a digest's key points are its lines, a trail's
        its newest points, so shown under the text they said it twice."""
        said = " " + " ".join(_WORD.findall(self.text.lower())) + " "
        return [p for p in self.key_points if f" {' '.join(_WORD.findall(p.lower()))} " not in said]

    @property
    def covered_ids(self) -> list[str]:
        return [c.id for c in self.covered]

    def undone_description(self) -> str:
        """What undoing it gave back: '29 messages are back in the context', or for a fold (which archives no
        message itself) 'the 2 summaries it folded are back in the chain'."""
        folded = len(self.merged_ids)
        if not folded:
            back = len(self.covered)
            return f"{counted(back, 'message')} {'is' if back == 1 else 'are'} back in the context"
        return ("the summary it folded is back in the chain" if folded == 1 else
                f"the {folded} summaries it folded are back in the chain")


def fold_description(kinds: list[str]) -> str:
    """What a fold holds: 'fold of 3 summaries (llm, llm, rule)', its summaries' kinds oldest first."""
    return f"fold of {counted(len(kinds), 'summary')} ({', '.join(kinds)})"


def local_time(timestamp: float) -> str:
    """A time as Precis writes it for people, in local time: '2026-11-23 09:05'."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def covered_through_merges(record: SummaryRecord, by_id: Mapping[str, SummaryRecord]) -> list[str]:
    """The ids of the originals a record stands for: its own, then those of the summaries it folded, depth first.
    Without recursion: a long chat's merges nest one in the next, thousands deep."""
    ids: list[str] = []
    stack = [record]
    while stack:
        current = stack.pop()
        ids += current.covered_ids
        stack.extend(by_id[c] for c in reversed(current.merged_ids) if c in by_id)
    return ids


# A record's span: how many originals it stands for through its folds, and the places of the first and last of them
# still in the chat (None when none is).
Span = tuple[int, int | None, int | None]


def through_folds(record: SummaryRecord, by_id: Mapping[str, SummaryRecord], cache: dict[str, T],
                  combine: Callable[[SummaryRecord, list[T]], T]) -> T:
    """A figure of `record` made (`combine`) from its own and its folded records' figures, each worked out once into
    `cache`. Without recursion: a long chat's folds nest one in the next, thousands deep, and a chat reopened, its
    history or its export works them all out afresh."""
    stack = [record]
    while stack:
        current = stack[-1]
        if current.id in cache:  # reached twice before its turn came
            stack.pop()
            continue
        children = [by_id[c] for c in current.merged_ids if c in by_id]
        waiting = [child for child in children if child.id not in cache]
        if waiting:
            stack.extend(waiting)
            continue
        stack.pop()
        cache[current.id] = combine(current, [cache[child.id] for child in children])
    return cache[record.id]


def record_spans(records: Sequence[SummaryRecord], position: Mapping[str, int]) -> dict[str, Span]:
    """Each record's span, worked out once per record (gathering each fold's originals anew made the history or export
    of 3,000 folds take seconds)."""
    by_id = {r.id: r for r in records}
    spans: dict[str, Span] = {}

    def combine(record: SummaryRecord, children: list[Span]) -> Span:
        places = [position[i] for i in record.covered_ids if i in position]
        parts = [(len(record.covered_ids), min(places, default=None), max(places, default=None)), *children]
        firsts = [first for _, first, _ in parts if first is not None]
        lasts = [last for _, _, last in parts if last is not None]
        return sum(count for count, _, _ in parts), min(firsts, default=None), max(lasts, default=None)

    for record in records:
        through_folds(record, by_id, spans, combine)
    return spans
