"""Stop, closing the window, and closing Settings during Test connection, while the server has not answered yet
(tests/held_headers.py holds its response headers, as a llama.cpp or Ollama server does while it reads a long
prompt, and releases them only when the test ends): each ends at once, the server sees the client go, and the chat
keeps nothing of a reply stopped before its first word. It was: each waited for the server's headers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from precis.core.providers.openai_compat import OpenAICompatProvider
from PySide6.QtCore import Qt

from tests.gui.conftest import open_settings
from tests.gui.test_window import idle, open_new_chat
from tests.held_headers import HeldHeadersServer

# Far beyond "at once"; a wait for the held server's answer would outlast it (the server answers at the test's end).
GIVE_UP_MS = 5_000


@pytest.fixture
def held() -> Iterator[HeldHeadersServer]:
    server = HeldHeadersServer()
    yield server
    server.close()


def asked_and_held(qtbot, make_window, store, held):
    window = make_window(OpenAICompatProvider(f"{held.url}/v1", "m"))
    chat_id = open_new_chat(qtbot, window, store)
    window.submit("Summarize this long file.")
    qtbot.waitUntil(held.asked.is_set, timeout=GIVE_UP_MS)
    return window, chat_id


def test_stop_before_the_first_word_readies_the_window_at_once_keeping_no_reply(qtbot, make_window, store, held):
    window, chat_id = asked_and_held(qtbot, make_window, store, held)
    assert window.composer.stop_button.isVisible()
    qtbot.mouseClick(window.composer.stop_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=GIVE_UP_MS)
    assert not held.released.is_set()
    assert held.client_left.wait(1)
    assert [m.role for m in store.load_messages(chat_id)] == ["user"]
    assert "failed" not in window.status.bar.currentMessage().lower()


def test_closing_the_window_before_the_first_word_does_not_wait_for_the_server(qtbot, make_window, store, held):
    window, chat_id = asked_and_held(qtbot, make_window, store, held)
    window.close()
    assert window.chat.finish_background_work(GIVE_UP_MS), "closing waited for the server's answer"
    assert not held.released.is_set()
    assert held.client_left.wait(1)
    assert [m.role for m in store.load_messages(chat_id)] == ["user"]


def test_closing_settings_stops_its_test_connection(qtbot, make_window, held):
    held.hold_lists = True
    dialog = open_settings(qtbot, make_window())
    dialog.kind.setCurrentText("openai")
    dialog.base_url.setText(f"{held.url}/v1")
    dialog.model.setText("m")
    qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(held.asked.is_set, timeout=GIVE_UP_MS)
    dialog.reject()
    qtbot.waitUntil(lambda: not dialog._testing, timeout=GIVE_UP_MS * 2)
    assert held.client_left.is_set()
    # Stopped, not given up on at the list's own limit (5 s): a dialog closed went on asking until then.
    assert "did not answer in time" not in dialog.test_result.text()
    assert "cancelled" in dialog.test_result.text()
