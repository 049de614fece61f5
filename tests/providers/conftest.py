"""Provider tests' scripted OpenAI-compatible server (the real llama_cpp.server and the local model are
tests/conftest.py's `llama_server` and `local_provider`)."""

from __future__ import annotations

import threading

import pytest

from tests.providers.scripted_server import ScriptedServer


@pytest.fixture
def server():
    """A scripted OpenAI-compatible server on loopback (tests/providers/scripted_server.py)."""
    server = ScriptedServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
