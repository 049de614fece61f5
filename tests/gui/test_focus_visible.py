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
