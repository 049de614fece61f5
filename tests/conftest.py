"""Shared test setup: every test gets its own data folder and an offscreen Qt platform."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# A machine shared with busy neighbours runs ten times slower one hour than the next: no property fails for taking
# long (speed is the benchmarks' job). The default run tries each property on 10 examples, `--slow` on 200.
settings.register_profile("precis", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=10)
settings.register_profile("precis-slow", settings.get_profile("precis"), max_examples=200)
settings.load_profile("precis")

REPOSITORY = Path(__file__).resolve().parents[1]
DATA = REPOSITORY / "tests" / "data"
TRANSCRIPTS_DIR = DATA / "transcripts"
CONVERSATIONS_DIR = DATA / "conversations"
TRANSCRIPTS = sorted(p for p in TRANSCRIPTS_DIR.glob("*.jsonl") if not p.name.endswith(".raw.jsonl"))
CLAUDE_CODE_RAW = TRANSCRIPTS_DIR / "claudecode_session.raw.jsonl"


# Where the interpreter and the installed packages live (a virtual environment may sit beside the clone, or borrow
# another's packages): installed code, not data a test needs. Plain string prefixes: the audit hook below sees every
# file the process opens, each import included.
BESIDE = os.path.join(os.path.dirname(str(REPOSITORY)), "")
INSIDE = os.path.join(str(REPOSITORY), "")
INSTALLED = tuple(os.path.join(root, "") for root in {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix,
                                                                                    sys.exec_prefix, *sys.path) if p}
                  if not os.path.join(root, "").startswith(INSIDE))


def outside_the_repository(path) -> bool:
    """Whether a path lies beside the repository rather than in it: what a fresh clone, alone in its folder, lacks
    (the tests once read ../shared, and a clone without it failed 66 tests and silently lost 19 more)."""
    try:
        absolute = os.path.join(os.path.abspath(os.fsdecode(path)), "")
    except (TypeError, ValueError):
        return False
    if not absolute.startswith(BESIDE) or absolute == BESIDE or absolute.startswith(INSIDE):
        return False
    if absolute.startswith(INSTALLED):
        return False
    neighbour = absolute[len(BESIDE):].split(os.sep, 1)[0]
    # Hidden folders beside a clone in a home folder are caches and settings (fontconfig's, pip's), and a clone in the
    # temporary folder has the tests' own temporary files beside it, and tiktoken's cache of its encoding files.
    return not neighbour.startswith((".", "tmp", "pytest-of-", "data-gym-cache"))


READS_OUTSIDE: list[str] = []


def note_reads_outside(event: str, args: tuple) -> None:
    if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
        if outside_the_repository(args[0]):
            READS_OUTSIDE.append(os.fsdecode(args[0]))


sys.addaudithook(note_reads_outside)


def pytest_collection_finish(session):
    if READS_OUTSIDE:
        raise pytest.UsageError(f"collecting the tests read outside the repository: {sorted(set(READS_OUTSIDE))}")


@pytest.fixture(autouse=True)
def reads_only_the_repository():
    """A test that reads a file beside the repository fails: the README's test command runs from a clone alone."""
    yield
    if READS_OUTSIDE:
        paths = sorted(set(READS_OUTSIDE))
        READS_OUTSIDE.clear()
        pytest.fail(f"read outside the repository: {paths}")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Tests never touch the user's real data folder or keyring."""
    home = tmp_path / "precis-home"
    home.mkdir()
    monkeypatch.setenv("PRECIS_HOME", str(home))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    # Output is laid out for no terminal (core/cli/terminal.py), whoever runs the tests: xdist's workers set COLUMNS to
    # 80, and `precis context`'s lines wrapped there and not in a run without it. A test of a width sets its own.
    monkeypatch.delenv("COLUMNS", raising=False)
    return home


# Fixtures that load the real model (in this process or in a server): a test using one must be marked `model`, so
# `-m "not model"` loads no model.
MODEL_FIXTURES = {"local_provider", "llama_server", "keyed_llama_server"}


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true",
                     help="also run the long tests (marked slow: the real model at length, whole transcripts) and "
                          "try each property on 200 examples")


def pytest_configure(config):
    if config.getoption("--slow"):
        settings.load_profile("precis-slow")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the test ids
def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="a long test: run with --slow")
    for item in items:
        if item.get_closest_marker("slow") is not None and not config.getoption("--slow"):
            item.add_marker(skip)
        if item.get_closest_marker("model") is not None:
            item.add_marker(pytest.mark.xdist_group("model"))  # one worker loads the model, once
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


SERVER_START_SECONDS = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_model(folder: Path, *options: str):
    """llama.cpp's OpenAI-compatible server (xllamacpp's) serving SmolLM2 on a loopback port, started through Precis's
    model_server, so the model loads as the model process loads it; yields its base URL (…/v1) once it answers."""
    from precis.core.providers.local import find_model_path

    port = free_port()
    log_path = folder / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "precis.core.providers.model_server", "--model", str(find_model_path()),
             "--n_threads", "2", "--host", "127.0.0.1", "--port", str(port), *options],
            stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"the model server exited with {process.returncode}:\n{log_path.read_text()[-2000:]}")
            try:
                # Any HTTP answer is a server up: one with a key answers 401 to a request without it.
                if httpx.get(f"{base_url}/models", timeout=2).status_code in (200, 401):
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the model server not ready in {SERVER_START_SECONDS} s:\n{log_path.read_text()[-2000:]}")
            time.sleep(0.25)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory) -> str:
    """Base URL (…/v1) of llama.cpp's OpenAI-compatible server serving SmolLM2 with an 8192-token window."""
    yield from serve_model(tmp_path_factory.mktemp("llama-server"), "--n_ctx", "8192")


LLAMA_SERVER_KEY = "sk-llama-server-0123456789abcdef"


@pytest.fixture(scope="session")
def keyed_llama_server(tmp_path_factory) -> str:
    """Base URL (…/v1) of llama.cpp's server answering only requests that bear LLAMA_SERVER_KEY (a 2048-token
    window: a second model in memory beside llama_server's)."""
    yield from serve_model(tmp_path_factory.mktemp("keyed-llama-server"), "--n_ctx", "2048",
                           "--api_key", LLAMA_SERVER_KEY)


@pytest.fixture
def ollama(llama_server):
    """A stand-in for an Ollama server (tests/stand_in_ollama.py) serving the real model; `.url` is its address."""
    from tests.stand_in_ollama import StandInOllama

    server = StandInOllama(llama_server)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def server():
    """A scripted OpenAI-compatible server on loopback (tests/providers/scripted_server.py): a stand-in for what a
    real model server does not do on demand (faults, tool calls in a given order)."""
    from tests.providers.scripted_server import ScriptedServer

    server = ScriptedServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def workspace(tmp_path):
    """A chat's workspace folder for the model's tools, holding main.py."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "main.py").write_text("import os\nprint(os.getcwd())\n")
    return folder
