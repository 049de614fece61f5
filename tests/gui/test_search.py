"""Search across chats and the window's store calls, driven through the real window on a real SQLite file."""

from __future__ import annotations

import sqlite3

from precis.core.model.messages import Message
from precis.gui import theme
from PySide6.QtCore import Qt

from tests.gui.test_freezes import Heartbeat
from tests.gui.test_window import dialogue, idle


def sports_chat(store) -> str:
    return store.import_chat("Sports", [
        Message(role="user", content="I started kickboxing last week and my shins hurt."),
        Message(role="assistant", content="Shin conditioning takes time; ice them and rest a day."),
        *dialogue(30, "Weekly training plan, day"),
    ])


def hits_shown(window) -> int:
    rows = window.chat_list.list
    return sum(1 for i in range(rows.count()) if rows.item(i).data(Qt.ItemDataRole.UserRole + 2) is not None)


def test_search_and_settings_wait_for_a_locked_database_off_the_gui_thread(qtbot, make_window, store):
    sports_chat(store)
    window = make_window()
    # Another program (a `precis` command, a summary being saved) holds a write transaction on the file.
    blocker = sqlite3.connect(store.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    blocker.execute("UPDATE chat SET title = title")
    heartbeat = Heartbeat()
    try:
        qtbot.keyClicks(window.chat_list.search, "kickbox")
        window.theme_actions["dark"].trigger()  # saving the choice waits for the lock
        window.refresh_chats()
        qtbot.waitUntil(lambda: hits_shown(window) == 1, timeout=5_000)  # readers are not held up by the writer
        qtbot.waitUntil(lambda: len(heartbeat.ticks) >= 20, timeout=5_000)  # a second with the save still waiting
        assert window.chat.store_calls.busy
    finally:
        blocker.execute("COMMIT")
        blocker.close()
    qtbot.waitUntil(lambda: store.get_setting(theme.APPEARANCE_KEY) == {"theme": "dark"}, timeout=10_000)
    heartbeat.timer.stop()
    # Before, the save waited on the GUI thread: the window froze for the busy timeout (5 s), then the save failed.
    assert heartbeat.longest_gap() < 0.5, heartbeat.longest_gap()
    assert idle(window)
