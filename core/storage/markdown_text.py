"""A message's text placed in the Markdown export so that it cannot break what the export wraps around it.

Written raw, a message's own `</details>` closed the fold of an earlier version early (its text, and the versions
after it, spilled out of the fold), and a reply stopped inside a code block left its fence open, so every message
after it read as code. Here the fold's tags in the text are written as text (`&lt;details>` reads as `<details>`),
except in code, which shows them as written anyway; and a fence the text leaves open is closed at its end.
"""

from __future__ import annotations

import re

# A fence line (CommonMark: up to 3 spaces, then 3 or more backticks or tildes); a closing one has only spaces after.
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)$")
# The start of a tag of the export's folds, <details>, </details>, <summary>, </summary>.
_FOLD_TAG = re.compile(r"<(?=/?(?:details|summary)(?:[\s/>]|$))", re.IGNORECASE)
_TICKS = re.compile(r"`+")


def markdown_text(text: str) -> str:
    """`text` as Markdown that keeps to itself: the same reading, no fold tag outside code, no fence left open."""
    out: list[str] = []
    block: list[str] = []  # lines of the current paragraph-like block, outside fences
    fence: tuple[str, int] | None = None  # the open fence's character and length
    for line in text.split("\n"):
        found = _FENCE.match(line)
        if fence is not None:
            out.append(line)
            if found and found.group(1)[0] == fence[0] and len(found.group(1)) >= fence[1] and not found.group(2).strip():
                fence = None
            continue
        # An opening backtick fence has no backtick in its info string (else it is inline code).
        if found and not (found.group(1)[0] == "`" and "`" in found.group(2)):
            out.extend(_outside_code_spans(block))
            block = []
            out.append(line)
            fence = (found.group(1)[0], len(found.group(1)))
        elif not line.strip():  # a code span never spans a blank line
            out.extend(_outside_code_spans(block))
            block = []
            out.append(line)
        else:
            block.append(line)
    out.extend(_outside_code_spans(block))
    if fence is not None:
        out.append(fence[0] * fence[1])
    return "\n".join(out)


def _outside_code_spans(lines: list[str]) -> list[str]:
    """The lines of one block with the fold tags outside its code spans escaped. A code span runs from a run of
    backticks to the next run of the same length (CommonMark); a run with no such partner is plain backticks."""
    text = "\n".join(lines)
    runs = [run for run in _TICKS.finditer(text) if not _escaped(text, run.start())]
    pieces: list[str] = []
    plain_from, index = 0, 0
    while index < len(runs):
        opener = runs[index]
        closer = next((later for later in range(index + 1, len(runs))
                       if len(runs[later].group()) == len(opener.group())), None)
        if closer is None:
            index += 1
            continue
        pieces.append(_FOLD_TAG.sub("&lt;", text[plain_from:opener.start()]))
        pieces.append(text[opener.start():runs[closer].end()])
        plain_from, index = runs[closer].end(), closer + 1
    pieces.append(_FOLD_TAG.sub("&lt;", text[plain_from:]))
    return "".join(pieces).split("\n") if lines else []


def _escaped(text: str, position: int) -> bool:
    """Whether the character at `position` follows an odd number of backslashes (a literal backtick)."""
    before = position
    while before > 0 and text[before - 1] == "\\":
        before -= 1
    return (position - before) % 2 == 1
