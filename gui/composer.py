"""The message box: Enter sends, Shift+Enter starts a new line, Stop (or Esc) while a reply streams; files can be
dropped."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QStringListModel, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut, Qt
from PySide6.QtWidgets import (
    QCompleter,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
)

from ..core.chat import commands
from . import theme
from .wording import brief

DRAFT_SAVE_MS = 400
EDIT_LINES = 4  # at the usual font about the 78 px the box had
WAIT_FOR_REPLY = "A reply is being written: your text stays here; send it when the reply is done (Stop ends it now)."
# Keys the completion list handles while it is open (choose, dismiss); the box must not act on them too.
COMPLETER_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Escape, Qt.Key.Key_Tab, Qt.Key.Key_Backtab)


def completion_entry(command: commands.Command) -> str:
    """A line of the completion list: the usage, then what the command does."""
    return f"{command.usage}  —  {command.help}"


class ComposerEdit(QPlainTextEdit):
    submitted = Signal()
    escaped = Signal()
    files_dropped = Signal(list)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("composerEdit")
        self.setPlaceholderText("Message…  (Enter to send, Shift+Enter for a new line, / for commands)")
        # A screen reader reads the name, not the placeholder, once the box holds text.
        self.setAccessibleName("Message")
        self.setAccessibleDescription("Enter sends, Shift+Enter starts a new line, / starts a command")
        self.setAcceptDrops(True)
        self.setTabChangesFocus(True)
        self._fit_lines()
        # Slash-command completion from the command registry, with what each command does; which commands match
        # what is typed is the registry's rule (commands.completions), so the list shows them all, unfiltered.
        self._entries = {completion_entry(command): command for command in commands.slash_commands()}
        self._offered = QStringListModel(self)
        self.completer = QCompleter(self._offered, self)
        self.completer.setWidget(self)
        self.completer.setCompletionMode(QCompleter.CompletionMode.UnfilteredPopupCompletion)
        self.completer.activated[str].connect(self._complete)

    def _fit_lines(self) -> None:
        """As tall as EDIT_LINES lines of its font, whatever its size (View → Zoom, a large system font): at a
        fixed 78 px a zoomed box showed one line and a half, and a large font cut its placeholder."""
        margins = self.contentsMargins()
        document = 2 * round(self.document().documentMargin())
        self.setFixedHeight(EDIT_LINES * self.fontMetrics().lineSpacing() + document + margins.top() + margins.bottom())

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._fit_lines()

    def _complete(self, entry: str) -> None:
        command = self._entries.get(entry)
        if command is not None:
            self.setPlainText(f"/{command.name}" + (" " if command.argument else ""))
            self.moveCursor(self.textCursor().MoveOperation.End)

    def _update_completion(self) -> None:
        """Offer the commands that start with what is typed, while only a command name is typed."""
        text, popup = self.toPlainText(), self.completer.popup()
        if not text.startswith("/") or text.startswith("//") or any(c.isspace() for c in text):
            popup.hide()
            return
        offered = commands.completions(text)
        if not offered:
            popup.hide()
            return
        self._offered.setStringList([completion_entry(command) for command in offered])
        popup.setCurrentIndex(self.completer.completionModel().index(0, 0))
        rect = self.cursorRect()
        rect.setWidth(min(self.width(), popup.sizeHintForColumn(0) + popup.verticalScrollBar().sizeHint().width()))
        self.completer.complete(rect)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if self.completer.popup().isVisible() and event.key() in COMPLETER_KEYS:
            event.ignore()
            return
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
                event.modifiers() & Qt.KeyboardModifier.ShiftModifier):
            self.submitted.emit()
            return
        if event.key() == Qt.Key.Key_Escape:
            self.escaped.emit()
            return
        super().keyPressEvent(event)
        if event.text():
            self._update_completion()

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
        self.attach_button = QPushButton("Attach…")
        self.attach_button.setToolTip("Add files to the chat as read_file tool messages (or drop them here)")
        self.send_button = QPushButton("Send")
        self.send_button.setObjectName("primary")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("danger")
        self.stop_button.hide()
        # Esc stops a reply wherever the focus is in the window; a dialog's Esc stays the dialog's.
        self.stop_shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), self, context=Qt.ShortcutContext.WindowShortcut)
        self.stop_shortcut.setEnabled(False)
        self.hint = QLabel("")
        self.hint.setObjectName("muted")
        self.hint.setWordWrap(True)
        self.hint.setTextFormat(Qt.TextFormat.PlainText)  # error text from a server is shown, never rendered

        # The draft's tokens against what is left in the window (gui/draft_count.py keeps it up to date).
        self.token_count = QLabel("")
        self.token_count.setObjectName("muted")

        buttons = QHBoxLayout()
        buttons.addWidget(self.token_count)
        buttons.addStretch(1)
        buttons.addWidget(self.attach_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.send_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(6)
        layout.addWidget(self.edit)
        # Under the box across its width, not beside the buttons: there a failure stood in a column a word wide.
        layout.addWidget(self.hint)
        self.hint.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)  # as tall as its lines
        self.hint.hide()
        layout.addLayout(buttons)

        self.edit.submitted.connect(self._submit)
        self.edit.escaped.connect(self.cancel_requested)
        self.send_button.clicked.connect(self._submit)
        self.stop_button.clicked.connect(self.stop_requested)
        self.stop_shortcut.activated.connect(self.stop_requested)
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
        """Replace the text without counting it as a new draft to save (its tokens are counted)."""
        self.edit.setPlainText(text)
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
        self.stop_shortcut.setEnabled(streaming)
        self.send_button.setVisible(not streaming)
        if not streaming and self.hint.text() == brief(WAIT_FOR_REPLY):
            self.set_hint("")

    def set_hint(self, text: str, error: bool = False, details: str = "") -> None:
        """One short line under the box; a long text is cut, and shown whole in the tooltip."""
        theme.style_as(self.hint, "error" if error else "muted")
        shown = brief(text)
        self.hint.setText(shown)
        self.hint.setVisible(bool(shown))
        tip = details or (text if shown != text.strip() else "")
        self.hint.setToolTip(Qt.convertFromPlainText(tip) if tip else "")

    def show_token_count(self, text: str, level: str = "muted", details: str = "") -> None:
        """`level`: muted, warning (sending it makes a summary) or error (it would not fit)."""
        theme.style_as(self.token_count, level)
        self.token_count.setText(text)
        self.token_count.setToolTip(details)

    def _submit(self) -> None:
        text = self.text()
        if not text.strip():
            return
        if not self.send_button.isVisible():
            self.set_hint(WAIT_FOR_REPLY)
            return
        self.send_requested.emit(text)

    def _choose_files(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Attach files")
        if files:
            self.attach_requested.emit(files)
