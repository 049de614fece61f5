"""What the window tells the user about work and its results: the status bar, the composer's hint line and the
inspector's notice, chosen by what happened."""

from __future__ import annotations

from collections.abc import Callable

from .composer import Composer
from .controller import ChatController
from .inspector import Inspector
from .status import StatusLine
from .wording import failure_text

# Why the engine summarized, in the user's words.
AUTOMATIC_REASONS = {
    "overflow": "the chat no longer fit the model's window",
    "threshold": "the context reached the trigger",
    "second pass": "one summary had left the context above the trigger",
}
# Why the engine folded the chain (core/context/summarizing.py's reasons), in the user's words.
FOLD_REASONS = {
    "merge at maximum depth": "the chain had reached its maximum depth",
    "merge: the summaries used their share": "the summaries had used their share of the budget",
    "merge: what no summary removes is above the trigger": "what no summary removes was above the trigger",
}


def folded_words(record, which: str = "", when: str = "") -> str:
    """What the fold `record` did to the summaries it holds ("the 2 summaries{which} were{when} folded into one"),
    true for one and for many: a single summary is condensed again, not "folded into one"."""
    count = len(record.merged_ids)
    return (f"the summary{which} was{when} condensed into a shorter one" if count == 1 else
            f"the {count} summaries{which} were{when} folded into one")


class Feedback:
    """`reported(text)` is called with the words shown once a failure has been shown (the window's job_failed
    signal). Failures come as the exceptions that ended the work and are worded by wording.failure_text."""

    def __init__(self, chat: ChatController, status: StatusLine, composer: Composer, inspector: Inspector,
                 reported: Callable[[str], object]) -> None:
        self.chat = chat
        self.status = status
        self.composer = composer
        self.inspector = inspector
        self._reported = reported

    def job_failed(self, error: BaseException, doing: str = "") -> None:
        self._tell(failure_text(error, doing))

    def switch_failed(self, error: BaseException, still_used: str) -> None:
        """The model chosen in Settings did not load; `still_used` names the one in use, which stays."""
        self._tell(f"{failure_text(error)}. Still using {still_used}")

    def _tell(self, text: str) -> None:
        self.status.failed(text)
        self._reported(text)

    def model_failed(self, error: BaseException) -> None:
        why = failure_text(error)
        self.composer.set_hint("The local model could not load (hover here for why). To chat meanwhile, "
                               "choose a hosted provider in File → Settings.", error=True, details=why)
        self._reported(why)

    def hint_error(self, text: str) -> None:
        self.composer.set_hint(text, error=True)

    def hint_failure(self, error: BaseException) -> None:
        self.hint_error(failure_text(error))

    def chat_switched(self) -> None:
        """What was said about the chat just closed, and instructions typed for its summary, no longer apply."""
        self.inspector.instructions.clear()
        self.status.withdraw_undo()
        self.composer.set_hint("")
        self.inspector.hide_notice()
        self.inspector.result_card.hide()
        self.inspector.prompt.clear()

    def announce(self, events: list) -> None:
        """Summaries made, folded, undone or not kept (a snapshot's events, in order). The notice, beside its Undo,
        speaks of the newest summary, the one Undo undoes: a fold made to make room for the user's own summary is
        told with it (it was told as a summary made automatically, its Undo undoing the user's summary instead)."""
        folded = None
        for event in events:
            if event.kind == "merged":
                folded = event
            self._announce(event, folded)
            if event.kind != "merged":
                folded = None

    def _announce(self, event, folded) -> None:
        record = event.record
        if event.kind == "undone":
            self.inspector.hide_notice()
            self.inspector.result_card.hide()
            self.status.tell(f"Summary undone: {record.undone_description()}.")
            return
        if event.kind == "declined":
            self.inspector.show_notice(
                f"An automatic summary was not kept: it would have left {event.tokens_after:,} tokens, not fewer "
                f"than the {event.tokens_before:,} there are. The messages stay as they are.")
            return
        if event.kind == "merged":
            why = FOLD_REASONS.get(event.reason, event.reason)
            said = folded_words(record)
            self.inspector.show_notice(
                f"{said[0].upper()}{said[1:]} to make room ({why}): {event.tokens_before:,} → "
                f"{event.tokens_after:,} tokens. Undo brings {'it' if len(record.merged_ids) == 1 else 'them'} back.")
            return
        automatic = record.trigger not in ("manual",)
        if not automatic and record.instructions and self.inspector.instructions.text().strip() == record.instructions:
            self.inspector.instructions.clear()  # used, as the message box is once sent
        snapshot = self.chat.snapshot  # a fold archives no message itself: it stands for its summaries' messages
        messages = snapshot.archived_counts.get(record.id, 0) if record.merged_ids and snapshot is not None else None
        self.inspector.result_card.show_record(record, automatic, messages)
        first = (f"To make room for it, {folded_words(folded.record, ' before it', ' first')} "
                 f"({FOLD_REASONS.get(folded.reason, folded.reason)}). Undo undoes this summary, then the fold."
                 if folded is not None else "")
        if automatic:
            why = AUTOMATIC_REASONS.get(event.reason, event.reason)
            self.inspector.show_notice(
                f"Older messages were summarized automatically ({why}): "
                f"{event.tokens_before:,} → {event.tokens_after:,} tokens. The originals are kept." +
                (" " + first if first else ""))
        elif first:
            self.inspector.show_notice(f"Your summary is made. {first}")
        else:  # the result card tells of it; a notice of an earlier summary would sit beside an Undo of this one
            self.inspector.hide_notice()
