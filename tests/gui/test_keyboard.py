"""The window from the keyboard (issue 22, items 7 and 8): Esc stops a reply wherever the focus is, the search box
opens a result with Enter or Down, the open chat keeps its highlight once a search is cleared, and Tab goes round
every part of the window in reading order."""

from __future__ import annotations

from precis.core.model.messages import Message, ToolCall
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.fakes import ScriptedProvider
from tests.gui.held_replies import HeldReplies
from tests.gui.test_window import dialogue, idle
from tests.timing import WAIT_MS

HIT_ROLE = Qt.ItemDataRole.UserRole + 2
CHAT_ID_ROLE = Qt.ItemDataRole.UserRole + 1


def test_esc_stops_a_reply_with_the_focus_anywhere_in_the_window(qtbot, make_window, store):
    # What writes the reply does not matter here, only that it is under way until Esc: it is held until cancelled.
    held = HeldReplies(ScriptedProvider(["never shown"]))
    store.import_chat("Tides", dialogue(4, "Tide tables, part"))
    window = make_window(provider=held)
    window.submit("When is high tide?")
    qtbot.waitUntil(lambda: window.composer.stop_button.isVisible(), timeout=WAIT_MS)
    window.conversation.setFocus()
    qtbot.keyClick(window.conversation, Qt.Key.Key_Escape)
    # Unstopped, the held reply fails only after 60 s.
    qtbot.waitUntil(lambda: not window.composer.stop_button.isVisible() and idle(window), timeout=45_000)
    assert not held.release.is_set()
    assert window.composer.send_button.isVisible()


def test_enter_and_down_in_the_search_box_open_a_result_and_the_open_chat_stays_highlighted(
        qtbot, make_window, store):
    sailing = store.import_chat("Sailing", [Message(role="user", content="How do I reef the mainsail in a squall?"),
                                            Message(role="assistant", content="Ease the sheet, then lower to the mark.")])
    garden = store.import_chat("Garden", dialogue(6, "Planting tomatoes, week"))
    window = make_window()
    assert window.chat.is_open(garden)  # the newest chat opens first
    search = window.chat_list.search
    window.chat_list.focus_search()
    qtbot.keyClicks(search, "mainsail")
    qtbot.keyClick(search, Qt.Key.Key_Return)  # before the typing pause: searched at once, then opened
    qtbot.waitUntil(lambda: window.chat.is_open(sailing) and idle(window), timeout=WAIT_MS)
    assert QApplication.focusWidget() is window.composer.edit  # the next keys are the message

    window.chat_list.focus_search()
    qtbot.keyClick(search, Qt.Key.Key_Escape)
    chats = window.chat_list.list
    assert chats.currentItem() is not None and chats.currentItem().data(CHAT_ID_ROLE) == sailing

    window.open_chat(garden)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    window.chat_list.focus_search()
    qtbot.keyClicks(search, "squall")
    qtbot.waitUntil(lambda: chats.count() and chats.item(0).data(HIT_ROLE) is not None, timeout=WAIT_MS)
    qtbot.keyClick(search, Qt.Key.Key_Down)
    assert QApplication.focusWidget() is chats  # Up and Down go on through the results
    qtbot.waitUntil(lambda: window.chat.is_open(sailing) and idle(window), timeout=WAIT_MS)


def test_tab_goes_round_the_window_in_reading_order(qtbot, make_window, store):
    store.import_chat("Tides", dialogue(4, "Tide tables, part"))
    window = make_window()
    window.activateWindow()
    window.focus_message_box()
    reached = []
    for _ in range(40):
        widget = QApplication.focusWidget()
        reached.append(widget)
        qtbot.keyClick(widget, Qt.Key.Key_Tab)
        if QApplication.focusWidget() is window.composer.edit:
            break
    else:
        raise AssertionError(f"Tab never came back to the message box: {[type(w).__name__ for w in reached]}")
    assert window.composer.text() == ""  # Tab moved on, it typed nothing
    chat_list, composer = window.chat_list, window.composer
    in_order = [composer.edit, composer.attach_button, composer.send_button,
                chat_list.new_button, chat_list.import_button, chat_list.search, chat_list.list, window.conversation]
    assert [widget for widget in reached if widget in in_order] == in_order
    assert window.inspector.chain not in reached  # no summary yet: no empty list to stop in


def test_f2_renames_and_delete_deletes_the_chat_current_in_the_list(qtbot, make_window, store, monkeypatch):
    """Rename and Delete were only in the chat list's right-click menu."""
    from PySide6.QtWidgets import QInputDialog, QMessageBox

    garden = store.import_chat("Garden", dialogue(4, "Tomato beds, part"))
    store.import_chat("Tides", dialogue(4, "Tide tables, part"))
    window = make_window()
    chats = window.chat_list.list
    chats.setFocus()
    chats.setCurrentRow(next(n for n in range(chats.count()) if chats.item(n).toolTip() == "Garden"))
    asked: list[str] = []
    monkeypatch.setattr(QInputDialog, "getText", lambda *args, text="", **_: (asked.append(text), ("Vegetables", True))[1])
    qtbot.keyClick(chats, Qt.Key.Key_F2)
    qtbot.waitUntil(lambda: store.get_chat(garden).title == "Vegetables", timeout=WAIT_MS)
    assert asked == ["Garden"]

    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    chats.setCurrentRow(next(n for n in range(chats.count()) if chats.item(n).toolTip() == "Vegetables"))
    monkeypatch.setattr(QMessageBox, "question", lambda *args, **_: QMessageBox.StandardButton.Yes)
    qtbot.keyClick(chats, Qt.Key.Key_Delete)
    qtbot.waitUntil(lambda: garden not in [c.id for c in store.list_chats()], timeout=WAIT_MS)


def test_a_chat_file_dropped_on_the_chat_list_is_imported_and_opened(qtbot, make_window, store):
    """Dropped on the message box a transcript is attached to the open chat; the chat list took no drops at all."""
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDropEvent

    from tests.conftest import TRANSCRIPTS_DIR

    store.import_chat("Tides", dialogue(4, "Tide tables, part"))
    window = make_window()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(TRANSCRIPTS_DIR / "sweagent_2.jsonl"))])
    drop = QDropEvent(QPointF(20, 20), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    window.chat_list.dropEvent(drop)  # as Qt delivers a drop (offscreen, no drag can start)
    qtbot.waitUntil(lambda: len(store.list_chats()) == 2 and idle(window), timeout=WAIT_MS)
    imported = next(c for c in store.list_chats() if c.title != "Tides")
    qtbot.waitUntil(lambda: window.chat.is_open(imported.id), timeout=WAIT_MS)
    assert imported.message_count == len((TRANSCRIPTS_DIR / "sweagent_2.jsonl").read_text().splitlines())


def test_enter_shows_a_summary_whole_and_opens_a_tool_line_as_a_click_does(qtbot, make_window, store):
    """A summary's "Show all (N more lines)" and a tool line's output opened only with the mouse: from the keyboard a
    summary showed its first lines and no more."""
    from precis.core.settings import SUMMARIZATION_KEY

    from tests.gui.test_window import long_dialogue, open_imported_chat

    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "enabled": False})
    window = make_window()
    messages = long_dialogue(40, "keys")
    call = Message(role="assistant", tool_calls=(ToolCall("c1", "Bash", {"command": "ls"}),))
    result = Message(role="tool", content="a.py\nb.py", name="Bash", tool_call_id="c1")
    open_imported_chat(qtbot, window, store, [*messages, *dialogue(3, "before"), call, result, *dialogue(1, "after")])
    window.summarize_now()
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 1, timeout=WAIT_MS)
    view, rows = window.conversation, window.conversation.rows_model
    [summary] = [n for n, row in enumerate(rows.rows()) if row.kind == "summary"]
    assert view.delegate.body(rows.row_at(summary))[2] > 0  # lines hidden: "Show all (N more lines)"
    view.setFocus()
    view.setCurrentIndex(rows.index(summary))
    window.inspector.chain.clearSelection()

    qtbot.keyClick(view, Qt.Key.Key_Return)
    assert rows.row_at(summary).expanded and view.delegate.body(rows.row_at(summary))[2] == 0
    assert window.inspector.selected_record_id() == window.chat.snapshot.chain[0].id  # shown there too, as a click
    qtbot.keyClick(view, Qt.Key.Key_Space)
    assert not rows.row_at(summary).expanded

    tool = next(n for n, row in enumerate(rows.rows()) if row.kind == "tool_result")
    view.setCurrentIndex(rows.index(tool))
    qtbot.keyClick(view, Qt.Key.Key_Enter)
    assert rows.row_at(tool).expanded
    plain = len(rows.rows()) - 1  # a message shows whole already: Enter leaves it as it is
    view.setCurrentIndex(rows.index(plain))
    qtbot.keyClick(view, Qt.Key.Key_Return)
    assert not rows.row_at(plain).expanded
