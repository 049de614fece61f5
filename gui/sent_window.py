"""A reply's "What was sent": the prompt it was written from, part by part (core/chat/sent_prompts.py), in a window
of its own beside the conversation: the parts above, the chosen part's text below; choosing a part also shows what
it came from."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDialog, QLabel, QPlainTextEdit, QSplitter, QVBoxLayout, QWidget

from ..core.context.prompt_parts import PromptPart
from .inspector_prompt import PromptView


class SentWindow(QDialog):
    """`source_chosen(kind, source id)`: a part was chosen: show the message or summary it came from."""

    source_chosen = Signal(str, str)

    def __init__(self, parent: QWidget, when: str) -> None:
        super().__init__(parent)
        self.setWindowTitle("What was sent")
        self.resize(600, 680)
        self.heading = QLabel(f"The prompt the reply of {when} was written from, as it was sent. Later summaries, "
                              "their undo and edits leave it as it was.")
        self.heading.setWordWrap(True)
        self.note = QLabel("Reading what was sent…")
        self.note.setObjectName("muted")
        self.note.setWordWrap(True)
        self.view = PromptView(self, fitted=False)
        self.view.copy_request_button.hide()  # the request is the provider's of now, not of then
        self.view.source_chosen.connect(self.source_chosen)
        self.view.list.currentRowChanged.connect(self._show_part)
        self.part_text = QPlainTextEdit()
        self.part_text.setReadOnly(True)
        self.part_text.setAccessibleName("The chosen part's text")
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.addWidget(self.view)
        self.split.addWidget(self.part_text)
        self.split.setSizes([380, 240])
        self.split.hide()
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.note)
        layout.addWidget(self.split, 1)
        self.setModal(False)

    def show_result(self, result: tuple[list[PromptPart], int] | str) -> None:
        """The parts and their tokens (the last message chosen: the one replied to); or why they cannot be shown (a
        reply from before replies kept a record)."""
        if isinstance(result, str):
            self.note.setText(f"What this reply was sent cannot be shown: {result}.")
            return
        parts, total = result
        self.note.hide()
        self.view.show_parts(parts, total)
        self.split.show()
        asked = max((n for n, part in enumerate(parts) if part.role == "user"), default=0)
        self.view.list.setCurrentRow(asked)

    def _show_part(self, number: int) -> None:
        part = self.view.parts[number] if 0 <= number < len(self.view.parts) else None
        self.part_text.setPlainText("" if part is None else part.text or part.detail)
