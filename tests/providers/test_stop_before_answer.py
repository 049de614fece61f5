"""Stop while the server has not answered: a llama.cpp or Ollama server sends no response headers until it has read
the whole prompt (minutes for a long one on a CPU), and Stop waited for them. Now cancelling ends the request at
once, for every provider that streams over httpx, and for a model list asked inside `cancellable`: the call raises
Cancelled with nothing of a reply, the server sees the client go, and the connection is not kept.

The peer is tests/held_headers.py (a real loopback socket that holds its answer until released: it is released
only when the test ends, so a call that waited for it would still be waiting when the test gives up on it)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from precis.core.model.messages import Message
from precis.core.providers.anthropic import AnthropicProvider
from precis.core.providers.base import Cancelled, CancelToken
from precis.core.providers.cancellable import cancellable
from precis.core.providers.openai_compat import OpenAICompatProvider

from tests.held_headers import HeldHeadersServer

# How long a test waits for a stopped call to end: far beyond "at once", far short of the 60 s read timeout that
# ended the wait before.
GIVE_UP_SECONDS = 10
ASK = [Message(role="user", content="Summarize this long file.")]


@pytest.fixture
def held() -> Iterator[HeldHeadersServer]:
    server = HeldHeadersServer()
    yield server
    server.close()


def provider_for(kind: str, url: str, **options):
    if kind == "anthropic":
        return AnthropicProvider(url, "m", "sk-ant-test-0123456789", **options)
    return OpenAICompatProvider(f"{url}/v1", "m", **options)


class Call:
    """`work` on a thread of its own, as the window's worker runs it; `.outcome` is what it returned or raised."""

    def __init__(self, work: Callable[[], object]) -> None:
        self.outcome: object = None
        self._thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self._thread.start()

    def _run(self, work: Callable[[], object]) -> None:
        try:
            self.outcome = work()
        except Exception as exc:  # noqa: BLE001 - handed to the test
            self.outcome = exc

    def ended(self) -> object:
        self._thread.join(GIVE_UP_SECONDS)
        assert not self._thread.is_alive(), f"the stopped call was still waiting after {GIVE_UP_SECONDS} s"
        return self.outcome


def pooled_connections(provider) -> list:
    return provider._client._transport._pool.connections


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_stop_before_the_server_answers_ends_the_reply_at_once(held, kind):
    provider = provider_for(kind, held.url)
    if kind == "openai":
        provider.list_models()  # as a window opening asks: the reply's request then reuses that connection
    cancel = CancelToken()
    call = Call(lambda: list(provider.stream_chat(ASK, cancel=cancel)))
    assert held.asked.wait(GIVE_UP_SECONDS)
    cancel.cancel()
    outcome = call.ended()
    assert isinstance(outcome, Cancelled) and outcome.partial == ""  # nothing of a reply to keep
    assert held.client_left.wait(GIVE_UP_SECONDS), "the server did not see the client go"
    assert not held.released.is_set()
    assert pooled_connections(provider) == []  # the connection was closed, not kept for the next request
    provider.close()


def test_a_model_list_asked_inside_cancellable_ends_at_once(held):
    """Test connection and a chat opening ask for the model list; the list's own limit is 5 s."""
    held.hold_lists = True
    provider = provider_for("openai", held.url)
    cancel = CancelToken()

    def listing() -> object:
        with cancellable(cancel):
            return provider.list_models()

    call = Call(listing)
    assert held.asked.wait(GIVE_UP_SECONDS)
    cancel.cancel()
    assert isinstance(call.ended(), Cancelled)
    assert held.client_left.wait(GIVE_UP_SECONDS)
    provider.close()


def test_a_request_stopped_before_it_is_sent_never_reaches_the_server(held):
    provider = provider_for("openai", held.url)
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        list(provider.stream_chat(ASK, cancel=cancel))
    assert held.paths == []
    provider.close()


def test_stop_while_connecting_to_a_host_that_does_not_answer_ends_at_once():
    """A listener whose queue is full drops new connections' packets, as a firewalled host does: connecting would
    wait for the connect timeout."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    queued = socket.create_connection(("127.0.0.1", port))  # fills the queue (never accepted)
    provider = OpenAICompatProvider(f"http://127.0.0.1:{port}/v1", "m", connect_timeout=60)
    cancel = CancelToken()
    call = Call(lambda: list(provider.stream_chat(ASK, cancel=cancel)))
    time.sleep(0.3)  # connecting by now
    cancel.cancel()
    try:
        assert isinstance(call.ended(), Cancelled)
    finally:
        provider.close()
        queued.close()
        listener.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer_after=st.floats(0, 0.05), stop_after=st.floats(0, 0.05))
def test_stop_at_any_moment_gives_the_whole_reply_or_cancelled(answer_after, stop_after):
    """Whatever the order of the server's answer and Stop, the reply is either whole or Cancelled (with what had
    arrived), never another failure (a stream closed under its reader raised httpx.StreamClosed)."""
    server = HeldHeadersServer()
    provider = provider_for("openai", server.url)
    cancel = CancelToken()
    try:
        call = Call(lambda: "".join(chunk.text for chunk in provider.stream_chat(ASK, cancel=cancel)))
        assert server.asked.wait(GIVE_UP_SECONDS)
        threading.Timer(answer_after, server.release).start()
        time.sleep(stop_after)
        cancel.cancel()
        outcome = call.ended()
        assert outcome == "Hello" or (isinstance(outcome, Cancelled) and "Hello".startswith(outcome.partial)), outcome
    finally:
        provider.close()
        server.close()
