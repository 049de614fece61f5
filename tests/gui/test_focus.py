"""Typing is not lost: the first keystrokes went to the "New chat" button (issue 22, item 1). The message box has the
focus at start, after a new chat, after a chat is chosen in the list and after a dialog closes."""

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.gui.conftest import open_settings
from tests.gui.test_window import dialogue, idle
from tests.timing import WAIT_MS


def test_the_message_box_has_the_focus_at_start_and_after_a_new_chat(qtbot, make_window):
    window = make_window()
    assert window.focusWidget() is window.composer.edit
    with qtbot.waitSignal(window.snapshot_shown, timeout=WAIT_MS):
        window.new_chat()
    assert window.focusWidget() is window.composer.edit


def test_the_message_box_has_the_focus_after_choosing_a_chat_and_after_the_settings_close(qtbot, make_window, store):
    store.import_chat("Garden", dialogue(4, "Planting tomatoes, week"))
    sailing = store.import_chat("Sailing", dialogue(4, "Reefing the mainsail, step"))
    window = make_window()
    chats = window.chat_list.list
    row = next(i for i in range(chats.count()) if chats.item(i).data(Qt.ItemDataRole.UserRole + 1) == sailing)
    qtbot.mouseClick(chats.viewport(), Qt.MouseButton.LeftButton, pos=chats.visualItemRect(chats.item(row)).center())
    qtbot.waitUntil(lambda: window.chat.is_open(sailing) and idle(window), timeout=WAIT_MS)
    assert QApplication.focusWidget() is window.composer.edit

    window.chat_list.focus_search()
    dialog = open_settings(qtbot, window)
    dialog.reject()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.composer.edit)
