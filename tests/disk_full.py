"""A full disk for this process: a real failed write, made without privileges (a small file system needs them)."""

from __future__ import annotations

import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def disk_full(database: Path) -> Iterator[None]:
    """No file of this process grows past the size the database's write-ahead log has now (RLIMIT_FSIZE): the log is
    the only file a save writes until it is checkpointed, so every save fails as on a full disk, until the end."""
    wal = Path(f"{database}-wal").stat().st_size
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    before = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, not a kill
    resource.setrlimit(resource.RLIMIT_FSIZE, (wal, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, before)
