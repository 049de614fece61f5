"""Faults a real model server cannot produce on demand (429, 5xx, cut or malformed streams, stalls, bad keys),
played by a small scripted HTTP server of the tests' own on loopback, so the real httpx stack is exercised."""

from __future__ import annotations

import json
import socket

import pytest
from precis.core.model.messages import Message, ToolCall
from precis.core.providers.base import (
    AuthError,
    ContextLengthExceeded,
    MalformedResponse,
    ModelNotFound,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    ServerError,
    StreamInterrupted,
    complete,
)
from precis.core.providers.openai_compat import OpenAICompatProvider, to_openai_messages
from precis.core.providers.transport import RetryPolicy

from tests.providers.scripted_server import FINISH, USAGE, ScriptedServer, delta, reply, stream

SECRET = "sk-test-SECRETKEY1234567890"
HELLO = [Message("user", "hello")]


def make(server: ScriptedServer, **kwargs) -> OpenAICompatProvider:
    kwargs.setdefault("retry", RetryPolicy(max_retries=3, base_delay=0.01, max_wait=5))
    return OpenAICompatProvider(server.base_url, "test-model", SECRET, **kwargs)


def test_reply_with_usage_and_the_request_shape(server):
    server.steps = [stream([": keep-alive", delta("Hel"), delta("lo"), FINISH, USAGE, "data: [DONE]"])]
    completion = complete(make(server), HELLO, max_tokens=7)
    assert completion.text == "Hello"
    assert completion.usage.prompt_tokens == 11 and completion.usage.completion_tokens == 3
    assert completion.finish_reason == "stop"
    _, path, body = server.requests[0]
    assert path == "/v1/chat/completions"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "test-model" and body["max_tokens"] == 7


def test_429_waits_for_retry_after_then_succeeds(server):
    server.steps = [reply(429, '{"error": {"message": "slow down"}}', {"Retry-After": "1"}),
                    stream([delta("ok"), FINISH, "data: [DONE]"])]
    assert complete(make(server), HELLO).text == "ok"
    (first, _, _), (second, _, _) = server.requests
    assert second - first >= 0.9


def test_429_asking_longer_than_the_cap_is_not_waited_for(server):
    server.steps = [reply(429, "", {"Retry-After": "3600"})]
    with pytest.raises(RateLimited) as caught:
        complete(make(server), HELLO)
    assert caught.value.retry_after == 3600
    assert "3600 s" in str(caught.value) and "429" in str(caught.value)
    assert len(server.requests) == 1


def test_5xx_is_retried_then_succeeds(server):
    server.steps = [reply(503, "busy"), reply(502, "bad gateway"), stream([delta("fine"), FINISH, "data: [DONE]"])]
    assert complete(make(server), HELLO).text == "fine"
    assert len(server.requests) == 3


def test_5xx_gives_up_after_bounded_attempts(server):
    server.steps = [reply(500, '{"error": {"message": "boom"}}')] * 10
    with pytest.raises(ServerError) as caught:
        complete(make(server), HELLO)
    assert len(server.requests) == 4
    message = str(caught.value)
    assert server.base_url in message and "500" in message and "boom" in message and "4 attempts" in message


def test_stream_cut_mid_reply_keeps_the_partial_text(server):
    server.steps = [stream([delta("The answer "), delta("is")])]
    with pytest.raises(StreamInterrupted) as caught:
        complete(make(server), HELLO)
    assert caught.value.partial == "The answer is"


def test_malformed_stream_data_before_any_text(server):
    server.steps = [stream(["data: {not json"])]
    with pytest.raises(MalformedResponse, match="not JSON"):
        complete(make(server), HELLO)


def test_malformed_stream_data_after_text_keeps_the_partial(server):
    server.steps = [stream([delta("Partial"), "data: [1, 2"])]
    with pytest.raises(StreamInterrupted, match="not JSON") as caught:
        complete(make(server), HELLO)
    assert caught.value.partial == "Partial"


def test_read_timeout_before_text(server):
    server.steps = [stream([], stall=2.0)]
    with pytest.raises(ProviderTimeout):
        complete(make(server, timeout=0.3), HELLO)


def test_read_timeout_mid_reply_keeps_the_partial(server):
    # The time limit leaves room for the first chunk on a loaded machine; the stall is far past it.
    server.steps = [stream([delta("so far")], stall=10.0)]
    with pytest.raises(StreamInterrupted, match="timed out") as caught:
        complete(make(server, timeout=2.0), HELLO)
    assert caught.value.partial == "so far"


def test_401_names_server_and_status_and_never_the_key(server):
    echoed = f'{{"error": {{"message": "Incorrect API key provided: {SECRET}"}}}}'
    server.steps = [reply(401, echoed)]
    with pytest.raises(AuthError) as caught:
        complete(make(server), HELLO)
    message = str(caught.value)
    assert server.base_url in message and "401" in message and "OPENAI_API_KEY" in message
    assert SECRET not in message and SECRET[:12] not in message
    assert len(server.requests) == 1


def test_404_names_the_model(server):
    server.steps = [reply(404, '{"error": {"message": "model not found"}}')]
    with pytest.raises(ModelNotFound, match="test-model"):
        complete(make(server), HELLO)


def test_context_error_from_server_is_context_length_exceeded(server):
    server.steps = [reply(400, '{"error": {"message": "This model\'s maximum context length is 4096 tokens."}}')]
    with pytest.raises(ContextLengthExceeded, match="4096"):
        complete(make(server), HELLO)


@pytest.mark.slow
def test_no_key_appears_in_any_error(server):
    server.steps = [reply(code, json.dumps({"error": {"message": f"bad {SECRET}"}})) for code in (400, 403, 404)]
    server.steps += [reply(500, SECRET)] * 4 + [stream([f"data: {SECRET}"])]
    for _ in range(5):
        with pytest.raises(ProviderError) as caught:
            complete(make(server), HELLO)
        assert SECRET not in str(caught.value)


def test_connection_refused_is_unavailable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = OpenAICompatProvider(f"http://user:{SECRET}@127.0.0.1:{port}/v1", "m", SECRET)
    with pytest.raises(ProviderUnavailable) as caught:
        complete(provider, HELLO)
    assert f"127.0.0.1:{port}" in str(caught.value) and SECRET not in str(caught.value)


def test_window_comes_from_models_metadata(server):
    server.steps = [reply(200, json.dumps({"data": [{"id": "test-model", "context_length": 32768}]}))]
    provider = make(server)
    assert provider.context_window() == 32768
    assert provider.context_window() == 32768
    assert len(server.requests) == 1


def test_tool_pairs_go_natively_and_orphans_as_text():
    messages = [
        Message("assistant", "Looking.", tool_calls=(ToolCall("a", "ls", {"path": "."}), ToolCall("b", "cat", {}))),
        Message("tool", "x.py", tool_call_id="a", name="ls"),
        Message("tool", "stale", tool_call_id="gone", name="grep"),
    ]
    assistant, result, orphan = to_openai_messages(messages)
    assert [c["id"] for c in assistant["tool_calls"]] == ["a"]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"path": "."}
    assert "[called tool cat" in assistant["content"]
    assert result == {"role": "tool", "tool_call_id": "a", "content": "x.py"}
    assert orphan["role"] == "user" and orphan["content"].startswith("[tool grep result]")
