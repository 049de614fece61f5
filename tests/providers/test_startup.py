"""Start-up: `precis` starts the configured local model's process before anything else is imported, the window's
provider then uses that process, and counting tokens in the app loads the vocabulary without a word on stderr."""

from __future__ import annotations

import subprocess
import sys

import pytest
from precis.core.cli.main import start_local_model_early
from precis.core.providers.local import LocalProvider, model_process
from precis.core.settings import PROVIDER_KEY
from precis.core.storage.store import open_store


def test_counting_tokens_in_the_app_prints_nothing():
    # The vocabulary loads without a llama.cpp context (which would warn "n_ctx_seq (512) > n_ctx_train (0)").
    done = subprocess.run(
        [sys.executable, "-c", "from precis.core.providers.local import LocalProvider; "
                               "print(LocalProvider().count_tokens('Name one planet of the solar system.'))"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and int(done.stdout) > 5
    assert done.stderr == ""


@pytest.mark.model
@pytest.mark.slow
def test_precis_starts_the_configured_model_process_first_and_the_window_uses_it(isolated_home, tmp_path):
    copy = tmp_path / "chosen.gguf"
    copy.write_bytes(LocalProvider().path.read_bytes())
    store = open_store(isolated_home)
    try:
        store.set_setting(PROVIDER_KEY, {"kind": "local", "model_path": str(copy)})
    finally:
        store.close()
    start_local_model_early()
    process = model_process(copy, 8192, False)
    launched = process.pid
    try:
        assert launched is not None  # started, not waited for
        provider = LocalProvider(copy)
        assert provider.load() is process and process.pid == launched
    finally:
        process.close()
