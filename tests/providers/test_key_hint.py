"""A key refused or missing is told with where the key for that server is looked for, and following those words
works: checked at `precis chat` against llama.cpp's server asking for a key on loopback."""

from __future__ import annotations

import pytest
from precis.core.cli.main import main
from precis.core.providers.registry import KEYRING_SERVICE

from tests.conftest import LLAMA_SERVER_KEY
from tests.providers.test_key_scope import ENV_KEY, memory_keyring  # noqa: F401 - a fixture

pytestmark = pytest.mark.model


def chat(base_url: str) -> int:
    return main(["chat", "--provider", "openai", "--base-url", base_url, "--model", "smollm2", "--max-tokens", "16",
                 "--temperature", "0", "Name a fruit."])


def test_a_refused_key_names_the_keyring_entry_of_that_server_and_storing_it_there_works(
        capsys, monkeypatch, memory_keyring, keyed_llama_server):  # noqa: F811 - the fixture imported above
    # The environment's key is the official host's: told to set it, a user would set it again, in vain.
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    assert chat(keyed_llama_server) == 1
    error = capsys.readouterr().err
    origin = keyed_llama_server.removesuffix("/v1")
    entry = f"openai@{origin}"
    assert f"{keyed_llama_server} rejected the API key (HTTP 401)" in error
    assert f"(service {KEYRING_SERVICE}, user {entry})" in error and "Settings → Provider" in error
    assert "OPENAI_API_KEY is sent to api.openai.com only" in error and ENV_KEY not in error

    memory_keyring.set_password(KEYRING_SERVICE, entry, LLAMA_SERVER_KEY)  # as the words say
    assert chat(keyed_llama_server) == 0
    assert capsys.readouterr().out.strip()


def test_no_key_for_the_official_host_names_its_variable_and_keyring_entry(capsys, monkeypatch, memory_keyring):  # noqa: F811
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["chat", "--provider", "anthropic", "Hi"]) == 2
    error = capsys.readouterr().err
    assert "no API key for anthropic" in error
    assert f"Set ANTHROPIC_API_KEY or store a key in the keyring (service {KEYRING_SERVICE}, user anthropic)" in error
