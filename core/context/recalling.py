"""Recall in the prompt: archived originals matching the pending user message, as snippets in the room that is free.

Finding the matches is recall.py's (or the store's index); this module chooses, cuts and places the snippets.
"""

from __future__ import annotations

import time

from ..model.messages import Message
from ..model.tokens import REPLY_PRIMING
from ..summary.summarize import fit_text
from .archive import Archive
from .recall import RecallSearch
from .usage import ContextItem, ContextSetup

# Matches asked of the search function, the least room worth a snippet, one snippet's share of the room.
RECALL_CANDIDATES = 24
MIN_RECALL_ROOM = 24
RECALL_SNIPPET_SHARE = 0.4


class Recaller:
    def __init__(self, setup: ContextSetup, archive: Archive, search: RecallSearch):
        self.setup = setup
        self.archive = archive
        self.search = search
        self._cache: tuple[tuple, list[ContextItem]] | None = None

    def with_recall(self, items: list[ContextItem]) -> list[ContextItem]:
        """The items with recalled snippets after the summaries, in the room under both the recall budget and
        the budget itself (so recall never pushes a prompt over)."""
        policy, counter, messages = self.setup.policy, self.setup.counter, self.archive.messages
        if not (policy.recall_enabled and self.archive.hidden_by and messages and messages[-1].role == "user"):
            return items
        total = REPLY_PRIMING + sum(i.tokens for i in items)
        available = self.setup.budget.available
        room = int(min(available * policy.recall_ratio, available - counter.calibrated(total)) / counter.factor)
        if room < MIN_RECALL_ROOM:
            return items
        pending = messages[-1]
        key = (pending.id, pending.content, self.archive.generation, room)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self._recall(pending.content, room))
        recalled = [ContextItem(i.kind, i.message, i.source_id, i.tokens) for i in self._cache[1]]
        position = next((n for n, i in enumerate(items) if i.kind not in ("system", "summary")), len(items))
        return items[:position] + recalled + items[position:]

    def _recall(self, query: str, room: int) -> list[ContextItem]:
        """The best matching archived originals as snippets (speaker, date, message id), each with the message that
        answered it (in conversation the fact is often in the reply), within `room` tokens, in chat order."""
        archive = self.archive
        messages = archive.messages
        snippet_cap = max(int(room * RECALL_SNIPPET_SHARE), MIN_RECALL_ROOM)
        chosen: dict[int, ContextItem] = {}
        for message_id in self.search(query, RECALL_CANDIDATES):
            position = archive.position.get(message_id)
            if position is None or position in chosen or not archive.is_archived(message_id):
                continue
            group = [position]
            reply = position + 1
            if (reply < len(messages) and reply not in chosen and messages[reply].role != "system"
                    and archive.is_archived(messages[reply].id)):
                group.append(reply)
            for member in group:
                item = self._snippet(member, min(snippet_cap, room))
                if item is None:
                    return [chosen[p] for p in sorted(chosen)]
                chosen[member] = item
                room -= item.tokens
        return [chosen[p] for p in sorted(chosen)]

    def _snippet(self, position: int, room: int) -> ContextItem | None:
        """One archived original as a recalled snippet of at most `room` tokens, or None if there is too little."""
        counter = self.setup.counter
        original = self.archive.messages[position]
        header = f"[Recalled from the archive: {original.name or original.role}, {self._date_of(position)}, " \
                 f"message {original.id[:8]}]"
        message = Message(role="system", content=header, id=f"{original.id}~recalled", created_at=original.created_at)
        text_room = room - counter.raw_message_tokens(message) - 1
        if text_room < MIN_RECALL_ROOM // 2:
            return None
        message = message.with_changes(content=f"{header}\n{fit_text(original.content, text_room, counter)}")
        tokens = counter.raw_message_tokens(message)
        return ContextItem("recalled", message, original.id, tokens) if tokens <= room else None

    def _date_of(self, position: int) -> str:
        """The session header the message falls under (a short system message with a date or number in it), else
        its own timestamp."""
        messages = self.archive.messages
        for earlier in range(position - 1, max(position - 400, 0) - 1, -1):
            if messages[earlier].role != "system":
                continue
            marker = messages[earlier].content.strip()
            if len(marker) <= 120 and any(c.isdigit() for c in marker):
                return marker.splitlines()[0]
        created = messages[position].created_at
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(created)) if created > 0 else "undated"
