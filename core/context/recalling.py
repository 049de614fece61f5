"""Recall in the prompt: archived originals matching the pending user message, as snippets in the room that is free.

Finding the matches is recall_index.py's (or the store's index); this module chooses, cuts and places the snippets.
"""

from __future__ import annotations

import re
import string

from ..model.messages import Message
from ..model.records import local_time
from ..summary.digest import SPEAKER, session_date
from ..summary.summarizers import fit_text
from ..summary.text_rules import SENTENCE_END
from .archive import Archive
from .recall_index import RecallSearch, content_words
from .usage import ContextItem, ContextSetup

# Matches asked of the search function, the least room worth a snippet, one snippet's share of the room.
RECALL_CANDIDATES = 24
MIN_RECALL_ROOM = 24
RECALL_SNIPPET_SHARE = 0.4
# A recalled message keeps its first sentences (where a reply answers) and those with a word asked about.
OPENING_SENTENCES = 2
NOT_LETTERS = str.maketrans({c: " " for c in string.punctuation + "\n\t"})
# The best matches are recalled with the two messages that followed them, the others with one (their reply).
BEST_MATCHES = 3
# A snippet's first line, as _snippet writes it: "[Recalled: Caroline, 8 May, 2023, message 1a2b3c4d]".
RECALL_HEADER = re.compile(r"\[Recalled: (?P<where>.*?),? ?message \w+\]")


class Recaller:
    def __init__(self, setup: ContextSetup, archive: Archive, search: RecallSearch):
        self.setup = setup
        self.archive = archive
        self.search = search
        # Set to rebuild a past prompt (sent_record.py): these originals are recalled, in this order, as they were.
        self.replay: list[str] | None = None
        self._cache: tuple[tuple, list[ContextItem], tuple[str, ...]] | None = None

    def with_recall(self, items: list[ContextItem]) -> list[ContextItem]:
        """The items with recalled snippets after the summaries (see recalled)."""
        recalled = self.recalled(self.setup.overhead() + sum(i.tokens for i in items))
        if not recalled:
            return items
        # After the chain (or the system prompt): before the verbatim messages and the session markers among them.
        position = next((n for n, i in enumerate(items) if i.kind not in ("system", "summary")
                         or (i.kind == "system" and self.archive.position.get(i.source_id, 0) > 0)), len(items))
        return items[:position] + recalled + items[position:]

    def recalled(self, total: int) -> list[ContextItem]:
        """Snippets recalled for the pending user message into a prompt of `total` raw tokens, in the room under
        both the recall budget and the budget itself (so recall never pushes a prompt over)."""
        policy, counter, messages = self.setup.policy, self.setup.counter, self.archive.messages
        if not (policy.recall_enabled and self.archive.covered_by and messages and messages[-1].role == "user"):
            return []
        available = self.setup.budget.available
        room = int(min(available * policy.recall_ratio, available - counter.calibrated(total)) / counter.factor)
        if room < MIN_RECALL_ROOM:
            return []
        pending = messages[-1]
        key = (pending.id, pending.content, self.archive.generation, room)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, *self._recall(pending.content, room))
        return [ContextItem(i.kind, i.message, i.source_id, i.tokens) for i in self._cache[1]]

    @property
    def chosen(self) -> tuple[str, ...]:
        """The originals the last recall chose, in the order it chose them: what replaying it needs (room is taken
        in that order)."""
        return self._cache[2] if self._cache is not None else ()

    def _recall(self, query: str, room: int) -> tuple[list[ContextItem], tuple[str, ...]]:
        """The best matching archived originals as snippets (speaker, date, message id), within `room` tokens, in
        chat order: each match with the message that answered it, best match first (in conversation the fact is
        often in the reply), then while there is room the message after that reply. With the ids of those chosen, in
        the order chosen."""
        archive = self.archive
        messages = archive.messages
        snippet_cap = max(int(room * RECALL_SNIPPET_SHARE), MIN_RECALL_ROOM)
        found = self.search(query, RECALL_CANDIDATES) if self.replay is None else self.replay
        hits = [p for p in map(archive.position.get, found) if p is not None]
        matched, chosen, asked = set(hits), {}, asked_starts(content_words(query))
        # The best matches with the two messages after them, the others with their reply.
        wanted = hits if self.replay is not None else [
            m for rank, p in enumerate(hits) for m in range(p, p + (3 if rank < BEST_MATCHES else 2))]
        for member in wanted:
            if room < 2 * MIN_RECALL_ROOM:  # too little for a header and a sentence
                break
            if (member >= len(messages) or member in chosen or messages[member].role == "system"
                    or not archive.is_archived(messages[member].id)
                    or (member not in matched and member - 1 not in chosen)):
                continue
            item = self._snippet(member, min(snippet_cap, room), asked, follows=member - 1 in chosen)
            if item is None:  # too long for what is left: a shorter one further down may still fit
                continue
            chosen[member] = item
            room -= item.tokens
        return [chosen[p] for p in sorted(chosen)], tuple(messages[p].id for p in chosen)

    def _snippet(self, position: int, room: int, asked: tuple[str, ...], follows: bool = False) -> ContextItem | None:
        """One archived original as a recalled snippet of at most `room` tokens, or None if there is too little:
        its opening sentences and those with a word `asked` about. One that `follows` the snippet above it in the
        chat needs no date of its own, nor a speaker the text already names ("Caroline: ...")."""
        counter = self.setup.counter
        original = self.archive.messages[position]
        speaker = "" if SPEAKER.match(original.content) else f"{original.name or original.role}, "
        when = "" if follows else f"{self._date_of(position)}, "
        header = f"[Recalled: {speaker}{when}message {original.id[:8]}]"
        message = Message(role="system", content=header, id=f"{original.id}~recalled", created_at=original.created_at)
        text_room = room - counter.raw_message_tokens(message) - 1
        if text_room < MIN_RECALL_ROOM // 2:
            return None
        text = fit_text(relevant_part(original.content, asked), text_room, counter)
        message = message.with_changes(content=f"{header}\n{text}")
        tokens = counter.raw_message_tokens(message)
        return ContextItem("recalled", message, original.id, tokens) if tokens <= room else None

    def _date_of(self, position: int) -> str:
        """The date of the session marker the message falls under, else its own timestamp."""
        message = self.archive.messages[position]
        marker = self.archive.marker_before(message.id)
        if date := session_date(marker.content) if marker else "":
            return date
        created = message.created_at
        return local_time(created) if created > 0 else "undated"


def recalled_parts(snippet: str) -> tuple[str, str]:
    """(who and when, text) of a recalled snippet: ("Caroline, 8 May, 2023", "I went to ..."); the who or the when
    is left out where the snippet's header leaves it out."""
    header, _, text = snippet.partition("\n")
    match = RECALL_HEADER.fullmatch(header)
    return (match["where"] if match else header), text


def asked_starts(asked: list[str]) -> tuple[str, ...]:
    """Each word asked about as the start of a word (" remind" meets "reminds" and "reminder"): a stem cut by up to
    two letters; words shorter than four letters only whole (" art " is not " start")."""
    return tuple(f" {w[:max(4, len(w) - 2)]}" if len(w) >= 4 else f" {w} " for w in asked)


def relevant_part(text: str, asked: tuple[str, ...]) -> str:
    """The text's first sentences, those with a word asked about and the sentence after each of them (where the
    answer often is); each run left out is an "…"."""
    sentences = [s for s in SENTENCE_END.split(text) if s.strip()]
    if len(sentences) <= OPENING_SENTENCES or not asked:
        return text
    keep = set(range(OPENING_SENTENCES))
    for n, sentence in enumerate(sentences):
        words = f" {sentence.lower().translate(NOT_LETTERS)} "
        if any(start in words for start in asked):
            keep |= {n, n + 1}
    kept: list[str] = []
    for n, sentence in enumerate(sentences):
        if n in keep:
            kept.append(sentence)
        elif not kept or kept[-1] != "…":
            kept.append("…")
    return " ".join(kept)
