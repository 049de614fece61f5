"""The store as every command opens it: what opening found (an empty database file) said once on stderr."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from ..storage.store import Store, open_store


def open_cli_store(data_dir: str | os.PathLike[str] | None, err: TextIO | None = None) -> Store:
    """open_store for a command: its notice written to `err` (standard error unless given)."""
    store = open_store(data_dir)
    if store.opening_notice:
        print(f"precis: {store.opening_notice}", file=err or sys.stderr)
    return store
