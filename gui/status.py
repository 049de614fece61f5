"""The window's status bar: work in progress, an Undo offer, the model's state and how tokens are counted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QProgressBar, QPushButton, QStatusBar

from . import theme
from .wording import brief

UNDO_OFFER_MS = 15_000

MODEL_STATE_HELP = {
    "configured": "Replies come from this hosted model; it is contacted when you send a message",
    "ready": "The model is loaded and answers offline",
    "loading…": "Loading the model in the background; the window stays usable",
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
        self.undo.hide()
        self._undo_timer = QTimer(bar)
        self._undo_timer.setSingleShot(True)
        self._undo_timer.setInterval(UNDO_OFFER_MS)
        self._undo_timer.timeout.connect(self.undo.hide)
        self._undo_action: Callable[[], Any] | None = None
        self.undo.clicked.connect(self._run_undo)
        # Which model answers and whether it can (loading, ready, the reason it cannot), and how tokens are counted.
        self.model = QLabel()
        self.counting = QLabel()
        for widget in (self.undo, self.progress, self.counting, self.model):
            bar.addPermanentWidget(widget)

    def working(self, text: str) -> None:
        self.progress.show()
        self.bar.showMessage(text)

    def idle(self) -> None:
        self.progress.hide()
        if not self.bar.currentMessage().endswith(("failed", "ready")):
            self.bar.clearMessage()

    def failed(self, error: str) -> None:
        self.bar.showMessage(brief(error), 15_000)

    def offer_undo(self, text: str, action: Callable[[], Any]) -> None:
        self._undo_action = action
        self.bar.showMessage(text, UNDO_OFFER_MS)
        self.undo.show()
        self._undo_timer.start()

    def _run_undo(self) -> None:
        action, self._undo_action = self._undo_action, None
        self.undo.hide()
        if action is not None:
            action()

    def show_model(self, name: str, model: str, state: str, reason: str = "") -> None:
        self.model.setText(f"{name} · {model} · {state}")
        self.model.setStyleSheet(f"color: {theme.current.error_text};" if state == "unavailable" else "")
        self.model.setToolTip(reason or MODEL_STATE_HELP.get(state, ""))

    def show_counting(self, exact: bool | None) -> None:
        self.counting.setText("" if exact is None else "exact token counts" if exact else "estimated token counts")
