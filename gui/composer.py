"""The message box: Enter sends, Shift+Enter starts a new line, Stop while a reply streams; files can be dropped."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFileDialog, QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout

from .wording import brief

DRAFT_SAVE_MS = 400


class ComposerEdit(QPlainTextEdit):
    submitted = Signal()
    escaped = Signal()
    files_dropped = Signal(list)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("composerEdit")
        self.setPlaceholderText("Message…  (Enter to send, Shift+Enter for a new line, / for commands)")
        self.setAcceptDrops(True)
        self.setTabChangesFocus(True)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
                event.modifiers() & Qt.KeyboardModifier.ShiftModifier):
            self.submitted.emit()
            return
        if event.key() == Qt.Key.Key_Escape:
            self.escaped.emit()
            return
        super().keyPressEvent(event)

    def canInsertFromMimeData(self, source) -> bool:  # noqa: N802
        return source.hasUrls() or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source) -> None:  # noqa: N802
        files = [url.toLocalFile() for url in source.urls() if url.isLocalFile()] if source.hasUrls() else []
        if files:
            self.files_dropped.emit(files)
        else:
            super().insertFromMimeData(source)


class Composer(QFrame):
    """Emits `send_requested(text)`; the window decides what the text means (message or slash command)."""

    send_requested = Signal(str)
    stop_requested = Signal()
    # Escape: give up editing a sent message.
    cancel_requested = Signal()
    attach_requested = Signal(list)
    draft_changed = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("composer")
        self.edit = ComposerEdit(self)
        self.edit.setFixedHeight(78)
        self.attach_button = QPushButton("Attach…")
        self.attach_button.setToolTip("Add files to the chat as read_file tool messages (or drop them here)")
        self.send_button = QPushButton("Send")
        self.send_button.setObjectName("primary")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("danger")
        self.stop_button.hide()
        self.hint = QLabel("")
        self.hint.setObjectName("muted")
        self.hint.setWordWrap(True)

        buttons = QHBoxLayout()
        buttons.addWidget(self.hint, 1)
        buttons.addWidget(self.attach_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.send_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(6)
        layout.addWidget(self.edit)
        layout.addLayout(buttons)

        self.edit.submitted.connect(self._submit)
        self.edit.escaped.connect(self.cancel_requested)
        self.send_button.clicked.connect(self._submit)
        self.stop_button.clicked.connect(self.stop_requested)
        self.attach_button.clicked.connect(self._choose_files)
        self.edit.files_dropped.connect(self.attach_requested)
        self._draft_timer = QTimer(self)
        self._draft_timer.setSingleShot(True)
        self._draft_timer.setInterval(DRAFT_SAVE_MS)
        self._draft_timer.timeout.connect(lambda: self.draft_changed.emit(self.text()))
        self.edit.textChanged.connect(self._draft_timer.start)

    def text(self) -> str:
        return self.edit.toPlainText()

    def set_text(self, text: str) -> None:
        """Replace the text without counting it as a new draft."""
        self.edit.blockSignals(True)
        self.edit.setPlainText(text)
        self.edit.blockSignals(False)
        self._draft_timer.stop()
        cursor = self.edit.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        self.edit.setTextCursor(cursor)

    def flush_draft(self) -> None:
        if self._draft_timer.isActive():
            self._draft_timer.stop()
            self.draft_changed.emit(self.text())

    def set_streaming(self, streaming: bool) -> None:
        self.stop_button.setVisible(streaming)
        self.send_button.setVisible(not streaming)

    def set_hint(self, text: str, error: bool = False, details: str = "") -> None:
        """One short line under the box; a long text is cut, and shown whole in the tooltip."""
        self.hint.setObjectName("error" if error else "muted")
        self.hint.setStyleSheet("")
        shown = brief(text)
        self.hint.setText(shown)
        self.hint.setToolTip(details or (text if shown != text.strip() else ""))

    def _submit(self) -> None:
        text = self.text()
        if text.strip() and self.send_button.isVisible():
            self.send_requested.emit(text)

    def _choose_files(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Attach files")
        if files:
            self.attach_requested.emit(files)
