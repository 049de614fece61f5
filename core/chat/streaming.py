"""Streaming a reply from a provider: its pieces as they arrive, progress while the prompt is read, and how it ended
(usage, finish reason, the tool calls it makes). Used by ChatSession and by `precis chat MESSAGE` without a chat."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..model.messages import Message, ToolCall
from ..model.tools import AUTO, ToolSpec
from ..providers.base import Cancelled, CancelToken, Provider, Usage


class StreamEnd(NamedTuple):
    """How a streamed reply ended: the usage reported, the finish reason, the tool calls it makes."""

    usage: Usage | None
    finish: str | None
    calls: tuple[ToolCall, ...] = ()


def stream_reply(provider: Provider, messages: list[Message], received: list[str], on_text: Callable[[str], object],
                 cancel: CancelToken, *, max_tokens: int, temperature: float,
                 on_progress: Callable[[int, int], object] | None = None,
                 tools: Sequence[ToolSpec] = (), tool_choice: str = AUTO) -> StreamEnd:
    """A reply's pieces into `received` (and to `on_text`) as they arrive; returns how it ended. Raises the
    provider's errors; Cancelled when `cancel` is set, the pieces so far in `received` either way."""
    usage = finish = None
    calls: tuple[ToolCall, ...] = ()
    # Without tools the provider is asked as before tools were offered (a provider may take none).
    chunks = (provider.stream_chat(messages, max_tokens=max_tokens, temperature=temperature, cancel=cancel, tools=tools,
                                   tool_choice=tool_choice)
              if tools else provider.stream_chat(messages, max_tokens=max_tokens, temperature=temperature, cancel=cancel))
    for chunk in chunks:
        if chunk.text:
            received.append(chunk.text)
            on_text(chunk.text)
        elif chunk.progress is not None and on_progress is not None:
            on_progress(*chunk.progress)
        if chunk.done:
            usage, finish, calls = chunk.usage, chunk.finish_reason, chunk.tool_calls
        if cancel.cancelled:
            raise Cancelled(partial="".join(received))
    return StreamEnd(usage, finish, calls)


# What ends on the word before it: no space goes in front of it.
CLOSING = ",.;:!?)]}'\"…"


def joint(before: str, after: str) -> str:
    """What goes between a reply and what the model wrote when asked to continue it: its new turn starts without a
    space, so words ran together ("Ember was" + "I am…" → "Ember wasI am…"). A space, unless either side has one
    or what follows closes on the word before (a word cut in two at the token limit gets one too: the rarer case)."""
    if not before or not after or before[-1].isspace() or after[0].isspace() or after[0] in CLOSING:
        return ""
    return " "
