"""The window for a screen reader: every control it can land on is named, as Qt's accessibility interface (what
AT-SPI, UI Automation and VoiceOver read) reports it."""

from __future__ import annotations

from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QHeaderView,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)

from tests.gui.conftest import open_settings
from tests.gui.test_window import dialogue

# What a reader lands on and must be told the name of: a control that takes input or holds a list.
CONTROLS = (QAbstractButton, QLineEdit, QAbstractItemView, QComboBox, QAbstractSpinBox, QTextEdit, QPlainTextEdit)


def accessible_name(widget: QWidget) -> str:
    interface = QAccessible.queryAccessibleInterface(widget)
    return interface.text(QAccessible.Text.Name) if interface is not None else ""


def unnamed_controls(root: QWidget) -> list[str]:
    """Every control under `root`, shown or not (a folded section, another settings page), with no name. Qt's own
    parts are left out: a header, a combo box's pop-up list, a line edit's clear button, the menu bar's overflow."""
    unnamed = []
    for widget in root.findChildren(QWidget):
        if not isinstance(widget, CONTROLS) or isinstance(widget, QHeaderView):
            continue
        parent = widget.parentWidget()
        if parent.metaObject().className() == "QComboBoxPrivateContainer" or isinstance(parent, QLineEdit) \
                or widget.objectName().startswith("qt_"):
            continue
        if not accessible_name(widget).strip():
            unnamed.append(f"{type(widget).__name__} under {type(parent).__name__} {parent.objectName()!r}")
    return unnamed


def test_every_control_of_the_window_and_the_settings_has_a_name(qtbot, make_window, store):
    store.import_chat("Tides", dialogue(6, "Tide tables, part"))
    window = make_window()
    assert unnamed_controls(window) == []
    assert accessible_name(window.composer.edit) == "Message"  # not the placeholder, which is gone once typing
    dialog = open_settings(qtbot, window)
    try:
        assert unnamed_controls(dialog) == []
        # A field's editor is named by its row's title, so the Override boxes of This chat say which they override.
        names = [accessible_name(box) for box in dialog.findChildren(QAbstractButton) if box.text() == "Override"]
        assert names and all(name.startswith("Override ") and name != "Override " for name in names)
    finally:
        dialog.reject()
