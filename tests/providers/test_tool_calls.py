"""Tool calls on the wire of the hosted providers, and the embedded model's call form, without a model.

The OpenAI-compatible streams here come from the scripted server (tests/providers/scripted_server.py), a stand-in:
parallel calls, arguments cut into many pieces and malformed arguments are what a real server does not produce on
demand. Anthropic's streams are shaped like the real API's events (no Anthropic server runs offline), played through
httpx.MockTransport as in test_anthropic.py.
"""

from __future__ import annotations

import json
from itertools import zip_longest

import httpx
import pytest
from precis.core.model.messages import Message
from precis.core.model.tools import AUTO, NONE, ToolSpec, specs_json
from precis.core.providers.anthropic import AnthropicProvider
from precis.core.providers.base import MalformedResponse
from precis.core.providers.local_tools import CallWatch
from precis.core.providers.openai_compat import OpenAICompatProvider

from tests.providers.scripted_server import FINISH, USAGE, ScriptedServer, delta, stream

READ = ToolSpec("read_file", "Read a file of the workspace.",
                {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}, read_only=True)
GREP = ToolSpec("grep", "Search the workspace.",
                {"type": "object", "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}}})
TOOLS = [READ, GREP]
ASK = [Message("user", "What does main.py import?")]


def call_delta(index: int, *, call_id: str | None = None, name: str | None = None, arguments: str | None = None) -> str:
    fragment: dict = {"index": index, "function": {}}
    if call_id is not None:
        fragment.update(id=call_id, type="function")
    if name is not None:
        fragment["function"]["name"] = name
    if arguments is not None:
        fragment["function"]["arguments"] = arguments
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}, "finish_reason": None}]})


CALLS_FINISH = "data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})


def in_pieces(text: str, size: int = 3) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def openai(server: ScriptedServer) -> OpenAICompatProvider:
    return OpenAICompatProvider(server.base_url, "test-model", "sk-test")


def test_parallel_calls_are_assembled_from_interleaved_pieces(server):
    read_args, grep_args = '{"path": "main.py"}', '{"pattern": "^import", "path": "."}'
    lines = [call_delta(0, call_id="call_a", name="read_file"), call_delta(1, call_id="call_b", name="grep")]
    # The two calls' arguments arrive a few characters at a time, alternating.
    for pieces in zip_longest(in_pieces(read_args), in_pieces(grep_args)):
        lines += [call_delta(index, arguments=piece) for index, piece in enumerate(pieces) if piece is not None]
    server.steps = [stream([*lines, CALLS_FINISH, USAGE, "data: [DONE]"])]
    chunks = list(openai(server).stream_chat(ASK, tools=TOOLS, tool_choice=AUTO))
    final = chunks[-1]
    assert final.done and final.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in final.tool_calls] == [
        ("call_a", "read_file", {"path": "main.py"}), ("call_b", "grep", {"pattern": "^import", "path": "."})]
    assert not any(c.tool_calls for c in chunks[:-1])
    body = server.requests[0][2]
    assert body["tool_choice"] == "auto"
    assert body["tools"][0] == {"type": "function", "function": {
        "name": "read_file", "description": "Read a file of the workspace.", "parameters": READ.parameters}}


def test_a_forced_call_offers_that_tool_alone_and_requires_a_call(server):
    # "required" with one tool forces it on OpenAI as the named form does, and llama.cpp's server takes only this.
    server.steps = [stream([call_delta(0, call_id="call_f", name="grep", arguments='{"pattern": "TODO"}'),
                            CALLS_FINISH, "data: [DONE]"])]
    final = list(openai(server).stream_chat(ASK, tools=TOOLS, tool_choice="grep"))[-1]
    body = server.requests[0][2]
    assert body["tool_choice"] == "required" and [t["function"]["name"] for t in body["tools"]] == ["grep"]
    assert final.tool_calls[0].arguments == {"pattern": "TODO"}


def test_a_call_after_some_text_streams_the_text_first_and_gets_an_id(server):
    # A server that sends no call id (some local servers do not): the call gets one, to match its result to.
    server.steps = [stream([delta("Let me "), delta("look."), call_delta(0, name="read_file"),
                            call_delta(0, arguments='{"path": '), call_delta(0, arguments='"main.py"}'),
                            FINISH, "data: [DONE]"])]
    chunks = list(openai(server).stream_chat(ASK, tools=TOOLS))
    assert [c.text for c in chunks if c.text] == ["Let me ", "look."]
    (call,) = chunks[-1].tool_calls
    assert call.name == "read_file" and call.arguments == {"path": "main.py"} and call.id
    # The server said "stop"; the reply has a call, so it is a reply with calls.
    assert chunks[-1].finish_reason == "tool_calls"


def test_malformed_arguments_are_kept_raw_for_the_model_to_retry(server):
    cut, not_an_object = '{"path": "main', '"main.py"'
    server.steps = [stream([call_delta(0, call_id="c1", name="read_file", arguments=cut),
                            call_delta(1, call_id="c2", name="read_file", arguments=not_an_object),
                            call_delta(2, call_id="c3", name="grep"), CALLS_FINISH, "data: [DONE]"])]
    calls = list(openai(server).stream_chat(ASK, tools=TOOLS))[-1].tool_calls
    assert [c.arguments for c in calls] == [{"_unparsed": cut}, {"_unparsed": not_an_object}, {}]


def test_a_call_without_a_function_name_is_a_malformed_response(server):
    server.steps = [stream([call_delta(0, call_id="c1", arguments="{}"), CALLS_FINISH, "data: [DONE]"])]
    with pytest.raises(MalformedResponse, match="tool call 0 without the name"):
        list(openai(server).stream_chat(ASK, tools=TOOLS))


def test_none_asks_for_no_call_and_gets_text(server):
    server.steps = [stream([delta("It imports os."), FINISH, "data: [DONE]"])]
    chunks = list(openai(server).stream_chat(ASK, tools=TOOLS, tool_choice=NONE))
    assert server.requests[0][2]["tool_choice"] == "none"
    assert chunks[-1].tool_calls == () and chunks[-1].finish_reason == "stop"


def test_no_tools_sends_no_tool_fields(server):
    server.steps = [stream([delta("Hi"), FINISH, "data: [DONE]"])]
    list(openai(server).stream_chat(ASK))
    assert "tools" not in server.requests[0][2] and "tool_choice" not in server.requests[0][2]


@pytest.mark.parametrize("tools", [TOOLS, []])
def test_forcing_a_tool_not_offered_is_refused_before_sending(server, tools):
    with pytest.raises(ValueError, match="'write_file' is not one of the tools offered") as caught:
        list(openai(server).stream_chat(ASK, tools=tools, tool_choice="write_file"))
    assert ("read_file, grep" if tools else "no tools") in str(caught.value)
    assert server.requests == []


def test_calls_and_results_go_back_natively_on_the_next_request(server):
    server.steps = [stream([call_delta(0, call_id="call_a", name="read_file", arguments='{"path": "main.py"}'),
                            CALLS_FINISH, "data: [DONE]"]),
                    stream([delta("It imports os."), FINISH, "data: [DONE]"])]
    provider = openai(server)
    calls = list(provider.stream_chat(ASK, tools=TOOLS))[-1].tool_calls
    history = [*ASK, Message("assistant", "", tool_calls=calls),
               Message("tool", "import os", tool_call_id="call_a", name="read_file")]
    list(provider.stream_chat(history, tools=TOOLS))
    sent = server.requests[1][2]["messages"]
    assert sent[1]["tool_calls"] == [{"id": "call_a", "type": "function",
                                      "function": {"name": "read_file", "arguments": '{"path": "main.py"}'}}]
    assert sent[2] == {"role": "tool", "tool_call_id": "call_a", "content": "import os"}


# ------------------------------------------------------------------------------------------------- Anthropic


def sse(*events: dict) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def tool_use_stream(*, split: int = 4) -> bytes:
    """A reply with text, then two tool_use blocks whose input arrives in input_json_delta pieces."""
    events: list[dict] = [
        {"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": [],
                                              "usage": {"input_tokens": 90, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Looking."}},
        {"type": "content_block_stop", "index": 0}]
    for index, (call_id, name, arguments) in enumerate(
            [("toolu_1", "read_file", '{"path": "main.py"}'), ("toolu_2", "grep", "")], start=1):
        events.append({"type": "content_block_start", "index": index,
                       "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}})
        events += [{"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece}}
                   for piece in in_pieces(arguments, split)]
        events.append({"type": "content_block_stop", "index": index})
    events += [{"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 40}},
               {"type": "message_stop"}]
    return sse(*events)


def anthropic(*bodies: bytes, seen: list) -> AnthropicProvider:
    queue = list(bodies)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=queue.pop(0))

    return AnthropicProvider("https://api.anthropic.test", "claude-x", "sk-ant-test",
                             transport=httpx.MockTransport(handle))


def test_anthropic_tool_use_blocks_become_calls():
    seen: list = []
    chunks = list(anthropic(tool_use_stream(), seen=seen).stream_chat(ASK, tools=TOOLS, tool_choice=AUTO))
    assert [c.text for c in chunks if c.text] == ["Looking."]
    final = chunks[-1]
    assert final.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in final.tool_calls] == [
        ("toolu_1", "read_file", {"path": "main.py"}), ("toolu_2", "grep", {})]
    assert seen[0]["tools"][0] == {"name": "read_file", "description": "Read a file of the workspace.",
                                   "input_schema": READ.parameters}
    assert seen[0]["tool_choice"] == {"type": "auto"}


@pytest.mark.parametrize(("choice", "sent"), [("grep", {"type": "tool", "name": "grep"}), (NONE, {"type": "none"})])
def test_anthropic_tool_choice(choice, sent):
    seen: list = []
    list(anthropic(tool_use_stream(), seen=seen).stream_chat(ASK, tools=TOOLS, tool_choice=choice))
    assert seen[0]["tool_choice"] == sent


def test_anthropic_calls_and_results_go_back_as_blocks():
    seen: list = []
    reply = sse({"type": "message_start", "message": {"usage": {"input_tokens": 120}}},
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "It imports os."}},
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}},
                {"type": "message_stop"})
    provider = anthropic(tool_use_stream(), reply, seen=seen)
    calls = list(provider.stream_chat(ASK, tools=TOOLS))[-1].tool_calls
    history = [*ASK, Message("assistant", "Looking.", tool_calls=calls),
               Message("tool", "import os", tool_call_id="toolu_1", name="read_file"),
               Message("tool", "no match", tool_call_id="toolu_2", name="grep")]
    final = list(provider.stream_chat(history, tools=TOOLS))[-1]
    assert final.finish_reason == "stop" and final.tool_calls == ()
    assistant, results = seen[1]["messages"][1:]
    assert assistant["content"][1:] == [
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "main.py"}},
        {"type": "tool_use", "id": "toolu_2", "name": "grep", "input": {}}]
    assert results == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "import os"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no match"}]}


# ------------------------------------------------------------------------------------------------- prompt size


def test_specs_json_holds_what_every_backend_sends():
    assert specs_json([]) == ""
    assert json.loads(specs_json(TOOLS)) == [
        {"name": spec.name, "description": spec.description, "parameters": spec.parameters} for spec in TOOLS]


# ---------------------------------------------------------------------- the embedded model's call form, in text


def watched(pieces: list[str]) -> tuple[str, CallWatch]:
    watch = CallWatch()
    return "".join(watch.feed(piece) for piece in pieces), watch


def test_a_call_written_in_pieces_is_cut_from_the_text():
    shown, watch = watched(["Sure.\n<", "tool", '_call>{"name": "grep", ', '"arguments": {"pattern": "x"}}</tool_', "call>"])
    assert shown == "Sure.\n"
    assert watch.call_closed
    rest, call = watch.finish()
    assert rest == "" and call.name == "grep" and call.arguments == {"pattern": "x"} and call.id


def test_text_that_only_looks_like_a_call_is_text():
    shown, watch = watched(["a <", "b> and <tool", "s>"])
    assert shown == "a <b> and <tools>" and not watch.call_closed
    shown, watch = watched(["<tool_call>", "not json"])
    assert shown == "" and watch.finish() == ("<tool_call>not json", None)


def test_arguments_written_as_a_string_or_malformed_are_kept():
    _, watch = watched(['<tool_call>{"name": "grep", "arguments": "{\\"pattern\\": \\"x\\"}"}</tool_call>'])
    assert watch.finish()[1].arguments == {"pattern": "x"}
    _, watch = watched(['<tool_call>{"name": "grep", "arguments": "{\\"pattern"}</tool_call>'])
    assert watch.finish()[1].arguments == {"_unparsed": '{"pattern'}
