"""`precis compact --json` on the shared transcripts at 4k and 32k gives the output stored in tests/data/compact/,
byte for byte (fresh ids, fingerprints and clock readings aside: see tests/compact_expected.py). A restructuring
that means to change no behaviour shows here that it did not; a change meant to alter the output writes the
files again (`python -m tests.compact_expected`) and commits them with it."""

from __future__ import annotations

import difflib
import gzip

import pytest

from tests.compact_expected import WINDOWS, compact_json, expected_path
from tests.conftest import TRANSCRIPTS

CASES = [pytest.param(transcript, window, id=f"{transcript.stem}-{window}",
                      # The long session is a whole transcript replayed twice over: the slow tier's.
                      marks=[pytest.mark.slow] if transcript.stat().st_size > 200_000 else [])
         for transcript in TRANSCRIPTS for window in WINDOWS]


@pytest.mark.parametrize(("transcript", "window"), CASES)
def test_compact_json_is_the_stored_output(transcript, window):
    expected = gzip.decompress(expected_path(transcript, window).read_bytes()).decode("utf-8")
    output = compact_json(transcript, window)
    if output != expected:
        diff = "".join(list(difflib.unified_diff(expected.splitlines(keepends=True), output.splitlines(keepends=True),
                                                 "expected", "now", n=2))[:60])
        pytest.fail(f"precis compact {transcript.name} --context-tokens {window} --json changed (if that is meant: "
                    f"python -m tests.compact_expected):\n{diff}")


def test_every_stored_output_has_its_case():
    """A stored file no case reads (a transcript renamed or gone) would pass unnoticed."""
    stored = {path.name for path in expected_path(TRANSCRIPTS[0], WINDOWS[0]).parent.glob("*.json.gz")}
    assert stored == {expected_path(transcript, window).name for transcript in TRANSCRIPTS for window in WINDOWS}
