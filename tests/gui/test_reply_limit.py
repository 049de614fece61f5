"""A reply cut at its token limit says so in the window, as `precis chat` does on the terminal."""

from __future__ import annotations

import json

import pytest
from precis.core.providers.openai_compat import OpenAICompatProvider

from tests.gui.test_window import idle, open_new_chat
from tests.providers.scripted_server import FINISH, delta, reply, stream
from tests.timing import WAIT_MS


@pytest.mark.slow
def test_a_reply_stopped_by_its_token_limit_says_so_in_the_status_bar(qtbot, make_window, store, server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cut = "data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
    models = reply(200, json.dumps({"data": [{"id": "m"}]}))  # the window lists the server's models first
    server.steps = [models, stream([delta("The three reasons are: first, the"), cut, "data: [DONE]"])]
    window = make_window(OpenAICompatProvider(base_url=server.base_url, model="m"))
    open_new_chat(qtbot, window, store, reserve_output=64)
    window.submit("Why?")
    qtbot.waitUntil(lambda: idle(window) and window.chat.snapshot.messages[-1].role == "assistant"
                    and bool(window.chat.snapshot.messages[-1].content), timeout=WAIT_MS)
    assert server.requests[-1][2]["max_tokens"] == 64
    assert window.chat.snapshot.messages[-1].content == "The three reasons are: first, the"
    assert window.statusBar().currentMessage() == (
        "The reply reached its limit of 64 tokens and stopped there; Continue on it goes on (the chat's setting "
        "'Tokens reserved for the reply' sets the limit)")

    server.steps = [stream([delta("Done."), FINISH, "data: [DONE]"])]
    window.submit("Thanks")  # while the first reply's notice is still up: it is not said of this one
    qtbot.waitUntil(lambda: idle(window) and window.chat.snapshot.messages[-1].content == "Done.", timeout=WAIT_MS)
    assert "limit" not in window.statusBar().currentMessage()
