"""Where the keyboard is, seen (issue: a keyboard user could not tell which button Tab had reached): each kind of
control the window and the settings hold looks different while it has the focus, and keeps its size."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QCheckBox, QComboBox, QTabBar, QToolButton

from tests.gui.conftest import open_settings
from tests.gui.test_window import dialogue


def focused_look(qtbot, widget, elsewhere):
    """(the widget's picture without the focus, with it, its size without, with)."""
    elsewhere.setFocus()
    qtbot.waitUntil(elsewhere.hasFocus)
    before, size = widget.grab().toImage(), widget.size()
    widget.setFocus()
    qtbot.waitUntil(widget.hasFocus)
    return before, widget.grab().toImage(), size, widget.size()


def shown_control(dialog, kind):
    """The first enabled control of this kind on the settings' pages, its page shown."""
    for page in range(dialog.tabs.count()):
        dialog.tabs.setCurrentIndex(page)
        for control in dialog.findChildren(kind):
            if control.isVisible() and control.isEnabled():
                return control
    raise AssertionError(f"no {kind.__name__} in the settings")


@pytest.mark.parametrize("theme_choice", ["light", "dark"])
def test_each_kind_of_control_shows_it_has_the_focus(qtbot, make_window, store, theme_choice):
    from precis.gui import theme

    store.import_chat("Tides", dialogue(6, "Tide tables, part"))
    window = make_window()
    theme.choose(theme_choice)
    try:
        window.activateWindow()
        inspector = window.inspector
        controls = {
            "button": window.composer.attach_button,
            "primary button": window.composer.send_button,
            "line edit": window.chat_list.search,
            "section header": inspector.findChildren(QToolButton, "sectionHeader")[0],
            "tab": inspector.findChildren(QTabBar)[0],
        }
        for name, control in controls.items():
            elsewhere = window.chat_list.new_button
            before, after, size, focused_size = focused_look(qtbot, control, elsewhere)
            assert before != after, f"the {name} looks the same with the focus"
            assert size == focused_size, f"the {name} changes size with the focus"
        dialog = open_settings(qtbot, window)
        try:
            for kind in (QCheckBox, QComboBox):
                control = shown_control(dialog, kind)
                before, after, _, _ = focused_look(qtbot, control, dialog.tabs.tabBar())
                assert before != after, f"the {kind.__name__} looks the same with the focus"
        finally:
            dialog.reject()
    finally:
        theme.choose("system")


def test_tabbing_into_the_conversation_shows_the_focus_on_the_row_being_read(qtbot, make_window, store):
    """With no row current, Tab into the conversation showed nothing until an arrow key was pressed: the row being
    read (the reading place's, or the last at the end) becomes current and selected, and the view does not move."""
    from precis.core.chat.reading_place import ReadingPlace
    from PySide6.QtCore import QModelIndex, Qt
    from PySide6.QtWidgets import QApplication

    from tests.gui.test_window import long_dialogue, open_imported_chat

    window = make_window()
    open_imported_chat(qtbot, window, store, long_dialogue(40, "tides"))
    view, chats = window.conversation, window.chat_list.list
    window.activateWindow()

    def tab_in():
        chats.setFocus()
        qtbot.waitUntil(chats.hasFocus)
        assert not view.currentIndex().isValid()
        before, scrolled = view.viewport().grab().toImage(), view.verticalScrollBar().value()
        qtbot.keyClick(chats, Qt.Key.Key_Tab)
        assert QApplication.focusWidget() is view
        assert view.verticalScrollBar().value() == scrolled  # the reader's place stays
        assert view.viewport().grab().toImage() != before  # the focus is seen
        return view.currentIndex().row(), view.selected_row()

    reading = view.rows_model.row_of(window.chat.snapshot.messages[20].id)
    view.hold(ReadingPlace(key=view.rows_model.row_at(reading).key, into=0.0))
    qtbot.waitUntil(lambda: view.reading_place() is not None and not view.is_at_bottom())
    number, selected = tab_in()
    assert number == reading and selected is view.rows_model.row_at(reading)

    view.setCurrentIndex(QModelIndex())
    view.clearSelection()
    view.scroll_to_end()
    qtbot.waitUntil(view.is_at_bottom)
    number, selected = tab_in()
    last = view.rows_model.rowCount() - 1
    assert number == last and selected is view.rows_model.row_at(last)
    assert view.is_at_bottom() and view.following  # a reply streamed next is still followed


@pytest.mark.parametrize("theme_choice", ["light", "dark"])
def test_a_read_only_text_view_shows_it_has_the_focus_and_not_once_it_has_gone(qtbot, make_window, store,
                                                                               theme_choice):
    """The style sheet rings only the editable text boxes (its rule on the inspector's read-only views was re-applied
    to a 100,000-message summary on each select): a read-only view is ringed by an overlay over its edge."""
    from precis.gui import theme
    from PySide6.QtGui import QColor

    store.import_chat("Tides", dialogue(6, "Tide tables, part"))
    window = make_window()
    theme.choose(theme_choice)
    try:
        window.activateWindow()
        view, elsewhere = window.inspector.summary_text, window.chat_list.new_button
        assert view.isReadOnly() and view.isVisible()
        before, after, size, focused_size = focused_look(qtbot, view, elsewhere)
        assert before != after, "the read-only text view looks the same with the focus"
        assert size == focused_size
        accent = QColor(theme.current.accent).rgb()
        edge = [after.pixel(x, after.height() // 2) for x in range(3)]
        assert accent in edge, "the ring is not in the accent colour at the view's edge"

        elsewhere.setFocus()
        qtbot.waitUntil(elsewhere.hasFocus)
        assert view.grab().toImage() == before, "the ring stayed after the focus left"
    finally:
        theme.choose("system")



def test_a_text_window_closed_with_the_ring_on_it_leaves_the_ring_working(qtbot, make_window, store):
    """The ring is a child of the view it rings: deleted with a closed text window (/history's), the next read-only
    view still gets one."""
    from precis.gui.text_window import show_text
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QTextEdit

    store.import_chat("Tides", dialogue(6, "Tide tables, part"))
    window = make_window()
    dialog = show_text(window, "History", "The tide tables, read aloud.")
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    closed = dialog.findChild(QTextEdit)
    dialog.activateWindow()
    closed.setFocus()
    qtbot.waitUntil(closed.hasFocus)
    with qtbot.waitSignal(dialog.destroyed):
        dialog.close()

    window.activateWindow()
    before, after, _, _ = focused_look(qtbot, window.inspector.summary_text, window.chat_list.new_button)
    assert before != after
