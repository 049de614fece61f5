"""A reply shown whole whose last save failed (a full disk, a read-only file): the store holds its last saved part,
marked incomplete, until it is saved again (Save again), as the chat's next change does first, so the store never
holds a change made after a reply it holds only in part."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from ..model.messages import Message
from ..storage.store import StoreError

log = logging.getLogger("precis.chat")


@dataclass(frozen=True)
class UnsavedReply:
    message_id: str
    why: str
    text: str  # the reply's whole text, shown: what Copy it copies while no save has kept it


    def words(self) -> str:
        """What the reply's row and the status bar say of it."""
        return (f"Not saved whole: {self.why.rstrip('.')}. The text shown is the whole reply; the chat holds only "
                "the part saved before. Save again, or your next message, saves it.")


class LastSave:
    """A reply's last save, kept to try again while it fails."""

    def __init__(self) -> None:
        self._pending: tuple[UnsavedReply, Callable[[], object]] | None = None

    @property
    def unsaved(self) -> UnsavedReply | None:
        return self._pending[0] if self._pending is not None else None

    def attempt(self, reply: Message, save: Callable[[], object]) -> None:
        """Save; failing, the reply is kept to save again (retry) and `unsaved` says why."""
        try:
            save()
        except StoreError as exc:
            log.warning("the reply was not saved whole: %s", exc)
            self._pending = UnsavedReply(reply.id, str(exc), reply.content), save
        else:
            self._pending = None

    def retry(self) -> None:
        """Save the unsaved reply, if any; StoreError, and it stays unsaved, if it fails again."""
        if self._pending is not None:
            unsaved, save = self._pending
            try:
                save()
            except StoreError as exc:  # why it failed this time
                self._pending = UnsavedReply(unsaved.message_id, str(exc), unsaved.text), save
                raise
            self._pending = None

    def forget(self) -> None:
        """The engine was loaded again from the store: nothing of it is unsaved."""
        self._pending = None

