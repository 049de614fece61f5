"""Server-sent events, parsed as the HTML spec says: fields, multi-line data, comments, event names, ids."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None


def iter_sse(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Turn lines (terminators already removed, as httpx's iter_lines gives them) into events.

    A blank line dispatches the event built so far; lines starting with ':' are comments (keep-alives);
    several `data:` lines join with newlines; a field without a colon has an empty value; one space after
    the colon is dropped. An event with no data is not dispatched, and neither is a last event the stream
    never finished with a blank line (the spec's rule, which is how a cut stream shows).
    """
    data: list[str] = []
    event = ""
    last_id: str | None = None
    for line in lines:
        if line == "":
            if data:
                yield SSEEvent(data="\n".join(data), event=event or "message", id=last_id)
            data, event = [], ""
            continue
        if line.startswith(":"):
            continue
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            event = value
        elif field == "id" and "\0" not in value:
            last_id = value
        # "retry" and unknown fields are ignored, as the spec says.
