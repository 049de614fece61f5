"""The window's status bar: work in progress, an Undo offer, the model's state and how tokens are counted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent
from PySide6.QtWidgets import QLabel, QProgressBar, QPushButton, QStatusBar

from ..core.model.counted import counted
from . import theme
from .wording import brief

UNDO_OFFER_MS = 15_000
# How long a result ("Reply regenerated.", "Summary undone: …") stays readable in the status bar.
NOTICE_MS = 8_000
# What opening the store found (an empty database file started anew): said once, for long enough to be read.
OPENING_NOTICE_MS = 60_000

# The model's state after a reply failed (the server is not there, refused the key, ...): until one comes back.
NOT_ANSWERING = "not answering"
MODEL_STATE_HELP = {
    "configured": "Replies come from this hosted model; it is contacted when you send a message",
    "ready": "The model is loaded and answers offline",
    "loading…": "Loading the model in the background; the window stays usable",
    "summarizing…": "The model is writing a summary of older messages; a reply waits until it is done",
}


class StatusLine:
    """Widgets added to a window's status bar, and what they say."""

    def __init__(self, bar: QStatusBar) -> None:
        self.bar = bar
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(160)
        self.progress.setRange(0, 0)
        self.progress.hide()
        self.undo = QPushButton("Undo")
        self.undo.setObjectName("undoOffer")
        self.undo.hide()
        self._undo_timer = QTimer(bar)
        self._undo_timer.setSingleShot(True)
        self._undo_timer.setInterval(UNDO_OFFER_MS)
        self._undo_timer.timeout.connect(self.undo.hide)
        self._undo_action: Callable[[], Any] | None = None
        self._undo_lasting = False  # the offer stays until withdrawn (see offer_undo)
        self.undo.clicked.connect(self._run_undo)
        # Which model answers and whether it can (loading, ready, the reason it cannot), and how tokens are counted.
        self.model = QLabel()
        self.counting = QLabel()
        self.read_only = QLabel("read-only folder")  # shown while the store cannot be written (show_read_only)
        self.read_only.setObjectName("error")
        self.read_only.hide()
        for widget in (self.undo, self.progress, self.read_only, self.counting, self.model):
            bar.addPermanentWidget(widget)
        self._work_text = ""
        self._undo_text = ""  # what the Undo offer undoes, said beside its button
        bar.messageChanged.connect(self.announce)

    def announce(self, text: str) -> None:
        """A screen reader says each message the bar shows (work begun, a result, an error): the bar draws it itself,
        so nothing else tells them; and what is told without showing it (a reply finished). Politely: after what the
        reader is saying, not cutting it off; the focus stays where it is."""
        if text:
            QAccessible.updateAccessibility(QAccessibleAnnouncementEvent(self.bar, text))

    def working(self, text: str) -> None:
        self.progress.show()
        self._work_text = text
        self.bar.showMessage(text)

    def idle(self) -> None:
        """The work is done: its own line goes; a result or an error said since stays for its time. While an Undo
        is offered, what it undoes comes back beside it (deleting the open chat opens the next: "Chat deleted." went
        at once, leaving its Undo button unexplained). Nothing else said before the work comes back: it was about
        what came before (a reply cut at its limit, a chat being created), not about what the work did."""
        self.progress.hide()
        if self.bar.currentMessage() == self._work_text:
            self.bar.clearMessage()
            if self._undo_action is not None and self._undo_lasting:
                self.bar.showMessage(self._undo_text)
            elif self._undo_action is not None and self._undo_timer.isActive():
                self.bar.showMessage(self._undo_text, self._undo_timer.remainingTime())
        self._work_text = ""

    def tell(self, text: str, msecs: int = NOTICE_MS) -> None:
        self.bar.showMessage(text, msecs)

    def failed(self, error: str) -> None:
        self.tell(brief(error), 15_000)

    def offer_undo(self, text: str, label: str, action: Callable[[], Any], lasting: bool = False) -> None:
        """Say what happened, with a button labelled with what it undoes (e.g. "Undo regenerate"), for
        UNDO_OFFER_MS; `lasting`, until withdrawn (what it undoes did not happen here: the user may not have seen
        it happen)."""
        self._undo_action = action
        self._undo_text = text
        self._undo_lasting = lasting
        self.tell(text, 0 if lasting else UNDO_OFFER_MS)
        self.undo.setText(label)
        self.undo.show()
        if lasting:
            self._undo_timer.stop()
        else:
            self._undo_timer.start()

    def withdraw_undo(self, label: str | None = None) -> None:
        """The offer no longer applies (another chat is open); with `label`, only an offer with that label."""
        if label is not None and (self._undo_action is None or self.undo.text() != label):
            return
        self._undo_action = None
        self._undo_lasting = False
        self._undo_timer.stop()
        self.undo.hide()

    def _run_undo(self) -> None:
        action = self._undo_action
        self.withdraw_undo()
        if action is not None:
            action()

    def show_read_only(self, path: str) -> None:
        """Say, for as long as the window is open, that nothing can be saved: every send, summary or rename would
        fail, each telling why only after the fact."""
        self.read_only.setToolTip(f"{path} cannot be written (a read-only folder or file): chats can be read, searched "
                                  "and exported, but messages, summaries, drafts and settings are not saved. Make it "
                                  "writable and start Precis again to change them.")
        self.read_only.show()

    def show_model(self, name: str, model: str, state: str, reason: str = "") -> None:
        self.model.setText(f"{name} · {model} · {state}")
        self.model.setStyleSheet(f"color: {theme.current.error_text};" if state in ("unavailable", NOT_ANSWERING) else "")
        self.model.setToolTip(reason or MODEL_STATE_HELP.get(state, ""))

    def show_counting(self, exact: bool | None, left: int = 0) -> None:
        """Whether the counts are the model's own tokenizer's; `left`: messages still being counted (estimated)."""
        self.counting.setText("" if exact is None else f"counting tokens: {counted(left, 'message')} to go" if left
                              else "exact token counts" if exact else "estimated token counts")
