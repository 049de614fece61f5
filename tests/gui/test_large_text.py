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


def test_at_twice_the_font_a_code_blocks_copy_chip_holds_its_word_beside_the_code(qtbot, make_window, store,
                                                                                  large_font):
    """The chip was 44×16 pixels at any font: at twice the size "Copy" was cut on both sides and at the bottom."""
    from precis.core.model.messages import Message
    from precis.gui.markdown import COPY_LABEL, is_code_block
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QFontMetricsF

    from tests.gui.test_window import open_imported_chat

    window = make_window()
    open_imported_chat(qtbot, window, store, [Message(role="user", content="How?"),
                                              Message(role="assistant", content="Run:\n\n```\nmake test\n```\n")])
    delegate = window.conversation.delegate
    width = delegate._text_width()
    doc, [(chip, code)], _hidden = delegate._document(window.conversation.rows_model.row_at(1), width)
    assert code == "make test"
    label = QFontMetricsF(delegate.chip_font).boundingRect(chip, Qt.AlignmentFlag.AlignCenter, COPY_LABEL)
    assert chip.contains(label), f"{COPY_LABEL!r} needs {label.size()}, the chip is {chip.size()}"
    # Beside the code, not over it: the code's block ends left of the chip, which ends inside the text.
    [block] = [b for b in (doc.findBlockByNumber(n) for n in range(doc.blockCount())) if is_code_block(b)]
    assert width - block.blockFormat().rightMargin() <= chip.left() and chip.right() <= width


def test_the_inspectors_heading_grows_with_the_applications_font(qtbot, make_window, store):
    """The heading "Context" was a fixed 11pt in the style sheet: at twice the system font, smaller than the text under
    it."""
    from precis.gui.app import application
    from PySide6.QtWidgets import QLabel

    store.import_chat("Tides", dialogue(6, "Tide tables, part"))
    window = make_window()
    [heading] = [label for label in window.inspector.findChildren(QLabel, "heading") if label.text() == "Context"]
    usual = QFont(application().font())
    assert heading.font().pointSizeF() > usual.pointSizeF()
    large = QFont(usual)
    large.setPointSizeF(usual.pointSizeF() * 2)
    application().setFont(large)  # the system's font made larger while Precis runs
    try:
        qtbot.waitUntil(lambda: heading.font().pointSizeF() > large.pointSizeF())
        assert heading.font().bold() or heading.font().weight() >= QFont.Weight.DemiBold
        assert heading.fontMetrics().height() > window.inspector.total_label.fontMetrics().height()
    finally:
        application().setFont(usual)
