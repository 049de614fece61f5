"""Another program holding a database's write lock, for real: a process of its own in a transaction (BEGIN IMMEDIATE)
until told to end it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Another program writing: it takes the write lock and keeps it until told to stop (a line on its input).
LOCKER = ("import sqlite3, sys\n"
          "connection = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
          "connection.execute('BEGIN IMMEDIATE')\n"
          "print('locked', flush=True)\n"
          "sys.stdin.readline()\n"
          "connection.execute('ROLLBACK')\n")


@contextmanager
def locked_by_another_process(path: Path) -> Iterator[subprocess.Popen]:
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        yield locker
    finally:
        release(locker)


def release(locker: subprocess.Popen) -> None:
    if locker.poll() is None:
        assert locker.stdin is not None
        locker.stdin.write("done\n")
        locker.stdin.flush()
        locker.wait(timeout=30)
