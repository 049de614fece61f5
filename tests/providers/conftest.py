"""Real peers for provider tests: llama-cpp-python's OpenAI-compatible server on loopback (the local model is
tests/conftest.py's `local_provider`)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
from precis.core.providers.local import find_model_path

from tests.providers.scripted_server import ScriptedServer

SERVER_START_SECONDS = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory) -> str:
    """Base URL (…/v1) of llama_cpp.server serving SmolLM2 with an 8192-token window.

    Started through Precis's wrapper so the model loads without extra buffer types, as on AMX CPUs it must.
    """
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "precis.core.providers.model_server", "--model", str(find_model_path()), "--n_ctx", "8192",
             "--n_threads", "2", "--host", "127.0.0.1", "--port", str(port)],
            stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n{log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server not ready in {SERVER_START_SECONDS} s:\n{log_path.read_text()[-2000:]}")
            time.sleep(0.25)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def server():
    """A scripted OpenAI-compatible server on loopback (tests/providers/scripted_server.py)."""
    server = ScriptedServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
