"""Creating, renaming and deleting chats are store writes made off the window's thread: in a store that cannot be
written (read-only, or locked by another program) the window keeps running, says why in the status bar, and shows
the chats as they still are."""

from __future__ import annotations

import sqlite3

import pytest
from precis.core.storage import database
from precis.core.storage.store import DB_NAME, Store, open_store
from precis.gui.chat_list import ChatIdRole
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocumentFragment

from tests.gui.test_freezes import Heartbeat
from tests.gui.test_window import idle
from tests.timing import WAIT_MS


def listed(window) -> dict[str, str]:
    """{chat id: title} as the chat list shows them."""
    rows = window.chat_list.list
    return {rows.item(i).data(ChatIdRole): rows.item(i).toolTip() for i in range(rows.count())
            if rows.item(i).data(ChatIdRole)}


def window_open_at(qtbot, make_window, chat_id: str):
    """A window with this chat open and nothing under way."""
    window = make_window()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window) and window.chat.is_open(chat_id), timeout=WAIT_MS)
    return window


@pytest.fixture
def read_only_store(tmp_path):
    """The store as Precis opens one it may not write (a read-only file or folder): SQLite's read-only URI mode.
    Made this way because the tests run as root, for whom chmod makes nothing read-only."""
    folder = tmp_path / "read-only"
    with open_store(folder) as writable:
        chat_id = writable.create_chat("Trip to Lisbon")
    store = Store(folder / DB_NAME, read_only=True)
    yield store, chat_id
    store.close()


@pytest.mark.slow
def test_new_chat_rename_and_delete_in_a_read_only_store_say_why_and_change_nothing(qtbot, read_only_store,
                                                                                       make_window):
    store, chat_id = read_only_store
    window = make_window(on_store=store)
    assert listed(window) == {chat_id: "Trip to Lisbon"} and window.chat.is_open(chat_id)

    with qtbot.waitSignal(window.job_failed, timeout=WAIT_MS) as failure:
        window.chat_list.new_button.click()
    assert failure.args[0].startswith("Could not create the chat: ") and "read-only" in failure.args[0]
    assert window.statusBar().currentMessage().startswith("Could not create the chat: ")
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert listed(window) == {chat_id: "Trip to Lisbon"} and window.chat.is_open(chat_id)

    with qtbot.waitSignal(window.job_failed, timeout=WAIT_MS) as failure:
        window.chat_list.rename_requested.emit(chat_id, "Porto instead")
    assert failure.args[0].startswith("Could not rename the chat: ") and "read-only" in failure.args[0]
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert listed(window) == {chat_id: "Trip to Lisbon"} and window.windowTitle() == "Trip to Lisbon — Precis"

    with qtbot.waitSignal(window.job_failed, timeout=WAIT_MS) as failure:
        window.chat_list.delete_requested.emit(chat_id)
    assert failure.args[0].startswith("Could not delete the chat: ") and "read-only" in failure.args[0]
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert listed(window) == {chat_id: "Trip to Lisbon"} and window.chat.is_open(chat_id)
    assert not window.status.undo.isVisible()  # nothing was deleted, so nothing to undo
    assert [c.title for c in store.list_chats()] == ["Trip to Lisbon"]


def test_a_read_only_folder_says_so_and_a_message_it_cannot_save_says_why(qtbot, read_only_store, make_window):
    """The window said nothing of a read-only folder until a write failed; then "Not sent; your text is back in the
    box" without a reason, and the status bar's "Draft not saved" (tried at every pause in typing) covered the one
    it had."""
    store, chat_id = read_only_store
    window = make_window(on_store=store)
    assert window.status.read_only.isVisible() and str(store.path) in window.status.read_only.toolTip()

    qtbot.keyClicks(window.composer.edit, "Which hotel did we book?")
    with qtbot.waitSignal(window.job_failed, timeout=WAIT_MS):
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    hint = QTextDocumentFragment.fromHtml(window.composer.hint.toolTip()).toPlainText()  # whole; the line is cut
    assert hint.startswith("Not sent: could not save the message: ") and "read-only" in hint
    assert hint.endswith("; your text is back in the box.")
    assert window.composer.text() == "Which hotel did we book?"
    assert window.statusBar().currentMessage().lower().startswith("could not save the message: ")
    assert store.load_messages(chat_id) == []


@pytest.mark.slow
def test_sending_with_no_chat_open_in_a_read_only_store_keeps_the_text(qtbot, make_window, tmp_path):
    folder = tmp_path / "empty"
    open_store(folder).close()
    store = Store(folder / DB_NAME, read_only=True)
    try:
        window = make_window(on_store=store)
        window.composer.set_text("What did we decide about the hotel?")
        with qtbot.waitSignal(window.job_failed, timeout=WAIT_MS) as failure:
            qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
        assert failure.args[0].startswith("Could not create the chat: ")
        qtbot.waitUntil(lambda: not window.chat.store_calls.busy, timeout=WAIT_MS)
        assert window.composer.text() == "What did we decide about the hotel?"  # to send once the store is fixed
        assert listed(window) == {} and window.chat.session is None
    finally:
        window.close()
        window.chat.finish_background_work()
        store.close()


@pytest.mark.slow
def test_while_another_program_holds_the_write_lock_the_window_keeps_running_and_says_so(
        qtbot, make_window, tmp_path, monkeypatch):
    # SQLite's busy timeout is 30 s; shortened so that the lock outlasts it within the test. The lock itself is real.
    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 6_000)
    folder = tmp_path / "locked"
    store = open_store(folder)
    chat_id = store.create_chat("Garden plans")
    try:
        window = make_window(on_store=store)
        assert listed(window) == {chat_id: "Garden plans"}
        blocker = sqlite3.connect(folder / DB_NAME, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another program writing: it holds the write lock
        heartbeat = Heartbeat()
        for ask, what in ((window.chat_list.new_button.click, "create"),
                          (lambda: window.chat_list.rename_requested.emit(chat_id, "Vegetable garden"), "rename"),
                          (lambda: window.chat_list.delete_requested.emit(chat_id), "delete")):
            with qtbot.waitSignal(window.job_failed, timeout=WAIT_MS) as failure:
                ask()
            assert failure.args[0].startswith(f"Could not {what} the chat: ") and "busy" in failure.args[0]
            qtbot.waitUntil(lambda: not window.chat.store_calls.busy, timeout=WAIT_MS)
            assert listed(window) == {chat_id: "Garden plans"} and window.chat.is_open(chat_id)
        heartbeat.timer.stop()
        # Each write waited 6 s for the lock; on the window's thread the timer could not have ticked meanwhile.
        # The bound leaves room below that for a machine whose neighbours steal its cores for seconds at a time.
        assert len(heartbeat.ticks) > 30 and heartbeat.longest_gap() < 4.5, heartbeat.longest_gap()

        blocker.execute("ROLLBACK")  # the other program is done: the same clicks now work
        window.chat_list.rename_requested.emit(chat_id, "Vegetable garden")
        qtbot.waitUntil(lambda: listed(window) == {chat_id: "Vegetable garden"}, timeout=WAIT_MS)
        window.chat_list.new_button.click()
        qtbot.waitUntil(lambda: len(listed(window)) == 2 and idle(window) and not window.chat.is_open(chat_id),
                        timeout=WAIT_MS)
        blocker.close()
    finally:
        window.close()
        window.chat.finish_background_work()
        store.close()


@pytest.mark.slow
def test_a_deleted_chat_goes_once_the_store_has_it_and_undo_brings_it_back(qtbot, make_window, store):
    kept = store.create_chat("Kept")
    doomed = store.create_chat("Doomed")
    window = window_open_at(qtbot, make_window, doomed)

    window.chat_list.delete_requested.emit(doomed)  # what the list's "Delete…" sends once the user confirms
    qtbot.waitUntil(lambda: set(listed(window)) == {kept} and window.status.undo.isVisible(), timeout=WAIT_MS)
    assert window.chat.is_open(kept) and window.status.undo.text() == "Undo delete"  # the next chat opened
    assert [c.title for c in store.list_chats()] == ["Kept"]

    window.status.undo.click()
    qtbot.waitUntil(lambda: set(listed(window)) == {kept, doomed} and window.chat.is_open(doomed), timeout=WAIT_MS)
    assert sorted(c.title for c in store.list_chats()) == ["Doomed", "Kept"]


@pytest.mark.slow
def test_a_tool_stopped_by_switching_chats_is_saved_to_the_chat_it_ran_in(qtbot, make_window, store):
    started_in = store.create_chat("Build logs")
    other = store.create_chat("Recipes")
    window = window_open_at(qtbot, make_window, started_in)

    window.submit("/run echo started; sleep 30")
    qtbot.waitUntil(lambda: window.composer.stop_button.isVisible(), timeout=WAIT_MS)
    window.open_chat(other)  # closing the chat stops its tool; the result arrives once the other chat is open
    qtbot.waitUntil(lambda: idle(window) and window.chat.is_open(other) and len(store.load_messages(started_in)) == 2,
                    timeout=WAIT_MS)
    call, result = store.load_messages(started_in)
    assert call.tool_calls[0].arguments == {"command": "echo started; sleep 30"}
    assert result.tool_call_id == call.tool_calls[0].id and result.content.endswith("[cancelled]")
    assert store.load_messages(other) == [] and window.chat.snapshot.messages == []


@pytest.mark.slow
def test_files_dropped_twice_with_no_chat_open_go_to_one_new_chat(qtbot, make_window, store, tmp_path):
    notes, plan = tmp_path / "notes.txt", tmp_path / "plan.txt"
    notes.write_text("alpha\n")
    plan.write_text("beta\n")
    window = make_window()
    assert window.chat.session is None and store.list_chats() == []

    window.sending.attach_files([str(notes)])
    window.sending.attach_files([str(plan)])  # before the store has made the first drop's chat
    qtbot.waitUntil(lambda: idle(window) and window.chat.snapshot is not None
                    and len(window.chat.snapshot.messages) == 4, timeout=WAIT_MS)
    chats = store.list_chats()
    assert len(chats) == 1
    results = [m.content for m in store.load_messages(chats[0].id) if m.role == "tool"]
    assert sorted(results) == ["alpha\n", "beta\n"]
