"""`python -m benchmarks.fidelity --transcripts-dir DIR`: the yardstick on transcripts of one's own (the held-out
coding sessions of docs/fidelity.md), pooled over them all."""

from __future__ import annotations

import json
import re

import pytest

from benchmarks import fidelity
from benchmarks.miniswe_convert import main as convert_main
from tests.conftest import DATA

SESSION = DATA / "miniswe" / "django__django-15103.traj.json"
CELL = re.compile(r"\d+% \((\d+)/(\d+)\)")


def counts(cell: str) -> tuple[int, int]:
    """(kept, total) of a cell such as "88% (58/66)"; "–" where there was nothing to keep."""
    if cell == "–":
        return 0, 0
    found = CELL.fullmatch(cell)
    assert found, cell
    return int(found[1]), int(found[2])


def rows(out: str, first: str) -> list[list[str]]:
    """The rows of the printed tables whose first cell starts with `first`."""
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in out.splitlines()
             if line.startswith("|") and not line.startswith("|---")]
    return [r for r in cells if r[0].startswith(first)]


@pytest.fixture
def transcripts(tmp_path):
    """The real session, and its first 30 messages as a second, shorter one."""
    convert_main([str(SESSION), str(tmp_path)])
    whole = (tmp_path / "django__django-15103.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "django_cut.jsonl").write_text("\n".join(whole[:30]) + "\n", encoding="utf-8")
    return tmp_path


def test_the_pooled_line_adds_up_the_transcripts_facts_kind_by_kind(transcripts, capsys):
    assert fidelity.main(["--transcripts-dir", str(transcripts), "--conversations", "", "--windows", "4k"]) == 0
    out = capsys.readouterr().out
    per_transcript = rows(out, "django")
    assert sorted(r[0] for r in per_transcript) == ["django__django-15103", "django_cut"]
    kinds = slice(7, 7 + len(fidelity.KINDS))
    pooled = rows(out, "4k")
    assert len(pooled) == 1 and pooled[0][:4] == ["4k", "rule", "2 of 2", "pooled"]
    for column, cell in enumerate(pooled[0][4:4 + len(fidelity.KINDS)]):
        kept, total = counts(cell)
        each = [counts(r[kinds][column]) for r in per_transcript]
        assert (kept, total) == (sum(k for k, _ in each), sum(t for _, t in each))
    medians = next(r for r in rows(out, "") if r[3:4] == ["median"])
    assert all(re.fullmatch(r"\d+%|–", cell) for cell in medians[4:4 + len(fidelity.KINDS)])
    assert re.fullmatch(r"\d+%", medians[4 + len(fidelity.KINDS)])  # all kinds together
    assert "the whole run:" in out


def test_many_transcripts_show_only_their_pooled_and_median_lines_unless_asked(transcripts, capsys, monkeypatch):
    monkeypatch.setattr(fidelity, "PER_TRANSCRIPT_ROWS", 1)
    args = ["--transcripts-dir", str(transcripts), "--conversations", "", "--windows", "4k"]
    assert fidelity.main(args) == 0
    out = capsys.readouterr().out
    assert not rows(out, "django") and rows(out, "4k")
    assert fidelity.main([*args, "--per-transcript"]) == 0
    assert len(rows(capsys.readouterr().out, "django")) == 2


def test_a_folder_without_transcripts_is_refused_by_name(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text(json.dumps({"role": "user", "content": "hi"}))
    with pytest.raises(SystemExit):
        fidelity.main(["--transcripts-dir", str(tmp_path), "--conversations", ""])
    assert f"--transcripts-dir: no transcript (*.jsonl) in {tmp_path}" in capsys.readouterr().err
