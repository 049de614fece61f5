"""The inspector's Prompt section: the next prompt as it will be sent, part by part (core/context/prompt_parts.py),
each with its tokens and where it came from; choosing a part shows its source; Copy puts the whole prompt on the
clipboard as text."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout, QWidget

from ..core.context.prompt_parts import PromptPart
from ..core.model.counted import counted
from .inspector_section import FittedList

TOOLTIP_CHARS = 2000  # of a part's text in its tooltip (Copy gives all of it)


class PromptView(QWidget):
    """`source_chosen(kind, source id)`: a part was chosen (a click, Enter): show what it came from."""

    source_chosen = Signal(str, str)

    def __init__(self, parent=None, fitted: bool = True) -> None:
        """`fitted`: as tall as its parts, for a panel that scrolls (the inspector); else the list scrolls."""
        super().__init__(parent)
        self.parts: list[PromptPart] = []
        self.total_label = QLabel("")
        self.total_label.setObjectName("muted")
        self.total_label.setWordWrap(True)
        self.request = ""  # the provider's request for this prompt, as JSON
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy the whole prompt, as sent, as text")
        self.copy_button.clicked.connect(self.copy)
        self.copy_request_button = QPushButton("Copy request")
        self.copy_request_button.setToolTip("Copy the request the provider is sent for this prompt, as JSON (never "
                                            "an API key: keys go in headers)")
        self.copy_request_button.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.request))
        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.addWidget(self.total_label, 1)
        head.addWidget(self.copy_button)
        head.addWidget(self.copy_request_button)
        self.list = FittedList() if fitted else QListWidget()
        self.list.setWordWrap(True)
        self.list.setAccessibleName("Prompt parts, in the order sent")
        self.list.itemClicked.connect(self._chosen)
        self.list.itemActivated.connect(self._chosen)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(head)
        layout.addWidget(self.list)

    def show_parts(self, parts: list[PromptPart], total: int, request: str = "") -> None:
        self.parts, self.request = parts, request
        self.total_label.setText(f"{counted(total, 'token')} in {counted(len(parts), 'part')}, in the order sent")
        self.list.clear()
        for number, part in enumerate(parts, 1):
            detail = f" · {part.detail}" if part.detail else ""
            item = QListWidgetItem(f"{number}. {part.kind} · {part.role} · {part.tokens:,} tokens{detail}")
            text = part.text if len(part.text) <= TOOLTIP_CHARS else part.text[:TOOLTIP_CHARS] + "…"
            item.setToolTip(text or part.detail)
            item.setData(Qt.ItemDataRole.UserRole, (part.kind, part.source))
            self.list.addItem(item)
        self.copy_button.setEnabled(bool(parts))
        self.copy_request_button.setEnabled(bool(request))

    def clear(self) -> None:
        self.show_parts([], 0)
        self.total_label.setText("")

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(prompt_text(self.parts))

    def _chosen(self, item: QListWidgetItem) -> None:
        kind, source = item.data(Qt.ItemDataRole.UserRole)
        if source:
            self.source_chosen.emit(kind, source)


def prompt_text(parts: list[PromptPart]) -> str:
    """The prompt as text: each part under a line naming its role and kind."""
    return "\n\n".join(f"[{part.role}: {part.kind}]\n{part.text}" if part.text else f"[{part.role}: {part.kind}]"
                       for part in parts)

