"""The consent card: above the message box, it asks whether a tool call the model made may run, showing what it
would do, and waits for Allow once, Allow in this chat or Deny. A widget in the window, not a modal dialog: the
rest of the window stays usable (Stop and Esc end the answer, which denies the call)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QFontDatabase, QTextOption
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout

from ..core.chat.tool_loop import ALLOW_IN_CHAT, ALLOW_ONCE, DENY, Decision
from ..core.model.messages import ToolCall
from ..core.providers.base import CancelToken

# How often the waiting worker looks whether the answer was stopped meanwhile (Stop, the chat closed).
CANCEL_POLL_SECONDS = 0.1
PREVIEW_LINES = 12  # the preview's most visible lines; a longer one scrolls
PREVIEW_LEAST_LINES = 2  # in a short window the preview shrinks down to these, scrolling, rather than grow the window


class _Preview(QPlainTextEdit):
    """The preview, as tall as its lines (up to PREVIEW_LINES) where the window has room, down to
    PREVIEW_LEAST_LINES where it has not: fixed to its lines' height, it grew the window past the screen's."""

    def __init__(self) -> None:
        super().__init__()
        self.wanted = self.least = 0

    def fit(self, lines: int) -> None:
        line_height = self.fontMetrics().lineSpacing()
        frame = 2 * int(self.document().documentMargin()) + self.horizontalScrollBar().sizeHint().height() + 4
        self.wanted = min(max(lines, PREVIEW_LEAST_LINES), PREVIEW_LINES) * line_height + frame
        self.least = PREVIEW_LEAST_LINES * line_height + frame
        self.setMaximumHeight(self.wanted)
        self.updateGeometry()

    def sizeHint(self) -> QSize:
        return QSize(super().sizeHint().width(), self.wanted)

    def minimumSizeHint(self) -> QSize:
        return QSize(super().minimumSizeHint().width(), self.least)


@dataclass
class ConsentRequest:
    """One call waiting for the user: asked on the loop's thread, answered on the window's."""

    call: ToolCall
    preview: str
    question: str  # what it would do, and where (Toolbox.question)
    decision: Decision = DENY
    _answered: threading.Event = field(default_factory=threading.Event)

    def decide(self, decision: Decision) -> None:
        self.decision = decision
        self._answered.set()

    def wait(self, cancel: CancelToken) -> Decision:
        """The user's decision; Deny once the answer is stopped (Stop, Esc, the chat or the window closed)."""
        while not self._answered.wait(CANCEL_POLL_SECONDS):
            if cancel.cancelled:
                return DENY
        return self.decision


class ConsentCard(QFrame):
    """Shows one request at a time; `decided(request, decision)` when a button is pressed."""

    decided = Signal(object, str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("consentCard")
        self.request: ConsentRequest | None = None
        self.title = QLabel()
        self.title.setObjectName("consentTitle")
        self.title.setTextFormat(Qt.TextFormat.PlainText)  # a tool's name comes from a server: shown, never rendered
        self.title.setWordWrap(True)
        self.preview = _Preview()
        self.preview.setObjectName("consentPreview")
        self.preview.setAccessibleName("What the tool would do")  # until ask() names the call
        self.preview.setReadOnly(True)
        self.preview.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.preview.setWordWrapMode(QTextOption.WrapMode.NoWrap)  # a diff reads line by line; it scrolls sideways
        self.preview.setTabChangesFocus(True)
        self.note = QLabel("Esc or Stop denies it and ends the answer.")
        self.note.setObjectName("muted")
        self.allow_once = QPushButton("&Allow once")
        self.allow_once.setObjectName("primary")
        self.allow_in_chat = QPushButton("Allow in this c&hat")
        self.allow_in_chat.setToolTip("Run this tool without asking again in this chat (Settings → This chat takes it back)")
        self.deny = QPushButton("&Deny")
        self.deny.setObjectName("danger")
        for button, decision in ((self.allow_once, ALLOW_ONCE), (self.allow_in_chat, ALLOW_IN_CHAT), (self.deny, DENY)):
            button.setAutoDefault(True)  # Enter on the focused button presses it
            button.clicked.connect(lambda _checked=False, d=decision: self._decide(d))

        buttons = QHBoxLayout()
        buttons.addWidget(self.note, 1)
        buttons.addWidget(self.allow_once)
        buttons.addWidget(self.allow_in_chat)
        buttons.addWidget(self.deny)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.setSpacing(6)
        layout.addWidget(self.title)
        layout.addWidget(self.preview)
        layout.addLayout(buttons)
        self.setTabOrder(self.preview, self.allow_once)
        self.setTabOrder(self.allow_once, self.allow_in_chat)
        self.setTabOrder(self.allow_in_chat, self.deny)
        self.hide()

    def ask(self, request: ConsentRequest) -> None:
        """Show the request and take the focus to its preview: keys scroll it, Tab reaches the buttons (Alt+A,
        Alt+H, Alt+D press them). Not to a button: Enter typed for the message box must not allow a call."""
        self.request = request
        self.title.setText(f"{request.question} Allow it?")
        self.preview.setPlainText(request.preview)
        self.preview.setAccessibleName(self.title.text())  # it takes the focus: a screen reader says what is asked
        self.preview.fit(request.preview.count("\n") + 1)
        self.show()
        self.preview.setFocus()

    def withdraw(self) -> None:
        """The answer ended (Stop, the chat closed): the question no longer stands."""
        self.request = None
        self.hide()

    def _decide(self, decision: Decision) -> None:
        request, self.request = self.request, None
        self.hide()
        if request is not None:
            self.decided.emit(request, decision)
