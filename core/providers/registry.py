"""Build a provider by kind, and find its API key (environment first, then the OS keyring; never the database)."""

from __future__ import annotations

import os

from .base import AuthError, Provider

KINDS = ("local", "openai", "anthropic")
KEYRING_SERVICE = "precis"
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}


def api_key_for(kind: str) -> str | None:
    """The key for a provider kind from its environment variable, else the keyring (user = the kind)."""
    env = KEY_ENV.get(kind)
    if env and os.environ.get(env):
        return os.environ[env]
    try:
        import keyring
        from keyring.errors import KeyringError
    except ImportError:
        return None
    try:
        return keyring.get_password(KEYRING_SERVICE, kind) or None
    except (KeyringError, RuntimeError, OSError):
        # No usable keyring backend (a headless machine): the environment is the only source.
        return None


def save_api_key(kind: str, key: str) -> None:
    """Store a key in the OS keyring; raises AuthError with the reason if there is no usable keyring."""
    import keyring
    from keyring.errors import KeyringError

    try:
        keyring.set_password(KEYRING_SERVICE, kind, key)
    except (KeyringError, RuntimeError, OSError) as exc:
        raise AuthError(f"cannot store the {kind} key in the OS keyring ({type(exc).__name__}); "
                        f"set {KEY_ENV.get(kind, 'the key')} in the environment instead") from None


def make_provider(kind: str, *, base_url: str | None = None, model: str | None = None,
                  api_key: str | None = None, extra_buffer_types: bool = False) -> Provider:
    """A provider of the given kind; remote kinds look their key up when none is given.

    A key is required only for the hosted default endpoints; a custom base URL (Ollama, LM Studio, a llama.cpp
    server) often needs none. `extra_buffer_types` applies to the local model only (see local.llama_class).
    """
    if kind == "local":
        from .local import LocalProvider

        return LocalProvider(extra_buffer_types=extra_buffer_types)
    if kind not in KINDS:
        raise ValueError(f"unknown provider {kind!r}; choose one of {', '.join(KINDS)}")
    key = api_key or api_key_for(kind)
    if key is None and base_url is None:
        raise AuthError(f"no API key for {kind}: set {KEY_ENV[kind]} or store a key in the keyring "
                        f"(service {KEYRING_SERVICE}, user {kind})")
    model = model or DEFAULT_MODELS[kind]
    if kind == "openai":
        from .openai_compat import DEFAULT_BASE_URL, OpenAICompatProvider

        return OpenAICompatProvider(base_url or DEFAULT_BASE_URL, model, key)
    from .anthropic import DEFAULT_BASE_URL as ANTHROPIC_URL
    from .anthropic import AnthropicProvider

    return AnthropicProvider(base_url or ANTHROPIC_URL, model, key)
