"""The terminal chat's answer to a server's context-length error: summarize, then retry once."""

from __future__ import annotations

import io
from types import SimpleNamespace

from precis.core.cli.chat import chat_turn
from precis.core.context.engine import Budget, ContextEngine
from precis.core.model.messages import Message
from precis.core.providers.base import ContextLengthExceeded

from tests.fakes import ScriptedProvider

ARGS = SimpleNamespace(max_tokens=32, temperature=0.0)


def long_chat() -> ContextEngine:
    engine = ContextEngine(Budget(window=8192, reserve_output=512))
    for i in range(20):
        engine.append(Message(role="user" if i % 2 == 0 else "assistant", content=f"Point {i} about the lexer."),
                      auto=False)
    return engine


def test_context_length_error_summarizes_and_retries_once():
    # A server refusing the prompt cannot be made to on demand: the scripted provider injects the refusal.
    provider = ScriptedProvider([ContextLengthExceeded("prompt is too long: 9000 > 8192"), "Short answer."])
    engine = long_chat()
    out, err = io.StringIO(), io.StringIO()
    reply = chat_turn(engine, provider, ARGS, out, err, engine.append)
    assert reply.text == "Short answer." and reply.error is None
    first, retry = provider.calls
    assert len(retry) < len(first) and retry[0].content.startswith("[Summary 1")
    assert len(engine.records) == 1


def test_a_second_refusal_is_reported_not_retried_forever():
    provider = ScriptedProvider([ContextLengthExceeded("too long"), ContextLengthExceeded("still too long")])
    engine = long_chat()
    out, err = io.StringIO(), io.StringIO()
    reply = chat_turn(engine, provider, ARGS, out, err, engine.append)
    assert isinstance(reply.error, ContextLengthExceeded) and len(provider.calls) == 2
    assert "still too long" in err.getvalue()
