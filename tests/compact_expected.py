"""The expected output of `precis compact --json` on the shared transcripts at 4k and 32k, stored in
tests/data/compact/ so that a restructuring can show it changed nothing (tests/core/test_compact_expected.py).

A run's output is compared byte for byte once what differs between two runs of the same code is made the same:
ids made afresh (a summary's, an imported message's) become id-1, id-2, ... in the order they first appear, the
fingerprints of messages (which hash their ids) sha-1, sha-2, ... likewise, and clock readings (created_at,
duration_ms) become 0. The files are gzipped: the long transcript's output at 4k is
2.4 MB, mostly the ids and fingerprints of what each summary covers.

When a change to the output is meant, write the files again and commit them with the change:

    python -m tests.compact_expected
"""

from __future__ import annotations

import gzip
import io
import re
from contextlib import redirect_stdout
from pathlib import Path

from precis.core.cli.main import main

from tests.conftest import TRANSCRIPTS

EXPECTED_DIR = Path(__file__).parent / "data" / "compact"
WINDOWS = (4096, 32768)
# A fresh id (core.model.messages.new_id: uuid4().hex) in a JSON string: whole, or before a suffix ("~trimmed").
FRESH_ID = re.compile(r'(?<=")[0-9a-f]{32}(?=["~])')
FINGERPRINT = re.compile(r'(?<="sha256": ")[0-9a-f]{64}(?=")')
CLOCK_READING = re.compile(r'"(created_at|duration_ms)": -?[0-9.e+-]+')


def _renumbered(pattern: re.Pattern[str], prefix: str, text: str) -> str:
    numbers: dict[str, int] = {}
    return pattern.sub(lambda match: f"{prefix}-{numbers.setdefault(match.group(), len(numbers) + 1)}", text)


def normalized(output: str) -> str:
    return _renumbered(FRESH_ID, "id", _renumbered(FINGERPRINT, "sha", CLOCK_READING.sub(r'"\1": 0', output)))


def expected_path(transcript: Path, window: int) -> Path:
    return EXPECTED_DIR / f"{transcript.stem}.{window}.json.gz"


def compact_json(transcript: Path, window: int) -> str:
    """What `precis compact TRANSCRIPT --context-tokens WINDOW --json` prints, normalized."""
    printed = io.StringIO()
    with redirect_stdout(printed):
        code = main(["compact", str(transcript), "--context-tokens", str(window), "--json"])
    if code != 0:
        raise RuntimeError(f"precis compact {transcript.name} --context-tokens {window} --json exited with {code}")
    return normalized(printed.getvalue())


def write_expected() -> None:
    EXPECTED_DIR.mkdir(exist_ok=True)
    for transcript in TRANSCRIPTS:
        for window in WINDOWS:
            path = expected_path(transcript, window)
            # mtime=0: the same output gives the same file, so git sees no change where there is none.
            path.write_bytes(gzip.compress(compact_json(transcript, window).encode("utf-8"), mtime=0))
            print(path)


if __name__ == "__main__":
    write_expected()
