"""Shared test setup: every test gets its own data folder and an offscreen Qt platform."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SHARED_TRANSCRIPTS = Path(__file__).resolve().parents[2] / "shared" / "transcripts"
TRANSCRIPTS = sorted(p for p in SHARED_TRANSCRIPTS.glob("*.jsonl") if not p.name.endswith(".raw.jsonl"))
CLAUDE_CODE_RAW = SHARED_TRANSCRIPTS / "claudecode_session.raw.jsonl"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Tests never touch the user's real data folder or keyring."""
    home = tmp_path / "precis-home"
    home.mkdir()
    monkeypatch.setenv("PRECIS_HOME", str(home))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    return home
