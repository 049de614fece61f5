"""Decisions and corrections, read by rule from a conversation (the design documents' key_decisions, top 5):
what was chosen, what was rejected, and what the user corrected. They are what a reader cannot rebuild from the
artifact trail, and what the model must not undo after a summary."""

from __future__ import annotations

import re

from ..model.messages import Message
from .text_rules import SENTENCE_END, one_line_field
from .trail_coverage import user_text

MAX_DECISIONS = 5
DECISION_CHARS = 160

_FENCED_CODE = re.compile(r"```.*?```", re.S)
_MARKDOWN_PREFIX = re.compile(r"^[#>*\-\s\d.]+")
# A choice made: "we'll use X", "decided to", "going with", "switched to", "X instead of Y".
_CHOSEN = re.compile(
    r"\b(?:decided|decide to|chose|choose|going with|go with|(?:we|I)(?:'ll| will) use|let's use|switch(?:ed)? to"
    r"|opted for|settled on|instead of|rather than)\b", re.IGNORECASE)
# A choice ruled out: "don't use X", "not X", "ruled out", "rejected".
_REJECTED = re.compile(
    r"\b(?:rejected|ruled out|won't use|will not use|(?:do not|don't|never) use|avoid using|dropped the idea"
    r"|abandon(?:ed)?|not an option)\b", re.IGNORECASE)
# The user correcting the assistant, at the start of their message: "No, ...", "Actually ...", "That's wrong".
_CORRECTION = re.compile(
    r"\A\s*(?:no\b[,.!]?|nope\b|actually\b|wrong\b|that(?:'s| is) (?:not|wrong|incorrect)|not quite\b"
    r"|you (?:misunderstood|got it wrong)|i (?:said|meant)\b|instead\b|don't\b|do not\b|stop\b)", re.IGNORECASE)


def _sentences(text: str) -> list[str]:
    """The sentences of a message, without fenced code, markdown markers and the quotation marks a sentence split
    from a quoted passage keeps at an end (a sentence quoted again is the same decision)."""
    text = _FENCED_CODE.sub(" ", text[:6000])
    parts = (_MARKDOWN_PREFIX.sub("", part).strip().strip("\"“”").strip() for part in SENTENCE_END.split(text))
    return [s for s in parts if len(s.split()) >= 3]


def extract_decisions(messages: list[Message]) -> list[str]:
    """Up to five decisions, the newest kept when there are more, in conversation order: `User corrected: ...`,
    `Rejected: ...`, `Chose: ...`."""
    found: dict[str, None] = {}
    for message in messages:
        if message.role == "user":
            text = user_text(message)
            if text and _CORRECTION.match(text):
                found.setdefault("User corrected: " + one_line_field(text, DECISION_CHARS), None)
                continue
        elif message.role != "assistant" or not message.content.strip():
            continue
        else:
            text = message.content
        for sentence in _sentences(text):
            if _REJECTED.search(sentence):
                found.setdefault("Rejected: " + one_line_field(sentence, DECISION_CHARS), None)
            elif _CHOSEN.search(sentence):
                found.setdefault("Chose: " + one_line_field(sentence, DECISION_CHARS), None)
    return list(found)[-MAX_DECISIONS:]
