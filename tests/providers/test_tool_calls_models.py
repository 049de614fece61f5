"""Tool calls from real models: the embedded SmolLM2 in its model process, and llama.cpp's own server over loopback
(model_server, with chatml_tools.jinja)."""

from __future__ import annotations

import sys
from pathlib import Path

import jsonschema
import pytest
from precis.core.chat.session import ChatSession
from precis.core.chat.tool_loop import DENY, ToolLoop, tool_result
from precis.core.model.messages import Message
from precis.core.model.tools import AUTO, NONE, ToolSpec
from precis.core.providers.base import CancelToken, MalformedResponse
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.providers.tool_calls import UNPARSED
from precis.core.storage.store import open_store
from precis.core.tools.mcp_config import ServerConfig
from precis.core.tools.mcp_servers import McpServers
from precis.core.tools.toolbox import Toolbox
from precis.core.tools.workspace import Workspace

pytestmark = pytest.mark.model

WEATHER = ToolSpec("get_weather", "The current weather in a city.",
                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, read_only=True)
READ = ToolSpec("read_file", "Read a text file.",
                {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}, read_only=True)
ASK = [Message("user", "What is the weather in Paris?")]
BIN = Path(sys.executable).parent  # the MCP servers from PyPI, installed beside this Python


def test_forced_call_from_the_embedded_model(local_provider):
    chunks = list(local_provider.stream_chat(ASK, max_tokens=60, temperature=0, tools=[WEATHER],
                                             tool_choice="get_weather"))
    assert not any(c.text for c in chunks)  # the arguments are the call's, not reply text
    final = chunks[-1]
    assert final.done and final.finish_reason == "tool_calls"
    (call,) = final.tool_calls
    assert call.name == "get_weather" and call.id
    assert isinstance(call.arguments.get("city"), str)  # constrained to the parameter schema
    # The tools' description is in the prompt the model read, and counted.
    assert final.usage.prompt_tokens == len(local_provider.prompt_tokens(ASK, [WEATHER], "get_weather"))
    assert final.usage.prompt_tokens > len(local_provider.prompt_tokens(ASK))


def test_none_leaves_the_tools_out_and_makes_no_call(local_provider):
    chunks = list(local_provider.stream_chat(ASK, max_tokens=12, temperature=0, tools=[WEATHER], tool_choice=NONE))
    assert "".join(c.text for c in chunks).strip()
    assert chunks[-1].tool_calls == () and chunks[-1].finish_reason in ("stop", "length")
    assert chunks[-1].usage.prompt_tokens == len(local_provider.prompt_tokens(ASK))


@pytest.mark.slow
def test_a_call_the_model_writes_under_auto_ends_the_reply(local_provider):
    """SmolLM2 rarely calls a tool by itself; shown a call to repeat, it writes one (greedy decoding) after a line
    of text: the text streams, the call is cut from it and returned, and the model stops there."""
    line = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    messages = [Message("user", f"{line}\nRepeat the line above.")]
    chunks = list(local_provider.stream_chat(messages, max_tokens=150, temperature=0, tools=[WEATHER],
                                             tool_choice=AUTO))
    text = "".join(c.text for c in chunks)
    assert "<tool_call>" not in text
    final = chunks[-1]
    assert final.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert final.usage.completion_tokens < 150  # stopped at the call's end, not at max_tokens


def test_llama_servers_forced_call_comes_back_valid_for_its_schema(llama_server):
    """llama.cpp's server, serving SmolLM2 with chatml_tools.jinja, constrains the reply to a call of the tool named."""
    provider = OpenAICompatProvider(llama_server, model="smollm2")
    try:
        # The tool forced is not the one the question asks for: left to itself, the model calls get_weather.
        chunks = list(provider.stream_chat(ASK, max_tokens=60, temperature=0, tools=[WEATHER, READ],
                                           tool_choice="read_file"))
    finally:
        provider.close()
    final = chunks[-1]
    assert final.done and final.finish_reason == "tool_calls" and not "".join(c.text for c in chunks).strip()
    (call,) = final.tool_calls
    assert call.name == "read_file" and call.id
    jsonschema.validate(call.arguments, READ.parameters)


def test_the_tool_loop_runs_the_call_llama_servers_model_was_made_to_write(tmp_path, llama_server, workspace):
    """/use through llama.cpp's server: the first reply calls read_file with valid arguments, the loop runs it on the
    workspace and stores the result; the model is then called again with it (its auto calls bounded by the limit)."""
    toolbox = Toolbox(Workspace(workspace))
    with open_store(tmp_path / "data") as store:
        chat_id = store.create_chat("tools", settings={"context_window": 8192})
        session = ChatSession(store, chat_id, OpenAICompatProvider(llama_server, model="smollm2"))
        session.build_engine(estimate=False)
        session.max_reply_tokens, session.temperature = 60, 0.0
        session.add_messages([Message(role="user", content="What does main.py do?")])
        loop = ToolLoop(session, toolbox, ask=lambda _call, _preview: DENY, max_steps=1)
        turn = loop.answer(cancel=CancelToken(), on_text=lambda _p, _piece: None, force="read_file")
        stored = store.load_messages(chat_id)
    first = turn.steps[0]
    assert first.call.name == "read_file" and not first.asked
    jsonschema.validate(first.call.arguments, {s.name: s for s in toolbox.specs()}["read_file"].parameters)
    # What the loop stored is what read_file gives for these arguments, answering the call by its id.
    assert first.result.content == tool_result(first.call, toolbox.run(first.call)).content
    assert [(m.role, m.tool_call_id) for m in stored[:3]] == [("user", None), ("assistant", None),
                                                             ("tool", first.call.id)]
    assert len(turn.replies) == 2  # called again with the result


@pytest.mark.model
def test_the_local_models_request_is_the_prompt_text_it_reads(local_provider):
    from precis.core.providers.local import load_vocabulary

    messages = [Message("system", "Be brief."), Message("user", "What is a lighthouse for?")]
    body = local_provider.request_body(messages, tools=[WEATHER])
    assert "What is a lighthouse for?" in body["prompt"] and "get_weather" in body["prompt"]
    # Its tokens are exactly the ones the model is given.
    assert load_vocabulary(local_provider.path).tokenize(body["prompt"], special=True) == \
        local_provider.prompt_tokens(messages, [WEATHER])


MCP_ASKS = {"get_current_time": "What time is it in New York?",
            "git_status": "What changed in the repository in /tmp/repo?",
            "git_log": "Show the last commits of the repository in /tmp/repo.",
            "git_create_branch": "Make a branch called feature in /tmp/repo."}


def test_forced_calls_on_the_embedded_model_fit_the_tools_own_schema_and_end_in_time(local_provider):
    """/use of mcp-server-time's and mcp-server-git's tools on SmolLM2 came back with keys it made up and never
    closed, or newline after newline, up to the reply's limit: JSON cut off, which no tool runs. Held to compact JSON
    of the schema's own properties, each string a share of the reply, every call parses, fits the tool's schema and
    ends well before the limit (greedy decoding, so the same each run)."""
    with McpServers([ServerConfig("time", command=str(BIN / "mcp-server-time")),
                     ServerConfig("git", command=str(BIN / "mcp-server-git"))]) as servers:
        assert servers.wait_started(60)
        offered = {status.name: list(status.tools) for status in servers.statuses()}
    for server, specs in offered.items():
        for spec in specs:
            if spec.name not in MCP_ASKS:
                continue
            final = list(local_provider.stream_chat([Message("user", MCP_ASKS[spec.name])], max_tokens=64,
                                                    temperature=0, tools=specs, tool_choice=spec.name))[-1]
            (call,) = final.tool_calls
            assert UNPARSED not in call.arguments, f"{server}/{spec.name}: {call.arguments[UNPARSED]!r}"
            jsonschema.validate(call.arguments, spec.parameters)
            assert final.usage.completion_tokens < 64


def test_a_schema_llama_cpp_cannot_make_a_grammar_of_is_an_error_not_free_text(local_provider):
    """llama.cpp generates unconstrained when llguidance cannot compile the schema (it only logs why): the forced
    reply would be prose up to the limit, taken for arguments. It is stopped at its first piece and said instead."""
    remote = ToolSpec("fetch_record", "A record by its id.", {
        "type": "object", "properties": {"id": {"$ref": "https://schemas.example.com/id.json"}}, "required": ["id"]})
    with pytest.raises(MalformedResponse, match="could not be held to the input schema of fetch_record"):
        list(local_provider.stream_chat(ASK, max_tokens=64, temperature=0, tools=[remote], tool_choice=remote.name))


def test_a_keyword_llama_cpp_does_not_know_is_passed_over_and_the_rest_still_holds(local_provider):
    """A server's schema may use a string format llguidance lacks; refusing the whole schema would leave the reply
    free. The format is ignored, the object still constrained (the toolbox checks the arguments against it all the
    same)."""
    fetch = ToolSpec("fetch", "Fetch a web page.", {
        "type": "object", "properties": {"url": {"type": "string", "format": "iri-reference"}}, "required": ["url"]})
    final = list(local_provider.stream_chat([Message("user", "Open https://example.com")], max_tokens=64,
                                            temperature=0, tools=[fetch], tool_choice=fetch.name))[-1]
    (call,) = final.tool_calls
    assert list(call.arguments) == ["url"] and isinstance(call.arguments["url"], str)
