"""`precis models get NAME` at a pseudo-terminal, given Ctrl-C (SIGINT) once bytes are on disk: what the user sees,
the exit code, and how long it took to end. Shared by tests/models/test_cli_models.py and
benchmarks/bench_download_interrupt.py."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from precis.core.models.catalogue import CatalogueEntry

from tests.stand_in_hub import StandInHub

WAIT_SECONDS = 120  # for the download to start and the process to end: a loaded machine is slow, never this slow


@dataclass(frozen=True)
class Interrupted:
    code: int
    shown: str  # everything written to the terminal, carriage returns and all
    kept: int  # bytes of the .part when SIGINT was sent
    seconds: float  # from SIGINT to the process ending


def interrupt_get(hub: StandInHub, entry: CatalogueEntry, folder: Path, env: dict[str, str]) -> Interrupted:
    """Run the download, and send SIGINT once its .part has bytes and, when the hub has a `stall_at`, once the hub
    has stopped sending there."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "precis.core.cli.main", "models", "get", entry.name],
                            stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    shown = bytearray()
    reader = threading.Thread(target=_read_all, args=(leader, shown), daemon=True)
    reader.start()
    stall_at = hub.faults.stall_at
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while _part_size(entry, folder) == 0 or (stall_at is not None and hub.bytes_sent < stall_at):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the download never got under way: {shown.decode(errors='replace')}")
            time.sleep(0.01)
        kept = _part_size(entry, folder)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=WAIT_SECONDS)
        seconds = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(WAIT_SECONDS)
    os.close(leader)
    return Interrupted(code=code, shown=shown.decode(errors="replace"), kept=kept, seconds=seconds)


def _part_size(entry: CatalogueEntry, folder: Path) -> int:
    return sum(part.stat().st_size for part in entry.partials(folder)) if folder.is_dir() else 0


def _read_all(leader: int, into: bytearray) -> None:
    """Drains the terminal as the process writes (a full pseudo-terminal would block it) until it closes its side."""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process has ended
            return
        if not chunk:
            return
        into.extend(chunk)
