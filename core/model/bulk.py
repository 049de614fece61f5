"""Making many objects at once: building a long chat's (opening or reading it), or summarizing or undoing over it."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(freeze: bool = False) -> Iterator[None]:
    """Run the block with Python's cyclic garbage collector off, then turn it back on. Objects made in bulk trigger
    its full collections as they grow, each walking everything made so far holding the interpreter lock: half the
    CPU of opening a 100,000-message chat, and the window's longest waits while one is summarized. What is built here
    lives on, or is freed by reference counting (it holds no cycle), so nothing waits to be collected.

    With `freeze`, what exists once the block is done is frozen (gc.freeze) before the collector is back: else its
    next passes walk all that was made (the first at once, a full one soon after), holding the lock. Reference
    counting still frees it; only a reference cycle alive or unreachable then would stay."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if freeze:
            gc.freeze()
    finally:
        if enabled:
            gc.enable()


def freeze_the_open_chat() -> None:
    """What is alive now lives long (the open chat: its messages, the engine's maps, its rows): out of the cyclic
    collector's full passes from now on, which walked it all holding the interpreter lock (0.1-0.4 s stalls of the
    window at 100,000 messages, whichever thread set them off). Reference counting frees it when the chat closes:
    nothing of a chat is in a reference cycle (a cycle frozen here would stay)."""
    gc.freeze()
