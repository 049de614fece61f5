"""Test doubles for fault paths only: real backends are tested against real servers elsewhere."""

from __future__ import annotations

from dataclasses import dataclass, field

from precis.core.model.messages import Message
from precis.core.providers.base import ChatChunk, ProviderError, Usage


@dataclass
class ScriptedProvider:
    """Replays scripted replies or raises scripted errors, to inject failures a real model cannot produce on demand."""

    replies: list[str | tuple[str, str] | Exception] = field(default_factory=list)
    window: int = 8192
    name: str = "scripted"
    model: str = "scripted"
    calls: list[list[Message]] = field(default_factory=list)

    def context_window(self) -> int:
        return self.window

    def stream_chat(self, messages, *, max_tokens=512, temperature=0.7, json_schema=None, cancel=None):
        self.calls.append(list(messages))
        if not self.replies:
            raise ProviderError("scripted provider has no reply left")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        # (text, finish reason): a reply that ends as scripted, e.g. "length" (cut at its token limit)
        reply, finish = reply if isinstance(reply, tuple) else (reply, "stop")
        yield ChatChunk(text=reply)
        yield ChatChunk(done=True, usage=Usage(0, 0), finish_reason=finish)

    def request_body(self, messages, *, max_tokens=512, temperature=0.7, tools=(), tool_choice="auto"):
        return {"model": self.model, "messages": [[m.role, m.content] for m in messages]}

    def count_tokens(self, text: str) -> int | None:
        return None

    def tokenizer_name(self) -> str | None:
        return None

    def list_models(self) -> list[str]:
        return [self.model]
