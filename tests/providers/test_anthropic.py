"""The Anthropic client at the transport layer (httpx.MockTransport), against events shaped like the real API's:
no Anthropic server runs offline, so the recorded shapes stand in for it."""

from __future__ import annotations

import json

import httpx
import pytest
from precis.core.model.messages import Message, ToolCall
from precis.core.providers.anthropic import AnthropicProvider, to_anthropic
from precis.core.providers.base import (
    AuthError,
    ContextLengthExceeded,
    ServerError,
    StreamInterrupted,
    complete,
)
from precis.core.providers.transport import RetryPolicy

SECRET = "sk-ant-api03-SECRETSECRETSECRET"


def sse(*events: tuple[str, dict]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


RECORDED = sse(
    ("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-x",
        "stop_reason": None, "usage": {"input_tokens": 25, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ("ping", {"type": "ping"}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "!"}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                       "usage": {"output_tokens": 15}}),
    ("message_stop", {"type": "message_stop"}),
)


def provider_for(*responses: httpx.Response, seen: list | None = None) -> AnthropicProvider:
    queue = list(responses)

    def handle(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return queue.pop(0)

    return AnthropicProvider("https://api.anthropic.test", "claude-x", SECRET, transport=httpx.MockTransport(handle),
                             retry=RetryPolicy(max_retries=2, base_delay=0.01))


def event_stream(body: bytes) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def test_streamed_reply_with_usage_and_request_shape():
    seen: list[httpx.Request] = []
    provider = provider_for(event_stream(RECORDED), seen=seen)
    messages = [Message("system", "Be kind."), Message("user", "Hi"), Message("user", "there")]
    chunks = list(provider.stream_chat(messages, max_tokens=50))
    assert [c.text for c in chunks if c.text] == ["Hello", "!"]
    assert chunks[-1].done and chunks[-1].finish_reason == "stop"
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (25, 15)
    request = seen[0]
    assert request.url == "https://api.anthropic.test/v1/messages"
    assert request.headers["x-api-key"] == SECRET and request.headers["anthropic-version"] == "2023-06-01"
    body = json.loads(request.content)
    assert body["system"] == "Be kind." and body["stream"] is True and body["max_tokens"] == 50
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"},
                                                             {"type": "text", "text": "there"}]}]


def test_tool_use_and_results_become_blocks():
    messages = [
        Message("system", "Summary of earlier turns."),
        Message("assistant", "Checking.", tool_calls=(ToolCall("tu_1", "bash", {"cmd": "ls"}),)),
        Message("tool", "a.txt", tool_call_id="tu_1", name="bash"),
        Message("tool", "old output", tool_call_id="summarized-away", name="grep"),
    ]
    system, turns = to_anthropic(messages)
    assert system == "Summary of earlier turns."
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[1]["content"][1] == {"type": "tool_use", "id": "tu_1", "name": "bash", "input": {"cmd": "ls"}}
    result, orphan = turns[2]["content"]
    assert result == {"type": "tool_result", "tool_use_id": "tu_1", "content": "a.txt"}
    assert orphan["type"] == "text" and orphan["text"].startswith("[tool grep result]")


def test_error_event_mid_stream_keeps_partial():
    body = RECORDED.split(b"event: content_block_stop")[0] + sse(
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
    with pytest.raises(StreamInterrupted, match="Overloaded") as caught:
        complete(provider_for(event_stream(body)), [Message("user", "Hi")])
    assert caught.value.partial == "Hello!"


def test_stream_without_message_stop_is_interrupted():
    body = RECORDED.split(b"event: message_delta")[0]
    with pytest.raises(StreamInterrupted) as caught:
        complete(provider_for(event_stream(body)), [Message("user", "Hi")])
    assert caught.value.partial == "Hello!"


def test_401_is_auth_error_without_the_key():
    error = {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key {SECRET}"}}
    with pytest.raises(AuthError) as caught:
        complete(provider_for(httpx.Response(401, json=error)), [Message("user", "Hi")])
    assert "api.anthropic.test" in str(caught.value) and "ANTHROPIC_API_KEY" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_prompt_too_long_is_context_length_exceeded():
    error = {"type": "error", "error": {"type": "invalid_request_error",
                                        "message": "prompt is too long: 210000 tokens > 200000 maximum"}}
    with pytest.raises(ContextLengthExceeded, match="210000"):
        complete(provider_for(httpx.Response(400, json=error)), [Message("user", "Hi")])


def test_overloaded_529_is_retried_then_given_up():
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    seen: list = []
    provider = provider_for(*[httpx.Response(529, json=overloaded)] * 3, seen=seen)
    with pytest.raises(ServerError, match="529"):
        complete(provider, [Message("user", "Hi")])
    assert len(seen) == 3


def test_json_schema_is_asked_for_in_the_system_prompt():
    system, _ = to_anthropic([Message("user", "Hi")], {"type": "object"})
    assert "JSON schema" in system and '{"type": "object"}' in system


def test_a_temperature_anthropic_refuses_is_said_before_anything_is_sent():
    seen: list = []
    provider = provider_for(seen=seen)
    with pytest.raises(ValueError, match="Anthropic takes a temperature from 0 to 1, not 1.5"):
        list(provider.stream_chat([Message("user", "hi")], temperature=1.5))
    assert seen == []


@pytest.mark.parametrize("temperature", ["99", "-1"])
def test_precis_chat_refuses_a_temperature_no_provider_takes(temperature, capsys):
    from precis.core.cli.main import main

    assert main(["chat", "--temperature", temperature, "hello"]) == 2
    assert "--temperature" in capsys.readouterr().err


def test_the_request_body_is_what_would_be_sent_without_the_key():
    import json

    seen: list = []
    provider = provider_for(seen=seen)
    body = provider.request_body([Message("system", "Be brief."), Message("user", "hi")], max_tokens=64)
    assert body["system"] == "Be brief." and body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert body["max_tokens"] == 64 and SECRET not in json.dumps(body) and seen == []
