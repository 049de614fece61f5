"""In the window, a reply that fails before its first word leaves no empty reply row: the message stays, the box
says why and how to ask again, and Regenerate (Ctrl+R) answers it. A scripted server on loopback refuses (a real
server does not on demand); the real window and store."""

from __future__ import annotations

import json

from precis.core.providers.openai_compat import OpenAICompatProvider

from tests.gui.test_window import idle, open_new_chat
from tests.providers.scripted_server import FINISH, delta, reply, stream
from tests.timing import WAIT_MS

MODELS = reply(200, json.dumps({"data": [{"id": "m"}]}))  # the window lists the server's models first
REFUSED = reply(400, '{"error": {"message": "the model m is not loaded"}}')


def shown_rows(window) -> list[tuple[str, str]]:
    return [(row.message.role, row.message.content) for row in window.conversation.rows_model.rows()
            if row.message is not None]


def test_a_refused_reply_leaves_the_message_and_regenerate_answers_it(qtbot, make_window, store, server,
                                                                      monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.steps = [MODELS, REFUSED]
    window = make_window(OpenAICompatProvider(base_url=server.base_url, model="m"))
    chat_id = open_new_chat(qtbot, window, store)
    with qtbot.waitSignal(window.reply_finished, timeout=WAIT_MS):
        window.submit("Which ferry leaves first?")
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert shown_rows(window) == [("user", "Which ferry leaves first?")]
    assert [m.role for m in store.load_messages(chat_id)] == ["user"]
    hint = window.composer.hint.text()
    assert "the model m is not loaded" in hint and "your message is kept" in hint and "Ctrl+R" in hint

    server.steps = [stream([delta("The 7:10 to Vashon."), FINISH, "data: [DONE]"])]
    with qtbot.waitSignal(window.reply_finished, timeout=WAIT_MS):
        window.sending.regenerate()
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    expected = [("user", "Which ferry leaves first?"), ("assistant", "The 7:10 to Vashon.")]
    assert shown_rows(window) == expected
    assert [(m.role, m.content) for m in store.load_messages(chat_id)] == expected
