"""Opening Settings reads the store and the OS keyring off the window's thread (issue 22: a locked keyring, or a
store held by another writer, froze the window as the dialog opened)."""

from __future__ import annotations

import threading

from precis.core.settings import PROVIDER_KEY

from tests.gui.conftest import open_settings


def test_opening_settings_reads_nothing_on_the_windows_thread(qtbot, make_window, store, monkeypatch):
    store.set_setting(PROVIDER_KEY, {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"})  # a key is asked
    chat_id = store.create_chat("sailing", settings={"system_prompt": "Answer as a sailor."})
    window = make_window()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: window.chat.is_open(chat_id) and window.chat.snapshot is not None)
    on_main: list[str] = []

    def watched(name, real):  # the real call, noting a call made on the window's thread
        def call(*args, **kwargs):
            if threading.current_thread() is threading.main_thread():
                on_main.append(name)
            return real(*args, **kwargs)
        return call

    for name in ("get_setting", "get_chat"):
        monkeypatch.setattr(store, name, watched(name, getattr(store, name)))
    from precis.gui import controller
    monkeypatch.setattr(controller, "api_key_for", watched("keyring", controller.api_key_for))
    dialog = open_settings(qtbot, window)
    assert dialog.chat_settings().system_prompt == "Answer as a sailor."
    assert on_main == [] and dialog.provider_choice().kind == "openai"
    dialog.reject()
