"""The context engine: what the model sees, when to summarize, and how to undo it.

State is the full history of original messages plus the summary records. Active records form the chain (oldest
first); a message covered by an active record is archived (hidden from the prompt, never deleted) unless pinned.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..model.messages import Message, ToolCall
from ..model.records import CoveredMessage, Facets, Retention, SummaryRecord
from ..model.tokens import REPLY_PRIMING, TokenCounter
from ..summary.digest import rank_points
from ..summary.redact import redact, redact_obj
from ..summary.retention import TrailFacts, check_facts, collect_facts, union_facts
from ..summary.retention import context_text as retention_context_text
from ..summary.summarize import RuleSummarizer, Summarizer, SummaryDraft, SummaryRequest, fit_text
from ..summary.summary_block import render_artifact_trail
from ..summary.tool_output import one_line
from .policy import SummarizationPolicy
from .recall import RecallIndex, RecallSearch

log = logging.getLogger("precis.engine")

# Below this much room a summary is replaced by a marker.
MIN_SUMMARY_ROOM = 50
# Recall: matches asked of the search function, the least room worth a snippet, one snippet's share of the room.
RECALL_CANDIDATES = 24
MIN_RECALL_ROOM = 24
RECALL_SNIPPET_SHARE = 0.4
# To choose how much to summarize for the target fill, a summary is expected at this share of what it replaces
# (rule summaries of the shared transcripts and conversations measure 0.02-0.24, median about 0.12).
EXPECTED_SUMMARY_SHARE = 0.25

SYSTEM_PROMPT_ID = "system-prompt"

ItemKind = Literal["system", "summary", "recalled", "message", "tool_output", "trimmed"]
EventKind = Literal["summarized", "merged", "undone"]


class NothingToSummarize(Exception):
    pass


class NothingToUndo(Exception):
    pass


class IntegrityError(RuntimeError):
    """An archived original no longer matches its stored fingerprint."""


@dataclass(frozen=True)
class Budget:
    window: int
    reserve_output: int = 512
    summarizer_reserve: int = 0

    def __post_init__(self) -> None:
        if self.window <= 0:
            raise ValueError(f"context window must be positive, got {self.window}")
        if self.reserve_output < 0 or self.summarizer_reserve < 0:
            raise ValueError("reserved tokens cannot be negative")
        if self.available < 64:
            raise ValueError(
                f"context window {self.window} leaves {self.available} tokens after reserving "
                f"{self.reserve_output} for the reply and {self.summarizer_reserve} for the summarizer; need >= 64")

    @property
    def available(self) -> int:
        return self.window - self.reserve_output - self.summarizer_reserve


@dataclass
class ContextItem:
    kind: ItemKind
    message: Message
    source_id: str
    tokens: int


@dataclass
class Prompt:
    items: list[ContextItem]
    tokens: int
    budget: Budget

    @property
    def messages(self) -> list[Message]:
        return [item.message for item in self.items]


@dataclass
class UsageReport:
    by_kind: dict[str, int]
    total: int
    available: int
    window: int
    reserve_output: int
    ratio: float
    exact: bool
    # What no summary can remove (system prompt, session and pinned messages, the chain), as a share of the budget.
    floor_ratio: float = 0.0


@dataclass
class EngineEvent:
    kind: EventKind
    record: SummaryRecord
    reason: str
    depth: int
    tokens_before: int
    tokens_after: int
    ratio: float
    mode: str
    duration_ms: float
    fallback_used: bool
    # Records whose status this event changed besides `record` (merged children, restored children).
    affected: list[SummaryRecord] = field(default_factory=list)


def summary_message(record: SummaryRecord, covered_count: int) -> Message:
    """The message the model sees for a summary; its id is the record's."""
    header = f"[Summary {record.depth} of earlier conversation: {covered_count} messages, {record.mode} mode]"
    return Message(role="system", content=f"{header}\n{record.text}", id=record.id, created_at=record.created_at)


class ContextEngine:
    def __init__(self, budget: Budget, policy: SummarizationPolicy | None = None,
                 counter: TokenCounter | None = None, summarizer: Summarizer | None = None,
                 system_prompt: str = "", recall_search: RecallSearch | None = None):
        self.budget = budget
        # The chat's system prompt (a setting, not a message): always first, never summarized.
        self.system_prompt = system_prompt
        self.policy = policy or SummarizationPolicy()
        self.counter = counter or TokenCounter()
        self.summarizer = summarizer or RuleSummarizer()
        self.messages: list[Message] = []
        self.records: list[SummaryRecord] = []
        self._position: dict[str, int] = {}
        self._by_record: dict[str, SummaryRecord] = {}
        self._hidden_by: dict[str, str] = {}  # message id -> id of the active top-level record covering it
        self._chain: list[SummaryRecord] = []
        self._summary_messages: dict[str, Message] = {}
        self._visible_cache: list[Message] | None = None
        self._trimmed: dict[str, Message] = {}
        self._facts: dict[str, TrailFacts] = {}
        self._coverage: dict[str, list[str]] = {}
        self._first_positions: dict[str, int] = {}
        self._armed = True
        self._since_summary = 0
        self._listeners: list[Callable[[EngineEvent], None]] = []
        # Recall searches the store's index when there is one, else this in-memory index of the archived originals.
        self._recall_index = RecallIndex() if recall_search is None else None
        self._recall_search: RecallSearch = recall_search or self._recall_index.search
        self._recall_cache: tuple[tuple, list[ContextItem]] | None = None
        self._archive_generation = 0

    # ----- building and restoring -------------------------------------------------------------------------

    @classmethod
    def restore(cls, messages: list[Message], records: list[SummaryRecord], budget: Budget,
                policy: SummarizationPolicy | None = None, counter: TokenCounter | None = None,
                summarizer: Summarizer | None = None, system_prompt: str = "",
                recall_search: RecallSearch | None = None) -> ContextEngine:
        """Rebuild from persisted originals and records (in creation order); statuses say which are active."""
        engine = cls(budget, policy, counter, summarizer, system_prompt, recall_search)
        engine.messages = list(messages)
        engine._position = {m.id: i for i, m in enumerate(engine.messages)}
        engine.records = list(records)
        engine._by_record = {r.id: r for r in engine.records}
        engine._rebuild()
        for record in engine._chain:
            if record.retention is None:  # e.g. a summary imported from another tool
                engine._check_retention(record)
        last = max((engine._position.get(mid, -1) for mid in engine._hidden_by), default=-1)
        engine._since_summary = len(engine.messages) - 1 - last if engine._chain else len(engine.messages)
        return engine

    def _covered_transitively(self, record: SummaryRecord) -> list[str]:
        """Ids of the originals a record stands for, through merges (fixed once the record exists: cached)."""
        ids = self._coverage.get(record.id)
        if ids is None:
            ids = list(record.covered_ids)
            for child_id in record.merged_ids:
                child = self._by_record.get(child_id)
                if child is not None:
                    ids.extend(self._covered_transitively(child))
            self._coverage[record.id] = ids
        return ids

    def _first_position(self, record: SummaryRecord) -> int:
        """Where the record's range starts (fixed: messages are only ever added or removed at the end; cached)."""
        first = self._first_positions.get(record.id)
        if first is None:
            first = min((self._position.get(i, 0) for i in self._covered_transitively(record)), default=0)
            self._first_positions[record.id] = first
        return first

    def _rebuild(self) -> None:
        """Derive the chain and the archive map from record statuses (restore, merges and their undo)."""
        self._hidden_by = {}
        active = [r for r in self.records if r.status == "active"]
        for record in active:
            for mid in self._covered_transitively(record):
                self._hidden_by[mid] = record.id
        first_position = {r.id: self._first_position(r) for r in active}
        self._chain = sorted(active, key=lambda r: first_position[r.id])
        self._summary_messages = {}
        self._visible_cache = None
        self._archive_generation += 1
        if self._recall_index is not None:
            self._recall_index.update((m for m in self._hidden_by if m in self._position),
                                      lambda mid: self.messages[self._position[mid]].content)

    def _hide(self, record: SummaryRecord) -> None:
        """A new summary (no merge) hides the range it covers: the chain, the archive map and the visible set
        change by that range alone, so summarizing a long chat does not rescan its history each time."""
        ids = [mid for mid in self._covered_transitively(record) if mid in self._position]
        for mid in ids:
            self._hidden_by[mid] = record.id
        first = self._first_position(record)
        index = next((n for n, r in enumerate(self._chain) if self._first_position(r) > first), len(self._chain))
        self._chain.insert(index, record)
        if self._visible_cache is not None:
            self._visible_cache = [m for m in self._visible_cache if self._is_visible(m)]
        self._archive_generation += 1
        if self._recall_index is not None:
            for mid in ids:
                self._recall_index.add(mid, self.messages[self._position[mid]].content)

    def _release(self, record: SummaryRecord) -> None:
        """Undoing a summary that merged nothing brings back exactly the range it hid."""
        ids = [mid for mid in self._covered_transitively(record) if self._hidden_by.get(mid) == record.id]
        for mid in ids:
            del self._hidden_by[mid]
        self._chain.remove(record)
        self._summary_messages.pop(record.id, None)
        if self._visible_cache is not None:
            back = [self.messages[self._position[mid]] for mid in ids if mid in self._position]
            self._visible_cache = sorted(self._visible_cache + [m for m in back if self._is_visible(m)],
                                         key=lambda m: self._position[m.id])
        self._archive_generation += 1
        if self._recall_index is not None:
            for mid in ids:
                self._recall_index.remove(mid)

    # ----- reading ------------------------------------------------------------------------------------------

    def chain(self) -> list[SummaryRecord]:
        return list(self._chain)

    def archived_by(self, message_id: str) -> str | None:
        return self._hidden_by.get(message_id)

    def archived_messages(self, record_id: str) -> list[Message]:
        record = self._by_record[record_id]
        ids = set(self._covered_transitively(record))
        return [m for m in self.messages if m.id in ids]

    def _is_opening(self, message: Message) -> bool:
        """The chat's first message when it is a system message: the system prompt, never summarized. Later system
        messages (session or date markers) are conversation: summarized with their stretch, their date kept."""
        return message.role == "system" and self._position.get(message.id) == 0

    def _is_visible(self, message: Message) -> bool:
        return message.id not in self._hidden_by or message.pinned or self._is_opening(message)

    def is_archived(self, message_id: str) -> bool:
        """True if the message is replaced by a summary in the prompt (pinned and system messages never are)."""
        position = self._position.get(message_id)
        return position is not None and not self._is_visible(self.messages[position])

    def _visible(self) -> list[Message]:
        """Messages the prompt shows verbatim (cached: the hot path appends, it does not rescan the history)."""
        if self._visible_cache is None:
            self._visible_cache = [m for m in self.messages if self._is_visible(m)]
        return self._visible_cache

    def _summary_message(self, record: SummaryRecord) -> Message:
        message = self._summary_messages.get(record.id)
        if message is None:
            count = len(self._covered_transitively(record))
            message = summary_message(record, count)
            self._summary_messages[record.id] = message
        return message

    def _context_messages(self) -> list[tuple[ItemKind, Message, str]]:
        """(kind, message, source id) of everything the prompt holds before trimming, in order."""
        visible = self._visible()
        out: list[tuple[ItemKind, Message, str]] = []
        if self.system_prompt.strip():
            prompt = Message(role="system", content=self.system_prompt, id=SYSTEM_PROMPT_ID, created_at=0.0)
            out.append(("system", prompt, SYSTEM_PROMPT_ID))
        out += [("system", m, m.id) for m in visible if m.role == "system"]
        out += [("summary", self._summary_message(r), r.id) for r in self._chain]
        out += [("tool_output" if m.role == "tool" else "message", m, m.id) for m in visible if m.role != "system"]
        return out

    def _untrimmed_items(self) -> list[ContextItem]:
        tokens = self.counter.raw_message_tokens
        return [ContextItem(kind, m, source, tokens(m)) for kind, m, source in self._context_messages()]

    def usage(self, recall: bool = True) -> UsageReport:
        """Use of the window by kind, before any trimming. The policy acts on it without recall: recalled text
        only fills room that is free, so it never makes a summary due."""
        by_kind = {"system": 0, "summaries": 0, "recalled": 0, "messages": 0, "tool_outputs": 0}
        names = {"system": "system", "summary": "summaries", "recalled": "recalled", "message": "messages",
                 "tool_output": "tool_outputs"}
        raw = floor = REPLY_PRIMING
        items = self._untrimmed_items()
        if recall:
            items = self._with_recall(items)
        for item in items:
            by_kind[names[item.kind]] += item.tokens
            raw += item.tokens
            if item.kind in ("system", "summary") or item.message.pinned:
                floor += item.tokens
        by_kind = {k: self.counter.calibrated(v) for k, v in by_kind.items()}
        total = self.counter.calibrated(raw)
        available = self.budget.available
        return UsageReport(by_kind=by_kind, total=total, available=available, window=self.budget.window,
                           reserve_output=self.budget.reserve_output, ratio=total / available,
                           exact=self.counter.is_exact, floor_ratio=self.counter.calibrated(floor) / available)

    # ----- the prompt ---------------------------------------------------------------------------------------

    def assemble(self, recall: bool = True) -> Prompt:
        """What is sent to the model. Never exceeds the budget.

        With `recall`, archived originals matching the pending user message fill free room up to the recall
        budget. Order of sacrifice when over budget (then nothing is recalled): old tool outputs shrink to their
        one-line summary (oldest first, outside the recent tail); then any tool output; then the oldest
        unprotected messages are left out (a tool call together with its result); last, the longest remaining
        texts are cut.
        """
        items = self._untrimmed_items()
        if recall:
            items = self._with_recall(items)
        available = self.budget.available
        total = REPLY_PRIMING + sum(i.tokens for i in items)
        if self.counter.calibrated(total) <= available:
            return Prompt(items, self.counter.calibrated(total), self.budget)

        def over() -> bool:
            return self.counter.calibrated(total) > available

        for tail in (self.policy.keep_recent, 0):
            total = self._shrink_tool_outputs(items, total, tail)
        if over():
            total = self._drop_oldest(items, total)
        if over():
            total = self._cut_longest(items, total)
        return Prompt(items, self.counter.calibrated(total), self.budget)

    def _with_recall(self, items: list[ContextItem]) -> list[ContextItem]:
        """The items with recalled snippets after the summaries, in the room under both the recall budget and
        the budget itself (so recall never pushes a prompt over)."""
        policy = self.policy
        if not (policy.recall_enabled and self._hidden_by and self.messages and self.messages[-1].role == "user"):
            return items
        total = REPLY_PRIMING + sum(i.tokens for i in items)
        available = self.budget.available
        room = int(min(available * policy.recall_ratio, available - self.counter.calibrated(total))
                   / self.counter.factor)
        if room < MIN_RECALL_ROOM:
            return items
        pending = self.messages[-1]
        key = (pending.id, pending.content, self._archive_generation, room)
        if self._recall_cache is None or self._recall_cache[0] != key:
            self._recall_cache = (key, self._recall(pending.content, room))
        recalled = [ContextItem(i.kind, i.message, i.source_id, i.tokens) for i in self._recall_cache[1]]
        position = next((n for n, i in enumerate(items) if i.kind not in ("system", "summary")), len(items))
        return items[:position] + recalled + items[position:]

    def _recall(self, query: str, room: int) -> list[ContextItem]:
        """The best matching archived originals as snippets (speaker, date, message id), each with the message that
        answered it (in conversation the fact is often in the reply), within `room` tokens, in chat order."""
        snippet_cap = max(int(room * RECALL_SNIPPET_SHARE), MIN_RECALL_ROOM)
        chosen: dict[int, ContextItem] = {}
        for message_id in self._recall_search(query, RECALL_CANDIDATES):
            position = self._position.get(message_id)
            if position is None or position in chosen or not self.is_archived(message_id):
                continue
            group = [position]
            reply = position + 1
            if (reply < len(self.messages) and reply not in chosen and self.messages[reply].role != "system"
                    and self.is_archived(self.messages[reply].id)):
                group.append(reply)
            for member in group:
                item = self._recall_item(member, min(snippet_cap, room))
                if item is None:
                    return [chosen[p] for p in sorted(chosen)]
                chosen[member] = item
                room -= item.tokens
        return [chosen[p] for p in sorted(chosen)]

    def _recall_item(self, position: int, room: int) -> ContextItem | None:
        """One archived original as a recalled snippet of at most `room` tokens, or None if there is too little."""
        original = self.messages[position]
        header = f"[Recalled from the archive: {original.name or original.role}, {self._date_of(position)}, " \
                 f"message {original.id[:8]}]"
        message = Message(role="system", content=header, id=f"{original.id}~recalled", created_at=original.created_at)
        text_room = room - self.counter.raw_message_tokens(message) - 1
        if text_room < MIN_RECALL_ROOM // 2:
            return None
        message = message.with_changes(content=f"{header}\n{fit_text(original.content, text_room, self.counter)}")
        tokens = self.counter.raw_message_tokens(message)
        return ContextItem("recalled", message, original.id, tokens) if tokens <= room else None

    def _date_of(self, position: int) -> str:
        """The session header the message falls under (a short system message with a date or number in it), else
        its own timestamp."""
        for earlier in range(position - 1, max(position - 400, 0) - 1, -1):
            if self.messages[earlier].role != "system":
                continue
            marker = self.messages[earlier].content.strip()
            if len(marker) <= 120 and any(c.isdigit() for c in marker):
                return marker.splitlines()[0]
        created = self.messages[position].created_at
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(created)) if created > 0 else "undated"

    def recalled(self) -> list[ContextItem]:
        """What recall puts into the prompt for the pending user message (for the inspector)."""
        return [i for i in self.assemble().items if i.kind == "recalled"]

    def _shrink_tool_outputs(self, items: list[ContextItem], total: int, tail: int) -> int:
        """Shrink tool outputs to their one-line summaries, oldest first, until the prompt fits, sparing the
        last `tail` messages; returns the new total."""
        conversation = [i for i in items if i.kind in ("message", "tool_output")]
        tail_ids = {i.source_id for i in conversation[len(conversation) - tail:]} if tail else set()
        calls = {c.id: c for i in conversation for c in i.message.tool_calls}
        for item in items:
            if self.counter.calibrated(total) <= self.budget.available:
                break
            if item.kind != "tool_output" or item.message.pinned or item.source_id in tail_ids:
                continue
            trimmed = self._trimmed_message(item.message, calls.get(item.message.tool_call_id or ""))
            new_tokens = self.counter.raw_message_tokens(trimmed)
            if new_tokens < item.tokens:
                total += new_tokens - item.tokens
                item.kind, item.message, item.tokens = "trimmed", trimmed, new_tokens
        return total

    def _fits_by_shrinking_old_outputs(self) -> bool:
        """Whether the prompt fits once tool outputs before the last min_recent messages shrink to one line (the
        cheapest stage, which assemble() applies first): until then an overflow needs no summary."""
        items = self._untrimmed_items()
        total = self._shrink_tool_outputs(items, REPLY_PRIMING + sum(i.tokens for i in items), self.policy.min_recent)
        return self.counter.calibrated(total) <= self.budget.available

    def _trimmed_message(self, message: Message, call) -> Message:
        cached = self._trimmed.get(message.id)
        if cached is None:
            line = one_line(call, message, preserve_error_details=self.policy.preserve_error_details)
            cached = message.with_changes(id=f"{message.id}~trimmed", content=line)
            self._trimmed[message.id] = cached
        return cached

    def _drop_oldest(self, items: list[ContextItem], total: int) -> int:
        """Leave out the oldest unprotected messages, each tool call with its results, until the prompt fits."""
        available = self.budget.available
        conversation = [i for i in items if i.kind in ("message", "tool_output", "trimmed")]
        droppable = [i for i in conversation[:max(len(conversation) - self.policy.min_recent, 0)]
                     if not i.message.pinned]
        if not droppable:
            return total
        results_of: dict[str, list[ContextItem]] = defaultdict(list)
        for item in conversation:
            if item.message.tool_call_id:
                results_of[item.message.tool_call_id].append(item)
        note = Message(role="system", content="[earlier messages left out to fit the context window]",
                       id="left-out-marker")
        note_tokens = self.counter.raw_message_tokens(note)
        dropped: set[int] = set()
        for item in droppable:
            if self.counter.calibrated(total + note_tokens) <= available:
                break
            # A result never appears without its call, so a call leaves with all its results.
            group = [item, *(r for call in item.message.tool_calls for r in results_of[call.id])]
            for member in group:
                if id(member) not in dropped:
                    dropped.add(id(member))
                    total -= member.tokens
        position = items.index(droppable[0])
        items[:] = [i for i in items if id(i) not in dropped]
        items.insert(position, ContextItem("trimmed", note, note.id, note_tokens))
        return total + note_tokens

    def _cut_longest(self, items: list[ContextItem], total: int) -> int:
        """Last resort: cut the longest texts until the prompt fits.

        The newest message is what the model answers, so it is cut last, but a paste larger than half the budget
        first gives up its excess: otherwise it would empty every summary before losing a line itself.
        """
        available = self.budget.available
        newest = items[-1]
        half = available // 2
        if newest.tokens > half:
            total = self._cut(newest, min(newest.tokens - half, self.counter.calibrated(total) - available), total)
        for item in sorted(items[:-1], key=lambda i: -i.tokens) + [newest]:
            total = self._cut(item, self.counter.calibrated(total) - available, total)
        return total

    def _cut(self, item: ContextItem, excess: int, total: int) -> int:
        """Shrink one item by about `excess` calibrated tokens; returns the new prompt total."""
        if excess <= 0:
            return total
        raw_excess = int(excess / self.counter.factor) + 1
        cut = shrink_message(item.message, item.tokens - raw_excess, self.counter)
        new_tokens = self.counter.raw_message_tokens(cut)
        if new_tokens < item.tokens:
            total += new_tokens - item.tokens
            item.message, item.tokens = cut, new_tokens
            if item.kind in ("tool_output", "message"):
                item.kind = "trimmed"
        return total

    # ----- changing the conversation ------------------------------------------------------------------------

    def append(self, message: Message, *, auto: bool = True) -> SummaryRecord | None:
        """Add a message; with `auto`, summarize if the policy says so and return the new record."""
        if message.id in self._position:
            raise ValueError(f"message {message.id} is already in this conversation")
        self._position[message.id] = len(self.messages)
        self.messages.append(message)
        if self._visible_cache is not None:
            self._visible_cache.append(message)
        self._since_summary += 1
        return self.maybe_summarize() if auto else None

    def replace_message(self, message: Message) -> None:
        """Same id, new content (streamed text, edits, pin). Archived originals cannot change."""
        position = self._position.get(message.id)
        if position is None:
            raise KeyError(f"no message {message.id} in this conversation")
        if message.id in self._hidden_by and message.sha256() != self.messages[position].sha256():
            raise ValueError("an archived message cannot be edited; undo the summary first")
        self.messages[position] = message
        self._trimmed.pop(message.id, None)
        self._visible_cache = None

    def set_pinned(self, message_id: str, pinned: bool) -> None:
        position = self._position[message_id]
        self.messages[position] = self.messages[position].with_changes(pinned=pinned)
        self._visible_cache = None

    def remove_last(self, message_id: str) -> Message:
        """Remove the newest message (edit-and-resend, regenerate). Older ones are never deleted."""
        if not self.messages or self.messages[-1].id != message_id:
            raise ValueError("only the newest message can be removed")
        if message_id in self._hidden_by:
            raise ValueError("an archived message cannot be removed")
        message = self.messages.pop()
        del self._position[message_id]
        self._visible_cache = None
        self.counter.forget(message_id)
        self._since_summary = max(self._since_summary - 1, 0)
        return message

    # ----- policy -------------------------------------------------------------------------------------------

    def summary_due(self) -> str | None:
        """Why an automatic summary is due now, or None. Only a question: maybe_summarize moves the hysteresis."""
        return self._due(self.usage(recall=False).ratio)[0]

    def _due(self, ratio: float) -> tuple[str | None, bool]:
        """(why a summary is due at this usage ratio, or None; whether the policy is armed once it is seen)."""
        policy = self.policy
        if not policy.enabled:
            return None, self._armed
        armed = self._armed or ratio < policy.reset_ratio or self._since_summary >= policy.rearm_messages
        if ratio >= 1.0 and not self._fits_by_shrinking_old_outputs():
            # Over the budget the tail may shrink to min_recent, so fewer messages still leave something to take.
            return ("overflow" if self._candidates(policy.min_recent) else None), armed
        if ratio < policy.trigger_ratio or not armed or not self._candidates(policy.keep_recent):
            return None, armed
        if len(self._visible()) < policy.min_messages or self._since_summary < policy.cooldown_messages:
            return None, armed
        return "threshold", armed

    def maybe_summarize(self) -> SummaryRecord | None:
        reason, self._armed = self._due(self.usage(recall=False).ratio)
        if reason is None:
            return None
        record = self._summarize(reason)
        # One more pass when the summary did not get usage under the trigger and there is still something to take.
        if self.usage(recall=False).ratio >= self.policy.trigger_ratio and self._candidates(self._target_keep()):
            record = self._summarize("second pass")
        return record

    # ----- summarizing --------------------------------------------------------------------------------------

    def _candidates(self, keep: int, up_to: str | None = None) -> list[Message]:
        """Unprotected visible messages to summarize, leaving `keep` recent ones, never splitting a tool pair."""
        conversation = [m for m in self._visible() if not self._is_opening(m)]
        if up_to is not None:
            if up_to not in self._position:
                raise KeyError(f"no message {up_to} in this conversation")
            cut = next((n + 1 for n, m in enumerate(conversation) if m.id == up_to), 0)
        else:
            cut = max(len(conversation) - keep, 0)
        # Move the cut earlier while it would separate a tool call from its result.
        while 0 < cut < len(conversation):
            head_calls = {c.id for m in conversation[:cut] for c in m.tool_calls}
            if any(m.tool_call_id in head_calls for m in conversation[cut:] if m.role == "tool"):
                cut -= 1
            else:
                break
        return [m for m in conversation[:cut] if not m.pinned]

    def chain_room(self, leaving: int = 0) -> int:
        """Tokens the summaries may still take together, if the oldest `leaving` summaries of the chain were folded
        away: the chain's share of the budget, and never more than half the room that the system prompt and pinned
        messages leave under the trigger (else in a small window the chain itself keeps the prompt overflowing)."""
        fixed = REPLY_PRIMING + sum(i.tokens for i in self._untrimmed_items()
                                    if i.kind == "system" or (i.kind != "summary" and i.message.pinned))
        available = self.budget.available
        share = int(min(available * self.policy.chain_share, (available * self.policy.trigger_ratio - fixed) / 2))
        return share - sum(self.counter.raw_message_tokens(self._summary_message(r)) for r in self._chain[leaving:])

    def summary_cap(self) -> int:
        """A summary's cap grows with the room the chain has left, up to max_summary_tokens."""
        return max(min(self.policy.max_summary_tokens, self.chain_room()), 0)

    def _target_keep(self) -> int:
        """The most recent messages that can stay verbatim while the summary of the rest brings usage down to the
        target fill: keep_recent or more, fewer (down to min_recent) only when the tail alone is above the target."""
        conversation = [m for m in self._visible() if m.role != "system"]
        target = self.policy.target_ratio * self.budget.available
        tokens = {i.source_id: i.tokens for i in self._untrimmed_items()}
        total = REPLY_PRIMING + sum(tokens.values())
        cap = self.summary_cap()

        def reaches_target(keep: int) -> bool:
            taken = sum(tokens.get(m.id, 0) for m in self._candidates(keep))
            return self.counter.calibrated(total - taken + min(cap, int(taken * EXPECTED_SUMMARY_SHARE))) <= target

        low, high = self.policy.keep_recent, max(len(conversation) - 1, self.policy.keep_recent)
        if not reaches_target(low):
            # The recent tail alone is above the target (large tool outputs in a small window): shrink it toward
            # min_recent, or the next message overflows again and the chain grows two messages at a time.
            low, high = self.policy.min_recent, self.policy.keep_recent
            if not reaches_target(low):
                return low
        while low < high:  # the largest keep that still reaches the target (fewer kept only lowers usage)
            middle = (low + high + 1) // 2
            if reaches_target(middle):
                low = middle
            else:
                high = middle - 1
        return low

    def _tail_keep(self) -> int:
        """Keep the recent tail verbatim, shrinking it toward min_recent while the result would not fit."""
        keep = self.policy.keep_recent
        cap = self.summary_cap()
        items = self._untrimmed_items()
        fixed = REPLY_PRIMING + sum(i.tokens for i in items if i.kind in ("system", "summary"))
        conversation = [i for i in items if i.kind not in ("system", "summary")]
        while keep > self.policy.min_recent:
            candidates = {m.id for m in self._candidates(keep)}
            after = fixed + cap + sum(i.tokens for i in conversation if i.source_id not in candidates)
            if self.counter.calibrated(after) <= self.budget.available:
                break
            keep -= 1
        return keep

    def can_summarize(self) -> bool:
        """Whether summarize_now() has anything to take (unpinned messages older than the tail it keeps)."""
        return bool(self._candidates(self._tail_keep()))

    def summarize_now(self, instructions: str | None = None, up_to: str | None = None) -> SummaryRecord:
        """Manual summary; instructions are added to (not replacing) the default prompt."""
        return self._summarize("manual", instructions=instructions, up_to=up_to)

    def _summarize(self, reason: str, instructions: str | None = None, up_to: str | None = None) -> SummaryRecord:
        started = time.perf_counter()
        if up_to is not None:
            keep = self.policy.keep_recent
        else:
            keep = self._tail_keep() if reason == "manual" else self._target_keep()
        candidates = self._candidates(keep, up_to)
        if not candidates:
            raise NothingToSummarize("nothing to summarize: only protected or recent messages are in the window")
        before = self.usage(recall=False)
        if len(self._chain) >= self.policy.max_depth:
            self._merge_oldest(len(self._chain) - self.policy.max_depth + 2)
        elif len(self._chain) > 1 and (self.summary_cap() < MIN_SUMMARY_ROOM * 4
                                       or before.floor_ratio >= self.policy.trigger_ratio):
            # The chain has used its share, or what no summary removes sits above the trigger: fold the chain into
            # one summary rather than summarizing a couple of messages at a time.
            self._merge_oldest(len(self._chain))
        extra = "\n".join(p for p in (self.policy.extra_instructions, instructions or "") if p) or None
        cap = self.summary_cap()
        if cap < MIN_SUMMARY_ROOM:
            draft = SummaryDraft(text=f"[{len(candidates)} earlier messages archived; no room for a summary]",
                                 key_points=[], facets=Facets(), mode=self.summarizer.mode)
        else:
            draft = self.summarizer.summarize(SummaryRequest(
                messages=candidates, max_tokens=cap, counter=self.counter, instructions=extra,
                preserve_error_details=self.policy.preserve_error_details,
                abort_on_failure=self.policy.abort_on_failure))
        text, n_text = redact(draft.text)
        key_points, n_points = redact_obj(draft.key_points)
        facets_dump, n_facets = redact_obj(draft.facets.model_dump())
        # Secrets found in the originals: the summarizer may already have dropped them, the count still tells.
        in_originals = sum(redact(m.content)[1] + redact_obj([c.arguments for c in m.tool_calls])[1]
                           for m in candidates)
        parent = self._chain[-1].id if self._chain else None
        record = SummaryRecord(
            depth=len(self._chain) + 1, parent_id=parent, mode=draft.mode,
            text=fit_text(text, max(cap, 1), self.counter), key_points=key_points,
            facets=Facets.model_validate(facets_dump),
            covered=[CoveredMessage(id=m.id, sha256=m.sha256()) for m in candidates],
            first_message_id=candidates[0].id, last_message_id=candidates[-1].id,
            summarizer_tokens=draft.summarizer_tokens, tokens_before=before.total, trigger=reason, usage_ratio=round(before.ratio, 4),
            instructions=instructions, fallback_used=draft.fallback_used, fallback_reason=draft.fallback_reason,
            redactions=max(in_originals, n_text + n_points + n_facets))
        record.tokens = self.counter.count_text(record.text)
        self._add_record(record)
        after = self.usage(recall=False)
        record.tokens_after = after.total
        record.duration_ms = round((time.perf_counter() - started) * 1000, 2)
        self._check_retention(record)
        self._armed = after.ratio < self.policy.reset_ratio
        self._since_summary = 0
        log.info("summarized %d messages (%s): %d -> %d tokens, mode %s%s", len(candidates), reason,
                 record.tokens_before, record.tokens_after, record.mode,
                 " (fallback: rules)" if record.fallback_used else "")
        self._emit(EngineEvent("summarized", record, reason, record.depth, record.tokens_before,
                               record.tokens_after, before.ratio, record.mode, record.duration_ms,
                               record.fallback_used))
        return record

    def _add_record(self, record: SummaryRecord) -> None:
        self.records.append(record)
        self._by_record[record.id] = record
        if record.merged_ids:
            self._rebuild()
        else:
            self._hide(record)

    def _facts_of(self, record: SummaryRecord) -> TrailFacts:
        """Facts of the originals a record replaced; a merge reuses its children's, so no message is re-read."""
        facts = self._facts.get(record.id)
        if facts is None:
            if record.merged_ids:
                children = [self._by_record[c] for c in record.merged_ids if c in self._by_record]
                facts = union_facts([*map(self._facts_of, children),
                                     collect_facts(self._messages_by_ids(record.covered_ids))])
            else:
                facts = collect_facts(self._messages_by_ids(record.covered_ids))
            self._facts[record.id] = facts
        return facts

    def _messages_by_ids(self, ids: list[str]) -> list[Message]:
        return [self.messages[self._position[i]] for i in ids if i in self._position]

    def _check_retention(self, record: SummaryRecord) -> None:
        """Which facts of the originals a record replaced are still visible to the model (secrets redacted)."""
        retention = check_facts(self._facts_of(record), self.context_text())
        record.retention = Retention.model_validate(redact_obj(retention.model_dump())[0])

    def _merge_oldest(self, count: int) -> SummaryRecord:
        """At the maximum depth, fold the oldest summaries into one instead of refusing: the chat never stops."""
        started = time.perf_counter()
        before = self.usage(recall=False)
        children = self._chain[:count]
        facets = merge_facets([c.facets for c in children])
        key_points = list(dict.fromkeys(p for c in children for p in c.key_points))[-30:]
        # It follows what the oldest of them followed, never a newer summary.
        record = SummaryRecord(
            depth=1, parent_id=children[0].parent_id, mode=children[-1].mode,
            first_message_id=children[0].first_message_id, last_message_id=children[-1].last_message_id,
            text=self._merged_text(children, facets, key_points), key_points=key_points, facets=facets,
            merged_ids=[c.id for c in children], tokens_before=before.total, trigger="merge at maximum depth",
            usage_ratio=round(before.ratio, 4), redactions=sum(c.redactions for c in children))
        record.tokens = self.counter.count_text(record.text)
        folded = {c.id for c in children}
        for child in children:
            child.status = "merged"
        for later in self._chain[count:]:
            if later.parent_id in folded:
                later.parent_id = record.id
        self._add_record(record)
        self._check_retention(record)
        after = self.usage(recall=False)
        record.tokens_after = after.total
        record.duration_ms = round((time.perf_counter() - started) * 1000, 2)
        # Depth is the position in the chain; the merged record now heads it.
        for position, active in enumerate(self._chain, start=1):
            active.depth = position
        self._summary_messages = {}
        self._emit(EngineEvent("merged", record, record.trigger, record.depth, before.total, after.total,
                               before.ratio, record.mode, record.duration_ms, False, affected=children))
        return record

    def _merged_text(self, children: list[SummaryRecord], facets: Facets, key_points: list[str]) -> str:
        """One text for merged summaries, rebuilt from their facts rather than cut from the end of their texts:
        the artifact trail and the user's requests get most of the room, then the newest key points. It takes at
        most half the room the chain has without them, so the chain keeps to its share with room to grow."""
        cap = max(min(self.policy.max_summary_tokens, self.chain_room(len(children)) // 2), MIN_SUMMARY_ROOM)
        count = self.counter.count_text
        trail = render_artifact_trail(facets, cap * 6 // 10, count)
        points = key_points
        covered = sum(len(self._covered_transitively(c)) for c in children)
        conversation = any(c.text.startswith(("Conversation digest", "Merged conversation")) for c in children)
        header = f"Merged {'conversation digest' if conversation else 'summary'} of {covered} earlier messages."
        room = cap - count(header) - count(trail) - 8
        kept: list[str] = []
        if conversation:  # the points are digest lines: keep those carrying the most facts, from every stretch
            kept = [f"- {p}" for p in rank_points(points, room, count)]
        for point in [] if conversation else reversed(points):  # the newest points matter most for what comes next
            line = f"- {point}"
            if count(line) + 1 > room:
                break
            kept.insert(0, line)
            room -= count(line) + 1
        body = "\n".join(p for p in (header, "Key points:\n" + "\n".join(kept) if kept else "", trail) if p)
        return fit_text(body, max(cap, 1), self.counter)

    def undo_last(self) -> SummaryRecord:
        """Undo the latest summarization (or merge): its originals come back exactly, the chain returns to its parent."""
        active = [r for r in self.records if r.status == "active"]
        if not active:
            raise NothingToUndo("there is no summary to undo")
        record = active[-1]
        started = time.perf_counter()
        before = self.usage(recall=False)
        for covered in record.covered:
            position = self._position.get(covered.id)
            original = None if position is None else self.messages[position]
            if original is None or original.sha256() != covered.sha256:
                raise IntegrityError(f"archived message {covered.id} does not match its fingerprint; undo refused")
        record.status = "undone"
        children = [self._by_record[c] for c in record.merged_ids if c in self._by_record]
        for child in children:
            child.status = "active"
        for later in self.records:  # what followed the merge follows its newest child again
            if children and later.parent_id == record.id:
                later.parent_id = children[-1].id
        if children:
            self._rebuild()
        else:
            self._release(record)
        for position, chained in enumerate(self._chain, start=1):
            chained.depth = position
        after = self.usage(recall=False)
        self._armed = after.ratio < self.policy.reset_ratio
        duration = round((time.perf_counter() - started) * 1000, 2)
        self._emit(EngineEvent("undone", record, "undo", record.depth, before.total, after.total, before.ratio,
                               record.mode, duration, record.fallback_used, affected=children))
        return record

    def context_text(self) -> str:
        """Everything the model sees, as one text (for retention checks)."""
        return retention_context_text(message for _, message, _ in self._context_messages())

    # ----- events -------------------------------------------------------------------------------------------

    def subscribe(self, callback: Callable[[EngineEvent], None]) -> Callable[[], None]:
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def _emit(self, event: EngineEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken listener must not break the chat
                log.exception("engine event listener failed")


def merge_facets(all_facets: list[Facets]) -> Facets:
    """Union of facets, earlier ones first: merging keeps what previous summaries recorded."""
    merged: dict[str, dict[str, dict | str]] = {}
    for facets in all_facets:
        for name, values in facets.model_dump().items():
            bucket = merged.setdefault(name, {})
            for value in values:
                if name == "commands":  # the same command run in both stretches: one entry, counts added
                    key = json.dumps([value["command"], value["exit_code"]])
                    if key in bucket:
                        bucket[key]["count"] += value["count"]
                        continue
                else:
                    key = json.dumps(value, sort_keys=True)
                bucket.setdefault(key, value)
    return Facets.model_validate({name: list(bucket.values()) for name, bucket in merged.items()})


def shrink_message(message: Message, target_tokens: int, counter: TokenCounter) -> Message:
    """A copy of the message cut to about target_tokens (long tool arguments first, then text), with a new id."""
    calls = message.tool_calls
    if calls and counter.raw_message_tokens(message) - counter.count_text(message.content) > target_tokens // 2:
        calls = tuple(ToolCall(id=c.id, name=c.name, arguments={"truncated": json.dumps(c.arguments)[:100]})
                      for c in calls)
    shrunk = message.with_changes(id=f"{message.id}~cut", content="", tool_calls=calls)
    room = max(target_tokens - counter.raw_message_tokens(shrunk), 0)
    return shrunk.with_changes(content=fit_text(message.content, room, counter))
