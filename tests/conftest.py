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


# Fixtures that load the real model (in this process or in a server): a test using one must be marked `model`, so
# `-m "not model"` loads no model.
MODEL_FIXTURES = {"local_provider", "llama_server"}


def pytest_collection_modifyitems(config, items):
    unmarked = [item.nodeid for item in items
                if MODEL_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("model") is None]
    if unmarked:
        raise pytest.UsageError("these tests load the model but are not marked @pytest.mark.model:\n  "
                                + "\n  ".join(unmarked))


@pytest.fixture(scope="session")
def local_provider():
    """The embedded model, loaded once for the whole session."""
    from precis.core.providers.local import LocalProvider

    provider = LocalProvider()
    provider.load()
    return provider
