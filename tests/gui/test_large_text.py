"""Large text (a system font at twice the usual size, View → Zoom in): the side panel and the inspector are as wide
as their buttons' words, and the message box as tall as four of its lines."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication

from tests.gui.test_window import dialogue


@pytest.fixture
def large_font():
    """The application's font at twice its size, as a user's large system font gives it; restored after."""
    from precis.gui.app import application

    app = application()
    usual = QFont(app.font())
    large = QFont(usual)
    large.setPointSizeF(usual.pointSizeF() * 2)
    app.setFont(large)
    yield
    QApplication.instance().setFont(usual)


def test_at_twice_the_font_no_button_is_cut(qtbot, make_window, store, large_font):
    store.import_chat("Tides", dialogue(6, "Tide tables, part"))
    window = make_window()
    window.resize(1920, 1080)
    qtbot.waitUntil(lambda: window.width() == 1920)
    inspector = window.inspector
    for button in (window.chat_list.new_button, window.chat_list.import_button, inspector.summarize_button,
                   inspector.undo_button, window.composer.attach_button, window.composer.send_button):
        assert button.isVisible()
        assert button.width() >= button.sizeHint().width(), f"{button.text()!r} is cut"


def test_the_message_box_shows_four_lines_at_any_text_size(qtbot, make_window, store, large_font):
    store.import_chat("Tides", dialogue(6, "Tide tables, part"))
    window = make_window()
    edit = window.composer.edit
    for _ in range(4):
        assert edit.viewport().height() >= 4 * edit.fontMetrics().lineSpacing()
        window.appearance.zoom(1)
