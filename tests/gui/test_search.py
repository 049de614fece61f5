"""Search across chats and the window's store calls, driven through the real window on a real SQLite file."""

from __future__ import annotations

import sqlite3

import pytest
from precis.core.model.messages import Message
from precis.core.settings import APPEARANCE_KEY, SUMMARIZATION_KEY
from precis.gui import theme
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPixmap

from tests.gui.test_freezes import Heartbeat
from tests.gui.test_window import dialogue, idle
from tests.timing import WAIT_MS


def sports_chat(store) -> str:
    return store.import_chat("Sports", [
        Message(role="user", content="I started kickboxing last week and my shins hurt."),
        Message(role="assistant", content="Shin conditioning takes **time**;\n\nice them and rest a day."),
        *dialogue(30, "Weekly training plan, day"),
    ])


def hits_shown(window) -> int:
    rows = window.chat_list.list
    return sum(1 for i in range(rows.count()) if rows.item(i).data(Qt.ItemDataRole.UserRole + 2) is not None)


@pytest.mark.slow
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
        qtbot.waitUntil(lambda: hits_shown(window) == 1, timeout=WAIT_MS)  # readers are not held up by the writer
        qtbot.waitUntil(lambda: len(heartbeat.ticks) >= 40, timeout=WAIT_MS)  # 2 s with the save still waiting
        assert window.chat.store_calls.busy
    finally:
        blocker.execute("COMMIT")
        blocker.close()
    qtbot.waitUntil(lambda: store.get_setting(APPEARANCE_KEY) == {"theme": "dark"}, timeout=WAIT_MS)
    heartbeat.timer.stop()
    # Before, the save waited on the GUI thread: the window froze for the busy timeout (5 s), then the save failed.
    print(f"longest GUI-thread gap while the database was locked: {heartbeat.longest_gap() * 1000:.0f} ms")
    # A save on the GUI thread would have frozen it for the busy timeout (5 s); 3 s leaves room for a machine whose
    # neighbours steal its cores for seconds at a time.
    assert heartbeat.longest_gap() < 3.0, heartbeat.longest_gap()
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)  # the commit is picked up as a change made elsewhere


def colour_pixels(view, number: int, colour: str) -> int:
    """How many pixels of a row, as painted, have exactly this colour."""
    rect = view.visualRect(view.rows_model.index(number)).intersected(view.viewport().rect())
    image = view.viewport().grab(rect).toImage()
    wanted = QColor(colour).rgb()
    return sum(1 for y in range(0, image.height(), 2) for x in range(0, image.width(), 2)
               if image.pixel(x, y) == wanted)


def row_shown(view, key: str) -> bool:
    number = view.rows_model.row_of(key)
    if number is None:  # not listed yet (the archive's rows are made off the GUI thread)
        return False
    index = view.rows_model.index(number)
    return (view.currentIndex() == index and view.viewport().rect().contains(view.visualRect(index).center()))


@pytest.mark.slow
def test_search_finds_word_prefixes_opens_the_message_highlighted_and_esc_clears_it(qtbot, make_window, store):
    sports = sports_chat(store)
    kickboxing = store.load_messages(sports)[0]
    other = store.import_chat("Garden", dialogue(6, "Tomato bed"))
    window = make_window()
    window.open_chat(other)
    qtbot.waitUntil(lambda: idle(window) and window.chat.session.chat_id == other, timeout=WAIT_MS)
    search = window.chat_list.search

    qtbot.keyClicks(search, "KICKBOX")
    assert hits_shown(window) == 0  # nothing is searched while typing
    qtbot.waitUntil(lambda: hits_shown(window) == 1, timeout=WAIT_MS)  # a word prefix, in any case
    assert "[kickboxing]" in window.chat_list.list.item(0).text()
    search.setText("time")  # a snippet reads as plain words on one line
    qtbot.waitUntil(lambda: "takes [time]; ice them" in window.chat_list.list.item(0).text(), timeout=WAIT_MS)
    search.setText("kickbox")
    qtbot.waitUntil(lambda: "[kickboxing]" in window.chat_list.list.item(0).text(), timeout=WAIT_MS)
    window.chat_list.list.setCurrentRow(0)  # the hit, chosen with the keyboard or a click
    qtbot.waitUntil(lambda: idle(window) and window.chat.session.chat_id == sports, timeout=WAIT_MS)
    view = window.conversation
    qtbot.waitUntil(lambda: row_shown(view, kickboxing.id), timeout=WAIT_MS)  # scrolled to the message, selected
    number = view.rows_model.row_of(kickboxing.id)
    qtbot.waitUntil(lambda: colour_pixels(view, number, theme.current.search_hit) > 100, timeout=WAIT_MS)
    before = QPixmap(view.viewport().grab())

    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_Escape)  # Esc in the conversation (or the search box) clears both
    assert search.text() == "" and hits_shown(window) == 0
    qtbot.waitUntil(lambda: colour_pixels(view, number, theme.current.search_hit) == 0, timeout=WAIT_MS)
    assert before.toImage() != view.viewport().grab().toImage()


@pytest.mark.slow
def test_an_archived_hit_opens_its_summary_archive_at_the_message(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 4})
    sports = store.import_chat("Sports", [
        *dialogue(10, "Warm-up routine, set"),
        Message(role="user", content="For lunch I had pasta with pesto before sparring."),
        *dialogue(10, "Cool-down routine, set"),
    ])
    pesto = store.load_messages(sports)[10]
    window = make_window()
    qtbot.waitUntil(lambda: idle(window) and window.chat.session.chat_id == sports, timeout=WAIT_MS)
    with qtbot.waitSignal(window.snapshot_shown, timeout=WAIT_MS):
        qtbot.mouseClick(window.inspector.summarize_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: pesto.id in window.chat.snapshot.hidden, timeout=WAIT_MS)
    record_id = window.chat.snapshot.hidden[pesto.id]
    window.inspector.details.setCurrentIndex(0)

    qtbot.keyClicks(window.chat_list.search, "pest")
    qtbot.waitUntil(lambda: hits_shown(window) == 1, timeout=WAIT_MS)
    assert "archived" in window.chat_list.list.item(0).text()
    window.chat_list.list.setCurrentRow(0)
    archive = window.inspector.archived_view
    qtbot.waitUntil(lambda: window.inspector.details.currentWidget() is archive, timeout=WAIT_MS)
    assert window.inspector.selected_record_id() == record_id and window.inspector.isVisible()
    assert row_shown(window.conversation, f"summary:{record_id}")
    qtbot.waitUntil(lambda: row_shown(archive, pesto.id), timeout=WAIT_MS)
    number = archive.rows_model.row_of(pesto.id)
    qtbot.waitUntil(lambda: colour_pixels(archive, number, theme.current.search_hit) > 50, timeout=WAIT_MS)

    qtbot.keyClick(window.chat_list.search, Qt.Key.Key_Escape)
    assert window.chat_list.search.text() == ""
    qtbot.waitUntil(lambda: colour_pixels(archive, number, theme.current.search_hit) == 0, timeout=WAIT_MS)


def test_a_hit_names_its_chat_on_one_line(qtbot, make_window, store):
    """A raw Claude Code session's title is its first request, 60 characters: each hit spent three or four lines of
    the narrow list on it before its snippet. The whole title is in the hit's tooltip."""
    title = "Work on bead spotter-4te. Run bd show spotter-4te to see th…"
    chat = store.import_chat(title, [Message(role="user", content="Set up opentelemetry_bandit for the server."),
                                     *dialogue(4, "Step")])
    window = make_window()
    window.open_chat(chat)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    window.chat_list.search.setText("opentelemetry_bandit")
    qtbot.waitUntil(lambda: hits_shown(window) == 1, timeout=WAIT_MS)
    item = window.chat_list.list.item(0)
    heading = item.text().splitlines()[0]
    metrics = window.chat_list.list.fontMetrics()
    assert metrics.horizontalAdvance(heading) <= window.chat_list.list.viewport().width(), heading
    assert heading.startswith("Work on bead") and item.text().splitlines()[1].startswith("user: ")
    assert title in item.toolTip()


@pytest.mark.slow
def test_hits_in_chats_whose_names_start_alike_say_which_chat_at_the_list_s_width(qtbot, make_window, store):
    """LoCoMo's three conversations imported: each hit said "loco… · user · archived" at the list's default width
    (the name had what the role and "archived" left, 40 pixels)."""
    for n in (1, 2, 3):
        store.import_chat(f"locomo_{n}", [Message(role="user", content=f"Kickboxing class number {n} tonight."),
                                          *dialogue(4, "Step")])
    window = make_window()
    window.chat_list.search.setText("kickboxing")
    qtbot.waitUntil(lambda: hits_shown(window) == 3, timeout=WAIT_MS)
    rows = window.chat_list.list
    headings = sorted(rows.item(i).text().splitlines()[0] for i in range(3))
    assert headings == ["locomo_1", "locomo_2", "locomo_3"]
    assert all(rows.item(i).text().splitlines()[1].startswith("user: ") for i in range(3))
