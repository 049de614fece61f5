"""Tool calls from real models: the embedded SmolLM2 in its model process, and llama.cpp's own server over loopback."""

from __future__ import annotations

import pytest
from precis.core.model.messages import Message
from precis.core.model.tools import AUTO, NONE, ToolSpec
from precis.core.providers.openai_compat import OpenAICompatProvider

pytestmark = pytest.mark.model

WEATHER = ToolSpec("get_weather", "The current weather in a city.",
                   {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, read_only=True)
ASK = [Message("user", "What is the weather in Paris?")]


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


def test_llama_server_accepts_tools_and_a_forced_choice(llama_server):
    """A server that cannot call tools with this model still answers. llama.cpp's takes the request, but SmolLM2's
    chat template has no tools, so the server neither shows them to the model nor forces the call (docs/model.md)."""
    provider = OpenAICompatProvider(llama_server, model="smollm2")
    try:
        chunks = list(provider.stream_chat(ASK, max_tokens=16, temperature=0, tools=[WEATHER],
                                           tool_choice="get_weather"))
    finally:
        provider.close()
    final = chunks[-1]
    assert final.done and ("".join(c.text for c in chunks).strip() or final.tool_calls)


@pytest.mark.model
def test_the_local_models_request_is_the_prompt_text_it_reads(local_provider):
    from precis.core.providers.local import load_vocabulary

    messages = [Message("system", "Be brief."), Message("user", "What is a lighthouse for?")]
    body = local_provider.request_body(messages, tools=[WEATHER])
    assert "What is a lighthouse for?" in body["prompt"] and "get_weather" in body["prompt"]
    # Its tokens are exactly the ones the model is given.
    assert load_vocabulary(local_provider.path).tokenize(body["prompt"], special=True) == \
        local_provider.prompt_tokens(messages, [WEATHER])
