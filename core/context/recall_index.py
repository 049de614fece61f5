"""Recall: find the archived originals that match what the user just asked.

The engine asks a search function for message ids, best first. With a store it is the store's FTS5 index (BM25);
without one (`precis compact`) it is RecallIndex, a small BM25 index kept in memory and updated as messages are
archived or brought back, never rebuilt per call.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable

from ..summary.text_rules import STOP_WORDS
from .porter import stem, words

# (query, limit) -> ids of matching messages, best first. The engine keeps only those it has archived.
RecallSearch = Callable[[str, int], list[str]]


MAX_QUERY_TERMS = 24
# A word in more messages than this is scored only on messages rarer words of the query found.
COMMON_POSTINGS = 500
# FTS5's bm25(): a word in half the messages or more weighs next to nothing.
MIN_IDF = 1e-6


def terms(text: str) -> list[str]:
    """The Porter stems of every word of a text, in order: the terms FTS5's porter tokenizer indexes."""
    return [stem(w) for w in words(text)]


def asked_words(text: str) -> list[str]:
    """The words of a text that carry meaning (stop words, 1-letter words out), folded, one for each stem."""
    asked: dict[str, str] = {}
    for word in words(text):
        if len(word) > 1 and word not in STOP_WORDS:
            asked.setdefault(stem(word), word)
    return list(asked.values())[:MAX_QUERY_TERMS]


def content_words(text: str) -> list[str]:
    """The stems of the words of a text that carry meaning, in order, each once."""
    return [stem(w) for w in asked_words(text)]


def fts_or_query(text: str) -> str:
    """An FTS5 MATCH expression: each content word quoted (never FTS syntax), joined by OR. The store's index
    stems the words as terms() does."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in asked_words(text))


class RecallIndex:
    """BM25 over archived messages as FTS5's bm25() scores (k1 1.2, b 0.75, its idf), updated incrementally."""

    K1, B = 1.2, 0.75

    def __init__(self) -> None:
        self._postings: dict[str, dict[str, int]] = defaultdict(dict)  # term -> {message id: term frequency}
        self._terms: dict[str, Counter[str]] = {}  # message id -> its term counts (to remove it again)
        self._lengths: dict[str, int] = {}
        self._total_length = 0

    def __len__(self) -> int:
        return len(self._terms)

    def add(self, message_id: str, text: str) -> None:
        if message_id in self._terms:
            return
        counts = Counter(terms(text))
        self._terms[message_id] = counts
        self._lengths[message_id] = sum(counts.values())
        self._total_length += self._lengths[message_id]
        for term, tf in counts.items():
            self._postings[term][message_id] = tf

    def remove(self, message_id: str) -> None:
        counts = self._terms.pop(message_id, None)
        if counts is None:
            return
        self._total_length -= self._lengths.pop(message_id)
        for term in counts:
            posting = self._postings[term]
            posting.pop(message_id, None)
            if not posting:
                del self._postings[term]

    def update(self, archived: Iterable[str], text_of: Callable[[str], str]) -> None:
        """Make the index hold exactly `archived`: add the newly archived, drop those brought back."""
        wanted = set(archived)
        for gone in [m for m in self._terms if m not in wanted]:
            self.remove(gone)
        for message_id in wanted - self._terms.keys():
            self.add(message_id, text_of(message_id))

    def search(self, query: str, limit: int) -> list[str]:
        n = len(self._terms)
        if not n:
            return []
        average = self._total_length / n or 1.0
        scores: dict[str, float] = defaultdict(float)
        postings = [p for p in map(self._postings.get, content_words(query))
                    if p and len(p) <= n // 2 + 1]  # a word in most messages says nothing about which one
        # Rare words first; a common word then only adds to messages a rarer word found (unless none did), so a
        # query costs the rare words' postings, not a pass over a large part of the chat.
        for posting in sorted(postings, key=len):
            idf = max(MIN_IDF, math.log((n - len(posting) + 0.5) / (len(posting) + 0.5)))
            common = len(posting) > COMMON_POSTINGS and scores
            pairs = ((m, posting[m]) for m in list(scores) if m in posting) if common else posting.items()
            for message_id, tf in pairs:
                length = self._lengths[message_id]
                scores[message_id] += idf * tf * (self.K1 + 1) / (
                    tf + self.K1 * (1 - self.B + self.B * length / average))
        # Ties go by id, not by the order messages were indexed in: a chat restored afresh recalls the same.
        return heapq.nlargest(limit, scores, key=lambda m: (scores[m], m))
