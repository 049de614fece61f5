"""Walking the top-level array of a JSON document one element at a time, each with the line it starts on, so an
error can name the line of the element that has it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .interchange import NESTED_TOO_DEEP, TranscriptError, refuse_lone_surrogates


def items_with_lines(text: str, source: str) -> Iterator[tuple[Any, int]]:
    """The elements of a JSON array (an OpenAI chat file's messages, or those of its "messages" field; an account
    export's conversations), one at a time, each with the line it starts on.

    The whole file is parsed once to check it, then let go: each element is parsed again as the array is walked to
    find its line, so a long file's parsed form is never held beside the messages made of it."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(source, exc.lineno, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise TranscriptError(source, 1, NESTED_TOO_DEEP) from None
    in_object = isinstance(document, dict)
    if in_object:
        if not isinstance(document.get("messages"), list):
            raise TranscriptError(source, 1, "field 'messages' must be a list of messages")
        start = _messages_key(text, text.index("{") + 1)
    elif isinstance(document, list):
        start = text.index("[")
    else:
        raise TranscriptError(source, 1, "expected {\"messages\": [...]} or a list of messages")
    del document
    # Lines are counted from the previous element on, so the walk stays linear in the file's length.
    pos, line, counted_to = start + 1, 1, 0
    while text[pos := skip_between(text, pos)] != "]":
        line += text.count("\n", counted_to, pos)
        counted_to = pos
        item, end = DECODER.raw_decode(text, pos)
        refuse_lone_surrogates(item, text, source, line, pos, end)
        pos = end
        yield item, line
    if in_object and (again := _messages_key(text, pos + 1)) >= 0:
        raise TranscriptError(source, line + text.count("\n", counted_to, again),
                              "field 'messages' appears more than once; keep one list of messages")


DECODER = json.JSONDecoder()


def skip_between(text: str, pos: int) -> int:
    """The position after the white space, commas and colons from `pos` on (between values of valid JSON)."""
    while text[pos] in " \t\r\n,:":
        pos += 1
    return pos


def _messages_key(text: str, pos: int) -> int:
    """Where the value of the next key "messages" of the valid JSON object being read at `pos` starts; -1 if none."""
    while text[pos := skip_between(text, pos)] != "}":
        key, pos = DECODER.raw_decode(text, pos)
        pos = skip_between(text, pos)
        if key == "messages":
            return pos
        pos = DECODER.raw_decode(text, pos)[1]
    return -1
