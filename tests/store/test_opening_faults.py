"""Opening a sound database when the disk will not take a write: said as such, the file neither called damaged nor
copied aside."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
from pathlib import Path

from precis.core.storage.store import DB_NAME

from tests.conftest import TRANSCRIPTS

ROOT = Path(__file__).resolve().parents[2]
# Smaller than SQLite's 32 kB shared-memory file (-shm), which every opening of a WAL database makes.
NO_ROOM_BYTES = 16_384


def precis(*argv: str, file_size_limit: int | None = None) -> subprocess.CompletedProcess:
    """`precis` in its own process; with `file_size_limit`, no file may grow past it (RLIMIT_FSIZE), as on a full
    disk: a real failed write, which needs no privilege to set up, unlike a small file system."""

    def no_room() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        assert file_size_limit is not None
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    return subprocess.run([sys.executable, "-m", "precis.core.cli.main", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, preexec_fn=no_room if file_size_limit else None)


def test_a_sound_file_that_cannot_be_opened_for_want_of_room_is_not_called_damaged(tmp_path):
    """It was: "precis.db is damaged and could not be copied aside (File too large)", and with room for the copy
    it would have been set aside as corrupt, though nothing is wrong with it."""
    data = tmp_path / "data"
    assert precis("--data-dir", str(data), "import", str(TRANSCRIPTS[0])).returncode == 0
    assert not Path(f"{data / DB_NAME}-shm").exists()  # Precis closed it: the next opening makes this side file

    refused = precis("--data-dir", str(data), "chats", file_size_limit=NO_ROOM_BYTES)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"could not read {data / DB_NAME}: disk I/O error" in refused.stderr
    assert "damaged" not in refused.stderr.replace("not found damaged", "")
    assert list(data.glob(f"{DB_NAME}.corrupt-*")) == []

    listed = precis("--data-dir", str(data), "chats")  # with room again, as it was
    assert listed.returncode == 0 and TRANSCRIPTS[0].stem in listed.stdout
