"""A keyring backend that stores nothing (keyring.backends.null, the tests' default too) is found out by reading the
key back: the user is told it was not stored and how to provide it instead, it is used until Precis closes, and it is
written nowhere. Real keyring backends (the window: tests/gui/test_key_not_kept_window.py)."""

from __future__ import annotations

import keyring
import pytest
from keyring.backends.null import Keyring as NullKeyring
from precis.core.providers import registry
from precis.core.providers.registry import api_key_for, save_api_key

from tests.providers.test_key_scope import memory_keyring  # noqa: F401 - a fixture

TYPED = "sk-typed-NOTKEPT0123456789abcdef"


@pytest.fixture
def null_keyring(monkeypatch):
    monkeypatch.setattr(registry, "_SESSION_KEYS", {})  # what this process keeps: from nothing, for this test only
    previous = keyring.get_keyring()
    keyring.set_keyring(NullKeyring())
    yield
    keyring.set_keyring(previous)


def test_a_key_the_keyring_drops_is_said_used_this_session_and_named_where_to_put_it(null_keyring, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    notice = save_api_key("openai", TYPED)
    assert notice is not None and TYPED not in notice
    assert "could not be stored" in notice and "(keyring.backends.null.Keyring) keeps nothing" in notice
    assert "set OPENAI_API_KEY in the environment" in notice
    assert api_key_for("openai") == TYPED  # until Precis closes
    elsewhere = save_api_key("openai", TYPED, "http://127.0.0.1:8080/v1")
    assert elsewhere is not None and "user openai@http://127.0.0.1:8080" in elsewhere  # no variable goes there


def test_a_key_the_keyring_keeps_says_nothing(memory_keyring, monkeypatch):  # noqa: F811 - the fixture imported above
    monkeypatch.setattr(registry, "_SESSION_KEYS", {})
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert save_api_key("openai", TYPED) is None
    assert memory_keyring.saved == {(registry.KEYRING_SERVICE, "openai"): TYPED}
