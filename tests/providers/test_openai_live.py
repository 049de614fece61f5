"""The httpx OpenAI-compatible client against a real server: llama.cpp's (xllamacpp's), serving SmolLM2 on loopback."""

from __future__ import annotations

import json
import threading

import pytest
from precis.core.model.messages import Message, ToolCall
from precis.core.providers.base import Cancelled, CancelToken, ContextLengthExceeded, complete
from precis.core.providers.openai_compat import OpenAICompatProvider
from pydantic import BaseModel

pytestmark = pytest.mark.model


@pytest.fixture
def provider(llama_server):
    provider = OpenAICompatProvider(llama_server, model="smollm2")
    yield provider
    provider.close()


def test_reply_streams_in_several_chunks_then_a_final_chunk(provider):
    chunks = list(provider.stream_chat([Message("user", "Tell me about the sea.")], max_tokens=24, temperature=0))
    texts = [c.text for c in chunks if c.text]
    assert len(texts) > 3
    assert chunks[-1].done and chunks[-1].finish_reason in ("stop", "length")
    assert not any(c.done for c in chunks[:-1])


def test_cancel_mid_stream_closes_and_keeps_partial_text(provider):
    cancel = CancelToken()
    received = []
    with pytest.raises(Cancelled) as caught:
        for chunk in provider.stream_chat([Message("user", "Write a long story about a dragon.")],
                                          max_tokens=400, temperature=0, cancel=cancel):
            received.append(chunk.text)
            if len(received) == 3:
                threading.Thread(target=cancel.cancel).start()
    assert caught.value.partial.startswith("".join(received[:3]))
    assert len(received) < 400
    # The server is still usable: the cancelled request did not wedge it.
    assert complete(provider, [Message("user", "Hi")], max_tokens=4).text


@pytest.mark.slow
def test_prompt_over_the_window_raises_context_length_exceeded(provider):
    with pytest.raises(ContextLengthExceeded) as caught:
        list(provider.stream_chat([Message("user", "hello " * 9000)], max_tokens=8))
    assert provider.server in str(caught.value)
    assert "8192" in str(caught.value)


def test_list_models_and_default_window(provider):
    assert len(provider.list_models()) == 1
    assert provider.context_window() == 8192


class Verdict(BaseModel):
    topic: str
    points: list[str]


@pytest.mark.slow
def test_json_schema_output_parses_against_the_schema(provider):
    """This server rejects response_format json_schema; the client falls back to json_object with the schema."""
    messages = [Message("system", "Answer in JSON."), Message("user", "The team chose SQLite for storage.")]
    completion = complete(provider, messages, max_tokens=80, temperature=0, json_schema=Verdict.model_json_schema())
    if completion.finish_reason == "stop":
        Verdict.model_validate(json.loads(completion.text))
    else:  # cut by max_tokens: still the schema's shape so far
        assert completion.text.lstrip().startswith("{")


@pytest.mark.slow
def test_conversation_with_tool_calls_is_accepted(provider):
    messages = [
        Message("system", "You are terse."),
        Message("user", "What files are here?"),
        Message("assistant", "", tool_calls=(ToolCall("call_1", "ls", {"path": "."}),)),
        Message("tool", "main.py\nREADME.md", tool_call_id="call_1", name="ls"),
        Message("user", "Which one is the readme?"),
    ]
    completion = complete(provider, messages, max_tokens=16, temperature=0)
    assert completion.text.strip()
