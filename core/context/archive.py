"""The archive: every original message (never deleted) and every summary record, and what the records hide.

Active records form the chain (oldest first); a message covered by an active record is archived (hidden from the
prompt, kept) unless pinned or the chat's opening system message.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from typing import Literal

from ..model.counted import counted
from ..model.messages import Message
from ..model.records import SummaryRecord, through_folds
from .recall_index import RecallIndex


def summary_message(record: SummaryRecord, covered_count: int) -> Message:
    """The message the model sees for a summary; its id is the record's."""
    header = f"[Summary {record.depth} of earlier conversation: {counted(covered_count, 'message')}, {record.mode} mode]"
    return Message(role="system", content=f"{header}\n{record.text}", id=record.id, created_at=record.created_at)


ShownKind = Literal["system", "message", "tool_output"]


def shown_kind(message: Message) -> ShownKind:
    """The kind of item a visible message is in the prompt."""
    return "system" if message.role == "system" else "tool_output" if message.role == "tool" else "message"


class VisibleTally:
    """Raw tokens of the messages the prompt shows verbatim, by kind, and of the pinned ones among the non-system
    ones: kept up to date as messages are shown and hidden, so usage is read without walking the history. A visible
    message that says nothing (Message.says_nothing) is not sent: it is only counted, in `silent`."""

    def __init__(self, tokens: Callable[[Message], int]):
        self.tokens = tokens
        self.by_kind = {"system": 0, "message": 0, "tool_output": 0}
        self.pinned = 0
        self.silent = 0

    def add(self, message: Message, sign: int = 1) -> None:
        if message.says_nothing:
            self.silent += sign
            return
        tokens = sign * self.tokens(message)
        kind = shown_kind(message)
        self.by_kind[kind] += tokens
        if message.pinned and kind != "system":
            self.pinned += tokens


class Archive:
    def __init__(self, tokens: Callable[[Message], int], recall_index: RecallIndex | None = None):
        # Counts a message's tokens (the engine's counter): the tally of what is visible is kept with it.
        self.tokens = tokens
        self.messages: list[Message] = []
        self.records: list[SummaryRecord] = []
        self.position: dict[str, int] = {}
        # Where the system messages stand, in order: the marker dating any message is found by bisection.
        self.system_positions: list[int] = []
        # The pinned messages, kept as they change: what each reply's record names without reading the whole chat.
        self.pinned_ids: set[str] = set()
        self.by_record: dict[str, SummaryRecord] = {}
        # The archive map in two steps, so that a merge changes neither what is hidden nor a map entry per message:
        # message id -> the record whose own range holds it (for each message hidden now), and record id -> the
        # merge it was folded into (itself for a record of the chain), for every record under the chain: the chain
        # record hiding a message is at the end of that path (shortened as it is followed).
        self.covered_by: dict[str, str] = {}
        self.folded_into: dict[str, str] = {}
        self.chain: list[SummaryRecord] = []
        # Bumped whenever the archived set changes (recall caches its matches per generation).
        self.generation = 0
        # Kept in step with the archived originals when recall has no store index to search.
        self.recall_index = recall_index
        self._summary_messages: dict[str, Message] = {}
        self._visible_cache: list[Message] | None = None
        # The tally of _visible_cache: read and kept only while the cache is there, summed again with it (visible).
        self._tally = VisibleTally(tokens)
        self._counts: dict[str, int] = {}
        self._first_positions: dict[str, int] = {}

    def load(self, messages: list[Message], records: list[SummaryRecord]) -> None:
        """Take persisted originals and records (in creation order); their statuses say which are active."""
        self.messages = list(messages)
        self.position = {m.id: i for i, m in enumerate(self.messages)}
        self.system_positions = [i for i, m in enumerate(self.messages) if m.role == "system"]
        self.pinned_ids = {m.id for m in self.messages if m.pinned}
        self.records = list(records)
        self.by_record = {r.id: r for r in self.records}
        self.rebuild()

    def folded(self, record: SummaryRecord) -> list[SummaryRecord]:
        """The record and every record merged into it, through merges."""
        out, stack = [], [record]
        while stack:
            current = stack.pop()
            out.append(current)
            stack.extend(self.by_record[c] for c in current.merged_ids if c in self.by_record)
        return out

    def covered(self, record: SummaryRecord) -> list[str]:
        """Ids of the originals a record stands for, through merges (gathered when asked: a merge copies none)."""
        return [mid for r in self.folded(record) for mid in r.covered_ids]

    def covered_count(self, record: SummaryRecord) -> int:
        """How many originals a record stands for, through merges (fixed once the record exists: cached)."""
        return through_folds(record, self.by_record, self._counts, lambda r, children: len(r.covered_ids) + sum(children))

    def holder(self, message_id: str) -> str | None:
        """Id of the record of the chain that hides the message, if one does."""
        record_id = self.covered_by.get(message_id)
        return None if record_id is None else self._chain_record(record_id)

    def _chain_record(self, record_id: str) -> str:
        into = self.folded_into
        top = record_id
        while into[top] != top:
            top = into[top]
        while into[record_id] != top:  # the next look is one step
            into[record_id], record_id = top, into[record_id]
        return top

    def first_position(self, record: SummaryRecord) -> int:
        """Where the record's range starts (fixed: messages are only ever added or removed at the end; cached). A
        merge's from its children's: not a scan of everything it covers, which grows with every merge."""
        return through_folds(record, self.by_record, self._first_positions, lambda r, children: min(
            [*(self.position.get(i, 0) for i in r.covered_ids), *children], default=0))

    def rebuild(self) -> None:
        """Derive the chain and the archive map from record statuses (restore, merges and their undo)."""
        active = [r for r in self.records if r.status == "active"]
        self.folded_into = {record.id: record.id for record in active}
        for record in active:
            for merge in self.folded(record):
                self.folded_into.update((c, merge.id) for c in merge.merged_ids if c in self.by_record)
        self.covered_by = {mid: r.id for r in self.records if r.id in self.folded_into for mid in r.covered_ids}
        first_position = {r.id: self.first_position(r) for r in active}
        self.chain = sorted(active, key=lambda r: first_position[r.id])
        self._summary_messages = {}
        self._forget_visible()
        self.generation += 1
        if self.recall_index is not None:
            self.recall_index.update((m for m in self.covered_by if m in self.position),
                                     lambda mid: self.messages[self.position[mid]].content)

    def add(self, record: SummaryRecord) -> None:
        self.records.append(record)
        self.by_record[record.id] = record
        children = [self.by_record.get(c) for c in record.merged_ids]
        if not record.merged_ids:
            self._hide(record)
        elif record.covered_ids or not all(c is not None and c in self.chain for c in children):
            self.rebuild()
        else:  # every child is a record of the chain
            self._fold(record, [c for c in children if c is not None])

    def _hide(self, record: SummaryRecord) -> None:
        """A new summary (no merge) hides the range it covers: the chain, the archive map and the visible set
        change by that range alone, so summarizing a long chat does not rescan its history each time."""
        ids = [mid for mid in record.covered_ids if mid in self.position]
        was_visible = [m for m in self.messages_by_ids(ids) if self.is_visible(m)]
        for mid in ids:
            self.covered_by[mid] = record.id
        self.folded_into[record.id] = record.id
        first = self.first_position(record)
        index = next((n for n, r in enumerate(self.chain) if self.first_position(r) > first), len(self.chain))
        self.chain.insert(index, record)
        # Before a summary of later messages (an unpinned message summarized after them): the depths behind it move.
        self.renumber()
        if self._visible_cache is not None:
            for message in was_visible:
                if not self.is_visible(message):
                    self._tally.add(message, -1)
            self._visible_cache = [m for m in self._visible_cache if self.is_visible(m)]
        self.generation += 1
        if self.recall_index is not None:
            for mid in ids:
                self.recall_index.add(mid, self.messages[self.position[mid]].content)

    def _fold(self, record: SummaryRecord, children: list[SummaryRecord]) -> None:
        """A merge folds summaries of the chain into one: the same messages stay hidden, so the visible set, its
        tally and the recall index stay as they are; only which record hides them, and the chain, change (a step
        per summary it folds, none per message)."""
        self.folded_into[record.id] = record.id
        for child in children:
            self.folded_into[child.id] = record.id
            self.chain.remove(child)
            self._summary_messages.pop(child.id, None)
        first = self.first_position(record)
        index = next((n for n, r in enumerate(self.chain) if self.first_position(r) > first), len(self.chain))
        self.chain.insert(index, record)
        self.generation += 1

    def release(self, record: SummaryRecord) -> None:
        """Undoing a summary that merged nothing brings back exactly the range it hid."""
        ids = [mid for mid in record.covered_ids if self.covered_by.get(mid) == record.id]
        for mid in ids:
            del self.covered_by[mid]
        del self.folded_into[record.id]
        self.chain.remove(record)
        self._summary_messages.pop(record.id, None)
        if self._visible_cache is not None:
            back = [self.messages[self.position[mid]] for mid in ids if mid in self.position]
            # Messages visible while hidden (pinned, the opening) were already in the set and the tally.
            back = [m for m in back if self.is_visible(m) and not (m.pinned or self.is_opening(m))]
            for message in back:
                self._tally.add(message)
            self._visible_cache = sorted(self._visible_cache + back, key=lambda m: self.position[m.id])
        self.generation += 1
        if self.recall_index is not None:
            for mid in ids:
                self.recall_index.remove(mid)

    def discard(self, record: SummaryRecord) -> None:
        """Take back a summary just added that merged nothing, as if it had never been made (it saved nothing)."""
        self.release(record)
        self.records.remove(record)
        del self.by_record[record.id]
        self._counts.pop(record.id, None)
        self._first_positions.pop(record.id, None)
        self.renumber()

    def renumber(self, *, new_texts: bool = False) -> None:
        """Depth is the position in the chain; a summary whose depth changes has its message rebuilt (its header
        says its depth), and with `new_texts` every one is (a merge changes what every header says)."""
        for position, record in enumerate(self.chain, start=1):
            if record.depth != position:
                record.depth = position
                self._summary_messages.pop(record.id, None)
        if new_texts:
            self._summary_messages = {}

    # ----- reading ------------------------------------------------------------------------------------------

    def archived_messages(self, record_id: str) -> list[Message]:
        ids = set(self.covered(self.by_record[record_id]))
        return [m for m in self.messages if m.id in ids]

    def messages_by_ids(self, ids: list[str]) -> list[Message]:
        return [self.messages[self.position[i]] for i in ids if i in self.position]

    def marker_before(self, message_id: str) -> Message | None:
        """The latest system message before this one (the session or date marker it falls under, if any)."""
        at = bisect_left(self.system_positions, self.position[message_id])
        return self.messages[self.system_positions[at - 1]] if at else None

    def is_opening(self, message: Message) -> bool:
        """The chat's first message when it is a system message: the system prompt, never summarized. Later system
        messages (session or date markers) are conversation: summarized with their stretch, their date kept."""
        return message.role == "system" and self.position.get(message.id) == 0

    def is_visible(self, message: Message) -> bool:
        return message.id not in self.covered_by or message.pinned or self.is_opening(message)

    def is_archived(self, message_id: str) -> bool:
        """True if the message is replaced by a summary in the prompt (pinned and system messages never are)."""
        position = self.position.get(message_id)
        return position is not None and not self.is_visible(self.messages[position])

    def visible(self) -> list[Message]:
        """Messages the prompt shows verbatim (cached: the hot path appends, it does not rescan the history)."""
        if self._visible_cache is None:
            self._visible_cache = [m for m in self.messages if self.is_visible(m)]
            self._tally = VisibleTally(self.tokens)
            for message in self._visible_cache:
                self._tally.add(message)
        return self._visible_cache

    def visible_tally(self) -> VisibleTally:
        """Token totals of visible(), kept as it changes."""
        self.visible()
        return self._tally

    def recount(self) -> None:
        """Message counts changed (stand-ins replaced by counts): the visible tally is summed again when next read."""
        self._forget_visible()

    def _forget_visible(self) -> None:
        self._visible_cache = None  # and with it the tally

    def summary_message(self, record: SummaryRecord) -> Message:
        message = self._summary_messages.get(record.id)
        if message is None:
            message = summary_message(record, self.covered_count(record))
            self._summary_messages[record.id] = message
        return message

    # ----- changing the conversation ------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        if message.id in self.position:
            raise ValueError(f"message {message.id} is already in this conversation")
        self.position[message.id] = len(self.messages)
        if message.role == "system":
            self.system_positions.append(len(self.messages))
        if message.pinned:
            self.pinned_ids.add(message.id)
        self.messages.append(message)
        if self._visible_cache is not None:
            self._visible_cache.append(message)
            self._tally.add(message)

    def set_pinned(self, message_id: str, pinned: bool) -> None:
        position = self.position[message_id]
        self.messages[position] = self.messages[position].with_changes(pinned=pinned)
        (self.pinned_ids.add if pinned else self.pinned_ids.discard)(message_id)
        self._forget_visible()
        self.generation += 1  # a pinned message is never recalled: what recall found may change

    def remove_last(self, message_id: str) -> Message:
        if not self.messages or self.messages[-1].id != message_id:
            raise ValueError("only the newest message can be removed")
        if message_id in self.covered_by:
            raise ValueError("an archived message cannot be removed")
        message = self.messages.pop()
        del self.position[message_id]
        self.pinned_ids.discard(message_id)
        if message.role == "system":
            self.system_positions.pop()
        if self._visible_cache is not None:  # never hidden, so the newest visible message
            self._visible_cache.pop()
            self._tally.add(message, -1)
        return message
