"""Settings → Provider with a keyring that stores nothing: the window says the key was not stored and how to provide
it, uses it until Precis closes, and writes it nowhere. A real store; a loopback server records what it is sent."""

from __future__ import annotations

import json
import logging

from PySide6.QtWidgets import QMessageBox

from tests.gui.conftest import open_settings
from tests.gui.test_window import idle, open_new_chat
from tests.providers.scripted_server import FINISH, delta, reply, stream
from tests.providers.test_key_not_kept import TYPED, null_keyring  # noqa: F401 - a fixture
from tests.timing import WAIT_MS


def test_the_window_says_the_key_was_not_stored_and_keeps_it_nowhere(
        qtbot, make_window, store, server, null_keyring, isolated_home, caplog, monkeypatch):  # noqa: F811
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    caplog.set_level(logging.DEBUG)
    server.steps = [reply(200, json.dumps({"data": [{"id": "m"}]})), stream([delta("Hello."), FINISH, "data: [DONE]"])]
    window = make_window()
    open_new_chat(qtbot, window, store)
    dialog = open_settings(qtbot, window)
    dialog.kind.setCurrentText("openai")
    dialog.base_url.setText(server.base_url)
    dialog.model.setText("m")
    dialog.api_key.setText(TYPED)
    dialog.buttons.button(dialog.buttons.StandardButton.Ok).click()

    qtbot.waitUntil(lambda: window.findChild(QMessageBox, "keyNotStored") is not None, timeout=WAIT_MS)
    said = window.findChild(QMessageBox, "keyNotStored").text()
    assert "The openai API key could not be stored" in said and "kept nowhere" in said
    assert f"user openai@{server.base_url.rsplit('/v1', 1)[0]}" in said
    qtbot.waitUntil(lambda: idle(window) and window.chat.model.provider.name != "local", timeout=WAIT_MS)

    with qtbot.waitSignal(window.reply_finished, timeout=WAIT_MS):
        window.submit("Hi")
    assert server.authorizations[-1] == f"Bearer {TYPED}"  # used for this session
    window.close()
    window.chat.finish_background_work()
    store.close()
    for path in isolated_home.rglob("*"):  # the database, its log, the settings: none holds it
        assert not path.is_file() or TYPED.encode() not in path.read_bytes(), path
    assert TYPED not in caplog.text
