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


def test_this_chats_context_window_says_what_automatic_is_so_a_value_is_known_to_override_it(qtbot, make_window,
                                                                                              store):
    """Settings → This chat → Context window was empty with "The budget; empty: the model's own window": which
    window that is, the user could not tell. It says the model's own (8,192 for the embedded model), the window an
    empty field gives the chat, and still does once a value of the chat's own overrides it."""
    from precis.gui.settings_dialog import QDialogButtonBox

    from tests.gui.test_window import idle, open_new_chat

    window = make_window()  # the embedded model
    open_new_chat(qtbot, window, store)
    used = window.chat.session.built_engine.budget.window  # what the chat's budget is with the field empty
    assert used == 8192
    dialog = open_settings(qtbot, window)
    field = dialog.chat_fields.editors["context_window"]
    assert field.text() == "" and field.placeholderText() == f"Automatic ({used:,}, the model's own)"
    assert f"({used:,} tokens)" in field.toolTip()

    field.setText("4096")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: idle(window) and window.chat.session.built_engine.budget.window == 4096, timeout=5000)
    dialog = open_settings(qtbot, window)
    field = dialog.chat_fields.editors["context_window"]
    assert field.text() == "4096" and field.placeholderText() == "Automatic (8,192, the model's own)"
    dialog.reject()
