"""A count and its noun in the user's words: '1 message', '2 messages', '1,024 tokens', '1 summary', '3 summaries'."""

from __future__ import annotations

import re

# Nouns that take -es (match, process, box, branch, dish) and those that turn -y into -ies (summary, entry; not key).
_SIBILANT = re.compile(r"(s|x|z|ch|sh)$")
_CONSONANT_Y = re.compile(r"[^aeiou]y$")


def plural(noun: str) -> str:
    """The plural of an English noun Precis counts (the last word of `noun`: 'old tool output' -> '... outputs')."""
    if _CONSONANT_Y.search(noun):
        return noun[:-1] + "ies"
    return noun + "es" if _SIBILANT.search(noun) else noun + "s"


def counted(count: int, noun: str) -> str:
    """`count` with thousands separators and `noun`, singular for exactly one: '1 message', '1,024 tokens'."""
    return f"{count:,} {noun if count == 1 else plural(noun)}"
