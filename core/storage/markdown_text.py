"""A message's text placed in the Markdown export so that it cannot break what the export wraps around it.

Written raw, a message's own `</details>` closed the fold of an earlier version early (its text, and the versions
after it, spilled out of the fold), and a reply stopped inside a code block left its fence open, so every message
after it read as code. Here the fold's tags outside fenced code get a zero-width space after their "<" (a tag at a
line's start, in a block quote or a list item opens an HTML block whatever code span it seems to be in, so telling
code spans apart would need a whole Markdown parser), and a fence the text leaves open is closed at its end.
"""

from __future__ import annotations

import re

# A fence line (CommonMark: up to 3 spaces, then 3 or more backticks or tildes); a closing one has only spaces after.
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)$")
# The start of a tag of the export's folds, <details>, </details>, <summary>, </summary>.
_FOLD_TAG = re.compile(r"<(?=/?(?:details|summary)(?:[\s/>]|$))", re.IGNORECASE)


def markdown_text(text: str) -> str:
    """`text` as Markdown that keeps to itself: the same reading, no fold tag outside fenced code, no fence left open."""
    out: list[str] = []
    fence: tuple[str, int] | None = None  # the open fence's character and length
    for line in text.split("\n"):
        found = _FENCE.match(line)
        if fence is not None:
            out.append(line)
            if found and found.group(1)[0] == fence[0] and len(found.group(1)) >= fence[1] and not found.group(2).strip():
                fence = None
        # An opening backtick fence has no backtick in its info string (else it is inline code).
        elif found and not (found.group(1)[0] == "`" and "`" in found.group(2)):
            out.append(line)
            fence = (found.group(1)[0], len(found.group(1)))
        else:  # no longer a tag to a Markdown reader, in prose and code spans alike (an entity shows as "&lt;" there)
            out.append(_FOLD_TAG.sub("<\u200b", line))
    if fence is not None:
        out.append(fence[0] * fence[1])
    return "\n".join(out)
