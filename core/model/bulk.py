"""Building many long-lived objects at once (opening or reading a long chat)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with Python's cyclic garbage collector off, then turn it back on. Objects that all live on
    trigger its full collections as they grow, each walking everything made so far: half the CPU of opening a
    100,000-message chat. Nothing built here is garbage, so nothing waits to be collected."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
