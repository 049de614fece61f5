"""The store as every command opens it: what opening found (an empty database file) said on stderr, and a write that
waits for another program's write lock said there as it begins to wait, in the window's words (waiting_words)."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from ..storage.store import Store, open_store


def open_cli_store(data_dir: str | os.PathLike[str] | None, err: TextIO | None = None, *,
                   newer_read_only: bool = False) -> Store:
    """open_store for a command, telling `err` (standard error unless given) what the user should hear: each thing
    once, however many of the command's writes wait for the same lock. `newer_read_only`: see open_store."""
    stream = err or sys.stderr
    store = open_store(data_dir, newer_read_only=newer_read_only)
    said: set[str] = set()

    def say(text: str) -> None:
        if text not in said:
            said.add(text)
            print(f"precis: {text}", file=stream, flush=True)

    if store.opening_notice:
        say(store.opening_notice)
    store.on_wait = say
    return store
