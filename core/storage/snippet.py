"""A search hit's snippet: the words around the first word the search matched, every matched word in [brackets].

Made here from the start of the message rather than by FTS5's snippet(), which scores a window at every hit against
every other hit, so a message's time grew with the square of its hits: "word " x 50,000 took 13 s, a 50 MB message
did not finish in 10 minutes. A word matches as the index matches it (tokenize='porter unicode61 remove_diacritics
2', each query word a prefix): its folded Porter stem starts with a query word's (see porter.py).
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from functools import lru_cache

from ..context.porter import WORD, fold, stem, words

SNIPPET_WORDS = 12  # as snippet(message_fts, 0, '[', ']', '…', 12) gave
# Of each hit, the first bytes read for its snippet: a message whose first match comes later shows its start.
SCAN_BYTES = 200_000
# Around the first match, the characters looked at for the words before and after it.
WINDOW_CHARS = 600


def query_stems(query: str) -> tuple[str, ...]:
    """The terms a query's words look for, as the index stems them."""
    return tuple(dict.fromkeys(stem(w) for w in words(query)))


def snippet(text: str, stems: tuple[str, ...], whole: bool = True) -> str:
    """SNIPPET_WORDS words of `text` around the first one matching `stems`, the matches bracketed, '…' where text
    was left out; `whole`: `text` is all of the message, not only its start. With no match in `text`, its start."""
    def matches(word: str) -> bool:
        term = stem(fold(word))
        return any(term.startswith(s) for s in stems)

    first = next((w for c in _candidates(stems).finditer(text)
                  if (w := WORD.match(text, c.start())) is not None and matches(w.group())), None)
    at = first.start() if first is not None else 0
    since = max(at - WINDOW_CHARS, 0)
    before = list(WORD.finditer(text, since, at))
    if before and since > 0 and before[0].start() == since:  # a word cut by the window's edge
        before.pop(0)
    if since > 0 or len(before) > SNIPPET_WORDS - 3:  # else the snippet starts where the message does
        before = before[len(before) - min(len(before), SNIPPET_WORDS // 2 - 1):]
    window = before + list(itertools.islice(WORD.finditer(text, at, at + WINDOW_CHARS), SNIPPET_WORDS - len(before)))
    if not window:
        return ""
    parts = ["…"] if WORD.search(text, 0, window[0].start()) else []
    end = window[0].start()
    for word in window:
        parts += [text[end:word.start()], f"[{word.group()}]" if matches(word.group()) else word.group()]
        end = word.end()
    if not whole or WORD.search(text, end) is not None:
        parts.append("…")
    return "".join(parts)


@lru_cache(maxsize=64)
def _candidates(stems: tuple[str, ...]) -> re.Pattern:
    """Where a matching word may start, found by one regular expression before any word is stemmed: it begins with
    its stem's first letters (stemming changes at most the last two), in any case, with or without diacritics."""
    variants = _letter_variants()
    alternatives = ["".join(f"[{c}{variants[c]}]" if c in variants else re.escape(c) for c in s[:max(len(s) - 2, 1)])
                    for s in stems]
    return re.compile(rf"(?<![^\W_])(?:{'|'.join(alternatives) or '(?!)'})", re.IGNORECASE)


@lru_cache(maxsize=1)
def _letter_variants() -> dict[str, str]:
    """{letter: the letters with diacritics that fold to it}, over the Latin blocks."""
    found: dict[str, set[str]] = defaultdict(set)
    for char in map(chr, itertools.chain(range(0xC0, 0x250), range(0x1E00, 0x1F00))):
        folded = fold(char)
        if len(folded) == 1 and folded != char.lower():
            found[folded].add(char)
    return {letter: "".join(sorted(chars)) for letter, chars in found.items()}
