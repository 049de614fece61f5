"""A message sent while another program holds the database's write lock: the window says at once that Precis is
waiting for the database, naming the file, instead of "Save the message…" for 30 s; the outcome is as before (saved
once the lock is free; else the text back in the box with the error). The lock is real: another process holds it."""

from __future__ import annotations

from precis.core.storage import database
from precis.core.storage.store import open_store
from PySide6.QtCore import Qt

from tests.fakes import ScriptedProvider
from tests.gui.test_window import idle
from tests.lock_holder import locked_by_another_process, release
from tests.timing import WAIT_MS


def send(qtbot, window, text: str) -> None:
    window.composer.set_text(text)
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)


def waiting_said(window, store) -> bool:
    """Whether the status bar says a save waits for another program, naming the file (the message's save, or the
    draft's, which the same lock holds up meanwhile)."""
    shown = window.statusBar().currentMessage()
    return (shown.startswith(("Waiting to save the message: ", "Waiting to save the draft: "))
            and f"another program is writing to the database {store.path} " in shown)


def test_a_message_waiting_for_the_lock_says_so_and_is_saved_once_it_is_free(qtbot, make_window, store):
    chat_id = store.create_chat("Ferry")
    window = make_window(provider=ScriptedProvider(["Booked for Saturday."]))
    qtbot.waitUntil(lambda: window.chat.is_open(chat_id) and idle(window), timeout=WAIT_MS)
    with locked_by_another_process(store.path) as locker:
        send(qtbot, window, "Book the ferry for Saturday.")
        qtbot.waitUntil(lambda: waiting_said(window, store), timeout=WAIT_MS)
        assert [m.content for m in store.load_messages(chat_id)] == []  # still waiting: told before, not after
        release(locker)
        qtbot.waitUntil(lambda: idle(window) and len(store.load_messages(chat_id)) == 2, timeout=WAIT_MS)
    assert [m.content for m in store.load_messages(chat_id)] == ["Book the ferry for Saturday.",
                                                                 "Booked for Saturday."]
    assert not waiting_said(window, store) and window.composer.text() == ""


def test_a_message_the_lock_outlasts_comes_back_to_the_box_with_the_error(qtbot, make_window, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 3_000)  # the real wait is 30 s; the lock itself is real
    with open_store(tmp_path / "data") as store:
        chat_id = store.create_chat("Ferry")
        window = make_window(provider=ScriptedProvider(["never written"]), on_store=store)
        qtbot.waitUntil(lambda: window.chat.is_open(chat_id) and idle(window), timeout=WAIT_MS)
        with locked_by_another_process(store.path):
            send(qtbot, window, "Book the ferry for Saturday.")
            qtbot.waitUntil(lambda: waiting_said(window, store), timeout=WAIT_MS)
            qtbot.waitUntil(lambda: window.composer.text() == "Book the ferry for Saturday.", timeout=WAIT_MS)
        hint = window.composer.hint.text()
        assert hint.startswith("Not sent: ") and str(store.path) in hint and "busy" in hint
        assert window.conversation.rows_model.rowCount() == 0 and store.load_messages(chat_id) == []
        qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
        assert not waiting_said(window, store)
        window.close()
        window.chat.finish_background_work()
