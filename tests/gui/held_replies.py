"""The real model with its replies held where a test must look: a one-sentence reply can end before a loaded machine
shows the state "while the reply is written" (or before a Stop, a close or a second message reaches it)."""

from __future__ import annotations

import threading
import time

HOLD_SECONDS = 60


class HeldReplies:
    """The provider's replies wait, before their first piece (`after_pieces=0`) or once that many pieces of text
    have been passed on, until the test sets `release` or the reply is cancelled (Stop, closing the chat). Then the
    real stream goes on: a cancel reaches it as it would mid-reply."""

    def __init__(self, provider, after_pieces: int = 0) -> None:
        self.provider = provider
        self.after_pieces = after_pieces
        self.release = threading.Event()

    def __getattr__(self, name):
        return getattr(self.provider, name)

    def stream_chat(self, messages, **options):
        cancel = options.get("cancel")
        pieces = 0
        if self.after_pieces == 0:
            self._hold(cancel)
        for chunk in self.provider.stream_chat(messages, **options):
            yield chunk
            if chunk.text:
                pieces += 1
                if pieces == self.after_pieces:
                    self._hold(cancel)

    def _hold(self, cancel) -> None:
        deadline = time.monotonic() + HOLD_SECONDS
        while not self.release.wait(0.05):
            if cancel is not None and cancel.cancelled:
                return
            if time.monotonic() > deadline:
                raise TimeoutError("the test never released the reply")
