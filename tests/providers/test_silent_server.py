"""A server that takes the connection and then says nothing (a port held by something that is no API, a server
stuck): asking it for its models, as Test connection does and a chat opening on it does for its window, gives up
long before the reply's minute. The peer is a real loopback socket that accepts and never answers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest
from precis.core.providers.base import ProviderTimeout
from precis.core.providers.openai_compat import DEFAULT_WINDOW
from precis.core.providers.registry import check_connection, make_provider
from precis.core.providers.transport import LIST_TIMEOUT_SECONDS

# Generous beside the list's limit, well short of the reply's 60 s read timeout the lists waited for before.
BOUND_SECONDS = LIST_TIMEOUT_SECONDS + 25


@pytest.fixture
def silent_url() -> Iterator[str]:
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


def bounded(call: Callable[[], object]) -> object:
    """The call's result or exception, failing the test if it is still waiting after BOUND_SECONDS."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except Exception as exc:  # noqa: BLE001 - handed back to the test
            outcome["value"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND_SECONDS)
    assert not thread.is_alive(), f"still waiting for the silent server after {BOUND_SECONDS:g} s"
    return outcome["value"]


@pytest.mark.parametrize("kind", ["openai", pytest.param("anthropic", marks=pytest.mark.slow)])
def test_test_connection_to_a_silent_server_says_it_did_not_answer(silent_url, kind):
    base_url = silent_url if kind == "openai" else silent_url.removesuffix("/v1")
    provider = make_provider(kind, base_url=base_url, model="m")
    failure = bounded(lambda: check_connection(provider))
    assert isinstance(failure, ProviderTimeout) and f"{base_url} did not answer in time" in str(failure)


def test_a_chat_on_a_silent_server_opens_with_the_default_window(silent_url):
    provider = make_provider("openai", base_url=silent_url, model="m")
    assert bounded(provider.context_window) == DEFAULT_WINDOW
