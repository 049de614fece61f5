"""View → Zoom: Ctrl+= / Ctrl+- / Ctrl+0 size the conversation's and the composer's text, remembered across runs."""

from __future__ import annotations

import pytest
from precis.core.settings import APPEARANCE_KEY
from precis.gui import theme
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.gui.test_window import dialogue, open_imported_chat


def sizes(window) -> tuple[float, float, float]:
    return (window.conversation.font().pointSizeF(), window.composer.edit.font().pointSizeF(),
            window.conversation.delegate.body_font.pointSizeF())


def first_row_height(window) -> int:
    return window.conversation.visualRect(window.conversation.rows_model.index(0)).height()


@pytest.mark.slow
def test_zoom_keys_resize_the_text_and_the_size_is_remembered(qtbot, make_window, store):
    system = QApplication.font().pointSizeF()
    window = make_window()
    open_imported_chat(qtbot, window, store, dialogue(6, "A long enough line about the gym timetable, point"))
    assert sizes(window) == pytest.approx((system, system, system))
    height = first_row_height(window)

    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert sizes(window) == pytest.approx((system * 1.1,) * 3)
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert sizes(window) == pytest.approx((system * 1.25,) * 3)
    qtbot.waitUntil(lambda: first_row_height(window) > height)  # the rows are laid out again in the new size
    assert window.composer.edit.toPlainText() == ""  # the shortcut typed nothing
    qtbot.waitUntil(lambda: store.get_setting(APPEARANCE_KEY) == {"text_size": 1.25})
    window.close()

    reopened = make_window()
    assert sizes(reopened) == pytest.approx((system * 1.25,) * 3)
    reopened.theme_actions["dark"].trigger()  # another appearance setting keeps the size
    qtbot.waitUntil(lambda: store.get_setting(APPEARANCE_KEY) == {"theme": "dark", "text_size": 1.25})
    reopened.activateWindow()
    qtbot.waitUntil(reopened.isActiveWindow)
    qtbot.keyClick(reopened.conversation, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)
    assert sizes(reopened) == pytest.approx((system,) * 3)
    for _ in range(5):  # smaller and smaller, down to the smallest size and no further
        qtbot.keyClick(reopened.conversation, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    assert sizes(reopened) == pytest.approx((system * 0.7,) * 3)
    qtbot.waitUntil(lambda: store.get_setting(APPEARANCE_KEY) == {"theme": "dark", "text_size": 0.7})
    theme.choose("light")
