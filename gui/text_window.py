"""Read-only text windows: /history's answer and the command list."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QTextEdit, QVBoxLayout, QWidget


def show_text(parent: QWidget, title: str, markdown: str) -> QDialog:
    """A non-modal window of read-only Markdown (History, the command list)."""
    dialog = QDialog(parent)
    dialog.setWindowTitle(title)
    dialog.resize(640, 520)
    view = QTextEdit(dialog)
    view.setReadOnly(True)
    view.setMarkdown(markdown)
    QVBoxLayout(dialog).addWidget(view)
    dialog.setModal(False)
    dialog.show()
    return dialog
