"""Prompt assembly: what is sent to the model, trimmed in a fixed order of sacrifice so it never exceeds the budget."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass

from ..model.messages import Message, ToolCall
from ..model.tokens import MESSAGE_OVERHEAD, TokenCounter
from ..summary.summarizers import fit_text
from ..summary.tool_output import one_line
from .recalling import Recaller
from .usage import SYSTEM_PROMPT_ID, Budget, ContextItem, ContextSetup, UsageMeter


@dataclass
class _Trim:
    """An old tool output cut to its one line, with the line's token counts by tokenizer (TokenCounter.name)."""

    content_hash: int  # of the output it was cut from (not the text: that would keep every opened chat's outputs)
    message: Message
    tokens: dict[str, int]


# Kept for the process's life, not an engine's: opening a chat builds a new engine, and cutting every old tool output
# of a long chat again, then counting each line with the model's tokenizer, was most of opening it again (5-9 s at
# 100,000 messages). Emptied when it reaches TRIMS_KEPT (a few hundred bytes each).
_TRIMS: dict[tuple[str, bool], _Trim] = {}
TRIMS_KEPT = 200_000


@dataclass
class Prompt:
    items: list[ContextItem]
    tokens: int
    budget: Budget

    @property
    def messages(self) -> list[Message]:
        return [item.message for item in self.items]


class PromptAssembler:
    def __init__(self, setup: ContextSetup, meter: UsageMeter, recaller: Recaller):
        self.setup = setup
        self.meter = meter
        self.recaller = recaller

    def assemble(self, recall: bool = True) -> Prompt:
        """What is sent to the model. Never exceeds the budget.

        With `recall`, archived originals matching the pending user message fill free room up to the recall
        budget. Order of sacrifice when over budget (then nothing is recalled): old tool outputs shrink to their
        one-line summary (oldest first, outside the recent tail); then any tool output; then the oldest
        unprotected messages are left out (a tool call together with its results, a session marker with the
        messages it dates); then the longest remaining texts are cut; last, if even that is over (hundreds of
        pinned messages or markers, each at its few tokens of overhead), the oldest items are left out, but the
        system prompt and the newest message.
        """
        counter, budget = self.setup.counter, self.setup.budget
        items, left_out_at = self._items()
        if recall:
            items = self.recaller.with_recall(items)
        available = budget.available
        total = self.setup.overhead() + sum(i.tokens for i in items)
        if counter.calibrated(total) <= available:
            return Prompt(items, counter.calibrated(total), budget)

        def over() -> bool:
            return counter.calibrated(total) > available

        for tail in (self.setup.policy.keep_recent, 0):
            total = self._shrink_tool_outputs(items, total, tail)
        if over() or left_out_at is not None:
            total = self._drop_oldest(items, total, left_out_at)
        if over():
            total = self._cut_longest(items, total)
        if over():
            total = self._leave_out_any(items, total)
        return Prompt(items, counter.calibrated(total), budget)

    def _items(self) -> tuple[list[ContextItem], int | None]:
        """The prompt's items before trimming, and None; or, in a chat far longer than the budget, the items without
        the oldest messages that trimming would leave out whatever it did, and where the note saying so goes.

        What trimming does is fixed then: if the newest messages alone, at the fewest tokens a message can take,
        are over the budget, no shrinking makes the prompt fit and leaving out messages, oldest first, goes past
        every one before them. So the same prompt is assembled from those newest ones, with the protected messages
        before them (pinned, session markers) and without the others, whatever the chat's length."""
        policy, counter = self.setup.policy, self.setup.counter
        conversation = self.meter.conversation()
        newest = math.ceil(self.setup.budget.available / (MESSAGE_OVERHEAD * counter.factor)) + 1
        # The recent tail (which trimming spares) is among them too.
        tail = max(policy.keep_recent, policy.min_recent)
        cut = len(conversation) - newest - tail
        if cut <= 0 or sum(m.role != "system" for m in conversation[cut:]) < tail:
            return self.meter.items(), None
        while True:  # never between a tool call and its results (they leave together)
            kept_calls = {c.id for m in conversation[cut:] for c in m.tool_calls}
            answered = {m.tool_call_id for m in conversation[cut:] if m.tool_call_id and m.tool_call_id not in kept_calls}
            earlier = next((n for n, m in enumerate(conversation[:cut]) if any(c.id in answered for c in m.tool_calls)),
                           None) if answered else None
            if earlier is None:
                break
            cut = earlier
        older = conversation[:cut]
        first = next((n for n, m in enumerate(older) if not m.pinned and m.role != "system"), None)
        if first is None:  # nothing there can be left out
            return self.meter.items(), None
        # A call left out takes its results, even pinned ones. A session marker stays only while it dates a message
        # that does (or the messages kept after the cut): as _drop_oldest leaves them, so the prompts are the same.
        leaving = {c.id for m in older if not m.pinned for c in m.tool_calls}
        protected: list[tuple[int, Message]] = []
        waiting: tuple[int, Message] | None = None
        for n, message in enumerate(older):
            if message.role == "system" and not message.pinned:
                waiting = (n, message)
            elif message.pinned and message.tool_call_id not in leaving:
                protected += [waiting, (n, message)] if waiting is not None else [(n, message)]
                waiting = None
        if waiting is not None:
            protected.append(waiting)
        head = len(self.meter.head())
        return (self.meter.items([m for _, m in protected] + conversation[cut:]),
                head + sum(n < first for n, _ in protected))

    def fits_by_shrinking_old_outputs(self) -> bool:
        """Whether the prompt fits once tool outputs before the last min_recent messages shrink to one line (the
        cheapest stage, which assemble() applies first): until then an overflow needs no summary."""
        total = self.meter.raw_total()
        if self.meter.archive.visible_tally().by_kind["tool_output"]:  # else there is nothing to shrink
            items = self.meter.items()
            total = self._shrink_tool_outputs(items, total, self.setup.policy.min_recent)
        return self.setup.counter.calibrated(total) <= self.setup.budget.available

    def beyond_any_room(self) -> int:
        """Raw tokens of recent tool outputs that no summary can make room for. A tool output larger than what no
        summary removes leaves of the budget is sent as its one line whatever is summarized (assemble() shrinks
        outputs before it cuts anything): a summary is neither due for it nor sized to fit it (a 151,000-character
        final diff at 32k archived 102 of 104 messages and was sent as its one line anyway). A long paste is not
        one: it gets whatever room is left, and a summary gives it more."""
        counter = self.setup.counter
        room = int(self.setup.budget.available / counter.factor) - self.meter.fixed_raw()
        archive = self.meter.archive
        tail = [m for m in archive.visible()[-max(self.setup.policy.keep_recent, 1):] if not archive.is_opening(m)]
        calls = {c.id: c for m in tail for c in m.tool_calls}
        beyond = 0
        for message in tail:
            tokens = counter.raw_message_tokens(message) if message.role == "tool" else 0
            if tokens > room:
                beyond += max(tokens - self._trimmed(message, calls.get(message.tool_call_id or ""))[1], 0)
        return beyond

    def _shrink_tool_outputs(self, items: list[ContextItem], total: int, tail: int) -> int:
        """Shrink tool outputs to their one-line summaries, oldest first, until the prompt fits, sparing the
        last `tail` messages; returns the new total."""
        counter = self.setup.counter
        outputs = [i for i in items if i.kind == "tool_output" and not i.message.pinned]
        if not outputs:  # nothing to shrink: a long chat of plain messages is not walked again
            return total
        conversation = [i for i in items if i.kind in ("message", "tool_output")]
        tail_ids = {i.source_id for i in conversation[len(conversation) - tail:]} if tail else set()
        calls = {c.id: c for i in conversation for c in i.message.tool_calls}
        for item in outputs:
            if counter.calibrated(total) <= self.setup.budget.available:
                break
            if item.source_id in tail_ids:
                continue
            trimmed, new_tokens = self._trimmed(item.message, calls.get(item.message.tool_call_id or ""))
            if new_tokens < item.tokens:
                total += new_tokens - item.tokens
                item.kind, item.message, item.tokens = "trimmed", trimmed, new_tokens
        return total

    def _trimmed(self, message: Message, call: ToolCall | None) -> tuple[Message, int]:
        """The tool output `message` cut to its one line, and the line's raw tokens."""
        key = (message.id, self.setup.policy.preserve_error_details)
        trim = _TRIMS.get(key)
        if trim is None or trim.content_hash != hash(message.content):
            line = one_line(call, message, preserve_error_details=key[1])
            trim = _Trim(hash(message.content), message.with_changes(id=f"{message.id}~trimmed", content=line), {})
            if len(_TRIMS) >= TRIMS_KEPT:
                _TRIMS.clear()
            _TRIMS[key] = trim
        counter = self.setup.counter
        tokens = trim.tokens.get(counter.name)
        if tokens is None:
            tokens = trim.tokens[counter.name] = counter.raw_message_tokens(trim.message)
        return trim.message, tokens

    def _drop_oldest(self, items: list[ContextItem], total: int, left_out_at: int | None = None) -> int:
        """Leave out the oldest unprotected messages, each tool call with its results, until the prompt fits, and the
        session markers that date only messages left out, or none (1,922 markers of a 41,700-message chat, every one
        kept, passed the budget on their own); `left_out_at`: older ones are left out already (_items), and the note
        saying so goes there."""
        counter = self.setup.counter
        available = self.setup.budget.available
        min_recent = self.setup.policy.min_recent
        note = Message(role="system", content="[earlier messages left out to fit the context window]",
                       id="left-out-marker")
        note_item = ContextItem("trimmed", note, note.id, counter.raw_message_tokens(note))
        if left_out_at is not None:
            items.insert(left_out_at, note_item)
            total += note_item.tokens
        conversation = [i for i in items if i.kind in ("message", "tool_output", "trimmed") and i is not note_item]
        kept_tail = {id(i) for i in conversation[len(conversation) - min_recent:]} if min_recent else set()
        results_of = _results_of(conversation)
        # The note counts while it is still to come: leaving out messages adds it.
        note_due = note_item.tokens if left_out_at is None else 0
        dropped: set[int] = set()
        first_dropped: ContextItem | None = None
        waiting: list[ContextItem] = []  # markers dating nothing but messages left out so far
        for item in items:
            if (item.kind not in ("message", "tool_output", "trimmed", "system") or id(item) in dropped
                    or item is note_item or (item.kind == "system" and not item.message.pinned
                                             and not self._is_marker(item))):
                continue  # the system prompt, the chat's opening, summaries, recalled messages
            if id(item) in kept_tail or counter.calibrated(total + note_due) <= available:
                break
            if self._is_marker(item):
                for marker in waiting:  # they dated nothing, or only messages left out
                    dropped.add(id(marker))
                    total -= marker.tokens
                waiting = [item]
            elif item.message.pinned:
                waiting = []  # the markers before it date a message that stays
            else:
                # A result never appears without its call, so a call leaves with all its results.
                first_dropped = first_dropped or item
                for member in (item, *results_of.get(id(item), ())):
                    if id(member) not in dropped:
                        dropped.add(id(member))
                        total -= member.tokens
        if first_dropped is not None and left_out_at is None:
            items.insert(items.index(first_dropped), note_item)
            total += note_item.tokens
        items[:] = [i for i in items if id(i) not in dropped]
        return total

    def _is_marker(self, item: ContextItem) -> bool:
        """Whether the item is a session or date marker: a system message of the chat after its opening, unpinned."""
        return (item.kind == "system" and not item.message.pinned
                and self.meter.archive.position.get(item.source_id, 0) > 0)

    def _cut_longest(self, items: list[ContextItem], total: int) -> int:
        """Last resort: cut the longest texts until the prompt fits.

        The newest message is what the model answers, so it is cut last, but a paste larger than half the budget
        first gives up its excess: otherwise it would empty every summary before losing a line itself.
        """
        calibrated = self.setup.counter.calibrated
        available = self.setup.budget.available
        newest = items[-1]
        half = available // 2
        if newest.tokens > half:
            total = self._cut(newest, min(newest.tokens - half, calibrated(total) - available), total)
        for item in sorted(items[:-1], key=lambda i: -i.tokens) + [newest]:
            total = self._cut(item, calibrated(total) - available, total)
        return total

    def _leave_out_any(self, items: list[ContextItem], total: int) -> int:
        """Past the last resort: what no stage removes is over the budget even cut to its messages' overheads
        (hundreds of pinned messages, or of session markers among the newest). Leave out the oldest items, each
        call with its results, but the system prompt and the newest message, until the prompt fits."""
        counter, available = self.setup.counter, self.setup.budget.available
        newest = items[-1]
        results_of = _results_of(items)
        dropped: set[int] = set()
        for item in items[:-1]:
            if counter.calibrated(total) <= available:
                break
            group = [item, *results_of.get(id(item), ())]
            if item.source_id == SYSTEM_PROMPT_ID or newest in group or id(item) in dropped:
                continue
            for member in group:
                if id(member) not in dropped:
                    dropped.add(id(member))
                    total -= member.tokens
        items[:] = [i for i in items if id(i) not in dropped]
        return total

    def _cut(self, item: ContextItem, excess: int, total: int) -> int:
        """Shrink one item by about `excess` calibrated tokens; returns the new prompt total."""
        if excess <= 0:
            return total
        counter = self.setup.counter
        raw_excess = int(excess / counter.factor) + 1
        cut = shrink_message(item.message, item.tokens - raw_excess, counter)
        new_tokens = counter.raw_message_tokens(cut)
        if new_tokens < item.tokens:
            total += new_tokens - item.tokens
            if item.tokens_before_cut is None:
                item.tokens_before_cut = item.tokens
            item.message, item.tokens = cut, new_tokens
            if item.kind in ("tool_output", "message"):
                item.kind = "trimmed"
        return total


def _results_of(items: list[ContextItem]) -> dict[int, list[ContextItem]]:
    """The results of each item's tool calls, by the calling item's id(): a result answers the nearest call before it
    with its id (ids repeat in some chats, "call_0": leaving out the first call took a later call's results too)."""
    latest: dict[str, ContextItem] = {}
    results: dict[int, list[ContextItem]] = defaultdict(list)
    for item in items:
        call_item = latest.get(item.message.tool_call_id or "")
        if item.message.role == "tool" and call_item is not None:
            results[id(call_item)].append(item)
        for call in item.message.tool_calls:
            latest[call.id] = item
    return results


def shrink_message(message: Message, target_tokens: int, counter: TokenCounter) -> Message:
    """A copy of the message cut to about target_tokens (long tool arguments first, then text), with a new id."""
    calls = message.tool_calls
    if calls and counter.raw_message_tokens(message) - counter.count_text(message.content) > target_tokens // 2:
        calls = tuple(ToolCall(id=c.id, name=c.name, arguments={"truncated": json.dumps(c.arguments)[:100]})
                      for c in calls)
    shrunk = message.with_changes(id=f"{message.id}~cut", content="", tool_calls=calls)
    room = max(target_tokens - counter.raw_message_tokens(shrunk), 0)
    return shrunk.with_changes(content=fit_text(message.content, room, counter))
