"""Choosing a provider and finding its key: environment first, then the keyring; a clear error when missing."""

from __future__ import annotations

import pytest
from precis.core.providers.anthropic import AnthropicProvider
from precis.core.providers.base import AuthError
from precis.core.providers.local import LocalProvider
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.providers.registry import api_key_for, make_provider


def test_key_from_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key")
    assert api_key_for("openai") == "sk-env-key"
    assert api_key_for("anthropic") is None  # the test keyring backend is empty


def test_key_from_keyring(monkeypatch):
    import keyring
    from keyring.backend import KeyringBackend

    class MemoryKeyring(KeyringBackend):
        """The OS keyring is not available on a test machine; this in-memory backend plays it."""
        priority = 1
        store = {("precis", "anthropic"): "sk-ant-from-keyring"}

        def get_password(self, service, username):
            return self.store.get((service, username))

        def set_password(self, service, username, password):
            self.store[(service, username)] = password

        def delete_password(self, service, username):
            self.store.pop((service, username), None)

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    try:
        assert api_key_for("anthropic") == "sk-ant-from-keyring"
    finally:
        keyring.set_keyring(previous)


def test_hosted_endpoint_without_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(AuthError, match="ANTHROPIC_API_KEY"):
        make_provider("anthropic")


def test_kinds(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert isinstance(make_provider("local"), LocalProvider)
    local_server = make_provider("openai", base_url="http://127.0.0.1:8080/v1", model="m")
    assert isinstance(local_server, OpenAICompatProvider) and local_server.model == "m"
    assert isinstance(make_provider("anthropic", api_key="k"), AnthropicProvider)
    with pytest.raises(ValueError, match="local, openai, anthropic"):
        make_provider("gemini")


def test_a_stored_provider_setting_keeps_what_is_still_valid():
    from precis.core.settings import ProviderChoice

    choice = ProviderChoice(kind="openai", base_url="http://localhost:11434/v1", model="smollm2:135m")
    assert ProviderChoice.from_setting(choice.to_setting()) == choice
    # An unknown kind and an address that is not a URL fall back; the model file and loading choice stay.
    stored = {"kind": "grok", "base_url": "ftp://x", "model_path": "/models/a.gguf", "extra_buffer_types": True}
    assert ProviderChoice.from_setting(stored) == ProviderChoice(model_path="/models/a.gguf", extra_buffer_types=True)
    assert ProviderChoice.from_setting("not a dict") == ProviderChoice()
