"""The suggestion of a better model: a card above the message box, shown once to someone chatting with the built-in
model (after a few of its replies, or at once when an answer needed recalled text; core.models.suggestion), naming
the measured difference, with Choose a model… (Settings at the catalogue) and Dismiss. Not a dialog: the chat goes
on beside it. Dismissed, or its Choose a model… clicked, it is remembered in the store and never made again."""

from __future__ import annotations

import logging
from collections.abc import Callable

from pydantic import ValidationError
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout

from ..core.chat.snapshot import ReplyResult
from ..core.models.catalogue import read_catalogue, read_embedded
from ..core.models.suggestion import SuggestionRule, suggestion_text
from ..core.providers.base import Provider
from ..core.settings import MODEL_SUGGESTION_KEY, ModelSuggestion
from ..core.storage.store import Store

log = logging.getLogger("precis.gui")

TITLE = "A larger model would answer better"


def is_built_in(provider: Provider) -> bool:
    """Whether replies come from the embedded SmolLM2 (a local model the user picked, or a hosted one, is not)."""
    return bool(getattr(provider, "built_in", False))


class ModelSuggestionCard(QFrame):
    """`choose_requested` when Choose a model… is clicked: the window opens Settings at the catalogue."""

    choose_requested = Signal()

    def __init__(self, store: Store, save_setting: Callable[[str, object], object], parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("suggestionCard")
        self._save_setting = save_setting
        try:
            saved = ModelSuggestion.model_validate(store.get_setting(MODEL_SUGGESTION_KEY, {}) or {})
        except ValidationError as error:  # only whether it was dismissed: it is made (once) again
            log.warning("the saved model suggestion is not valid, it is made again: %s", error)
            saved = ModelSuggestion()
        self.rule = SuggestionRule(dismissed=saved.dismissed)
        self.title = QLabel(TITLE)
        self.title.setObjectName("suggestionTitle")
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.PlainText)
        self.choose_button = QPushButton("Choose a model…")
        self.choose_button.setObjectName("primary")
        self.choose_button.setToolTip("Settings → Local model, at the catalogue of recommended models")
        self.dismiss_button = QPushButton("Dismiss")
        self.dismiss_button.setToolTip("Hide this suggestion for good")
        self.choose_button.clicked.connect(self._choose)
        self.dismiss_button.clicked.connect(self.dismiss)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.choose_button)
        buttons.addWidget(self.dismiss_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.setSpacing(6)
        layout.addWidget(self.title)
        layout.addWidget(self.text)
        layout.addLayout(buttons)
        self.hide()

    def reply_finished(self, result: ReplyResult, provider: Provider) -> None:
        """A reply has ended: a whole one from the built-in model counts towards the suggestion."""
        if result.problem or not is_built_in(provider):
            return
        reason = self.rule.after_reply(recalled=bool(result.snapshot.recalled))
        if reason is not None:
            self.text.setText(suggestion_text(reason, read_embedded(), read_catalogue()))
            self.show()

    def provider_changed(self, provider: Provider) -> None:
        """Another model answers from now on: the suggestion is not for it."""
        if not is_built_in(provider):
            self.hide()

    def dismiss(self) -> None:
        self.hide()
        self._save_setting(MODEL_SUGGESTION_KEY, ModelSuggestion(dismissed=True).model_dump())

    def _choose(self) -> None:
        self.dismiss()
        self.choose_requested.emit()
