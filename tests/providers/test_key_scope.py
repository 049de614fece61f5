"""A key goes only to the server it belongs to, checked with a loopback server that records the Authorization
header of every request."""

from __future__ import annotations

import keyring
import pytest
from keyring.backend import KeyringBackend
from precis.core.model.messages import Message
from precis.core.providers.base import AuthError, complete
from precis.core.providers.registry import ALLOW_HTTP_KEY_ENV, api_key_for, make_provider, save_api_key

from tests.providers.scripted_server import FINISH, delta, stream

ENV_KEY = "sk-env-OFFICIAL0123456789abcdef"


class MemoryKeyring(KeyringBackend):
    """The OS keyring is not available on a test machine; this in-memory backend plays it."""
    priority = 1

    def __init__(self) -> None:
        super().__init__()
        self.saved: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.saved.get((service, username))

    def set_password(self, service, username, password):
        self.saved[(service, username)] = password

    def delete_password(self, service, username):
        self.saved.pop((service, username), None)


@pytest.fixture
def memory_keyring():
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def ask(server) -> None:
    server.steps = [stream([delta("ok"), FINISH, "data: [DONE]"])]
    provider = make_provider("openai", base_url=server.base_url, model="m")
    assert complete(provider, [Message("user", "hi")], max_tokens=4).text == "ok"


def test_the_environment_key_never_goes_to_another_server(server, monkeypatch, memory_keyring):
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    ask(server)
    assert server.authorizations == [None]
    assert api_key_for("openai") == ENV_KEY  # the official host still gets it


def test_a_key_saved_for_a_server_goes_to_that_server_only(server, monkeypatch, memory_keyring):
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    save_api_key("openai", "sk-local-server-key-0001", server.base_url)
    ask(server)
    assert server.authorizations == ["Bearer sk-local-server-key-0001"]
    assert api_key_for("openai") == ENV_KEY
    assert api_key_for("openai", "http://127.0.0.1:1/v1") is None


def test_no_key_over_plain_http_to_another_host_unless_allowed(monkeypatch):
    with pytest.raises(AuthError, match=f"plain HTTP to 192.0.2.7.*{ALLOW_HTTP_KEY_ENV}=1"):
        make_provider("openai", base_url="http://192.0.2.7:11434/v1", model="m", api_key="sk-lan-key-123456")
    make_provider("openai", base_url="http://192.0.2.7:11434/v1", model="m")  # no key: nothing to protect
    make_provider("openai", base_url="https://192.0.2.7/v1", model="m", api_key="sk-lan-key-123456")
    monkeypatch.setenv(ALLOW_HTTP_KEY_ENV, "1")
    make_provider("openai", base_url="http://192.0.2.7:11434/v1", model="m", api_key="sk-lan-key-123456")
