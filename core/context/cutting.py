"""Where the stretch a summary takes ends: never between a tool call and its results, and where it can, before the
user message that began the exchange the verbatim tail starts in."""

from __future__ import annotations

from collections.abc import Callable

from ..model.messages import Message

# The verbatim tail starts at the user message that began its exchange while that keeps at most this share of the
# budget more (exchange_start).
EXCHANGE_SHARE = 0.1


def call_positions(conversation: list[Message]) -> dict[int, int]:
    """Each tool result's position mapped to its call's: the nearest message before it making a call of its id."""
    latest: dict[str, int] = {}
    calls: dict[int, int] = {}
    for n, message in enumerate(conversation):
        if message.role == "tool" and message.tool_call_id in latest:
            calls[n] = latest[message.tool_call_id]
        for call in message.tool_calls:
            latest[call.id] = n
    return calls


def exchange_start(conversation: list[Message], cut: int, tokens: Callable[[Message], int], room: int) -> int:
    """Where the verbatim tail starts: back from `cut` at the user message that began the exchange it falls in (or
    the session marker before it) while the messages that keeps more take at most `room` tokens, else at `cut`;
    never at the first message (nothing would be left to summarize). A tail starting at "→ execute_bash" showed a
    call whose request had been summarized away."""
    start = cut
    while 0 < start < len(conversation) and conversation[start].role not in ("user", "system"):
        start -= 1
        room -= tokens(conversation[start])
        if room < 0:
            return cut
    return start if start > 0 else cut
