"""The draft's token count while typing, against what is left in the window: "37 tokens · 2,410 left".

Counted off the GUI thread (a long paste through the model's tokenizer takes a while), a moment after typing
stops; the newest count wins. The words turn to the warning colour when sending the draft would make a summary
and to the error colour when it would not fit.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer

from ..core.chat import commands
from ..core.context.budget import DraftFit, draft_fit
from ..core.model.tokens import TokenCounter
from .composer import Composer
from .controller import ChatController
from .workers import Job, Runner

COUNT_DELAY_MS = 150


def describe(fit: DraftFit, trigger_ratio: float) -> tuple[str, str, str]:
    """(the line, its level, its tooltip) for a draft's fit."""
    line = f"{fit.tokens:,} tokens · "
    if fit.overflows:
        return (line + f"{-fit.left:,} over the window", "error",
                "Sent as it is, this message does not fit the model's window: old tool outputs are shrunk, older "
                "messages summarized or cut to make room. Shorten it, or start a new chat.")
    if fit.summarizes:
        return (line + f"{fit.left:,} left", "warning",
                f"The context is past {trigger_ratio:.0%} of the window with this: older messages are summarized "
                "first (the originals are kept).")
    return line + f"{fit.left:,} left", "muted", "Tokens of this message, and what is left of the window after it"


class DraftCount(QObject):
    def __init__(self, composer: Composer, chat: ChatController) -> None:
        super().__init__(composer)
        self.composer = composer
        self.chat = chat
        self.runner = Runner(max_threads=1, parent=self)
        self._latest: Job | None = None
        self._counted: tuple[str, int] | None = None  # (draft, its tokens) of the last count
        self._delay = QTimer(self)
        self._delay.setSingleShot(True)
        self._delay.setInterval(COUNT_DELAY_MS)
        self._delay.timeout.connect(self.count)
        composer.edit.textChanged.connect(self._delay.start)
        chat.snapshot_changed.connect(lambda _snapshot, _rebuilt: self.count())  # what is left changed

    def count(self) -> None:
        text = self.composer.text()
        session, snapshot = self.chat.session, self.chat.snapshot
        engine = session.engine if session is not None else None
        if not text.strip() or commands.is_command(text) or engine is None or snapshot is None \
                or snapshot.draft_room is None:
            self._latest = None
            self.composer.show_token_count("")
            return
        if self._counted is not None and self._counted[0] == text:
            self._show(self._counted[1])
            return
        counter: TokenCounter = engine.counter
        job = self.runner.submit("count the draft", lambda _job: counter.draft_tokens(text))
        self._latest = job
        job.succeeded.connect(lambda tokens: self._counted_now(job, text, tokens))

    def _counted_now(self, job: Job, text: str, tokens: int) -> None:
        if job is self._latest:  # else the draft changed since, and a newer count is on its way
            self._counted = (text, tokens)
            self._show(tokens)

    def _show(self, tokens: int) -> None:
        snapshot = self.chat.snapshot
        if snapshot is None or snapshot.draft_room is None:
            return
        self.composer.show_token_count(*describe(draft_fit(snapshot.draft_room, tokens), snapshot.policy.trigger_ratio))
