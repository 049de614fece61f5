"""Build a provider by kind, and find its API key (environment first, then the OS keyring; never the database).

A key goes only to the server it belongs to: the environment's key to the official API host, a key saved for
another server (kept in the keyring under that server's origin) to that server, and none over plain HTTP to a host
beyond this machine unless the user allows it (ALLOW_HTTP_KEY_ENV).
"""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

from ..model.counted import counted
from ..settings import DEFAULT_MODELS, KINDS, ProviderChoice, base_url_problem
from .base import AuthError, Provider

KEYRING_SERVICE = "precis"
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
OFFICIAL_HOSTS = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}
# Set to 1 to send a key over plain HTTP to a host that is not this machine (a trusted network only).
ALLOW_HTTP_KEY_ENV = "PRECIS_ALLOW_HTTP_KEY"
# Keys typed in Settings that the keyring did not keep (a backend that stores nothing), by keyring entry: used until
# Precis closes, in this process's memory only (never the database, a log or a settings file).
_SESSION_KEYS: dict[str, str] = {}


def _official(kind: str, base_url: str | None) -> bool:
    return base_url is None or urlsplit(base_url).hostname == OFFICIAL_HOSTS.get(kind)


def _keyring_user(kind: str, base_url: str | None) -> str:
    """The keyring entry of a key: the kind for its official host, else the kind and the server's origin."""
    if _official(kind, base_url):
        return kind
    parts = urlsplit(base_url or "")
    return f"{kind}@{parts.scheme}://{parts.netloc}"


def _loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def key_hint(kind: str, base_url: str | None = None) -> str:
    """Where the key for `kind` at `base_url` is looked for, told when a key is missing or refused: the environment
    variable only for the official host, else the keyring entry of that server (what Settings → Provider saves)."""
    user = _keyring_user(kind, base_url)
    if _official(kind, base_url):
        return f"Set {KEY_ENV[kind]} or store a key in the keyring (service {KEYRING_SERVICE}, user {user})."
    return (f"Enter this server's key in Settings → Provider, or store it in the keyring (service {KEYRING_SERVICE}, "
            f"user {user}); {KEY_ENV[kind]} is sent to {OFFICIAL_HOSTS[kind]} only.")


def api_key_for(kind: str, base_url: str | None = None) -> str | None:
    """The key for a provider kind at `base_url` (None: its official host). The environment variable counts for
    the official host only; any server's key can come from the keyring, saved for that server."""
    env = KEY_ENV.get(kind)
    if env and os.environ.get(env) and _official(kind, base_url):
        return os.environ[env]
    if _keyring_user(kind, base_url) in _SESSION_KEYS:
        return _SESSION_KEYS[_keyring_user(kind, base_url)]
    try:
        import keyring
        from keyring.errors import KeyringError
    except ImportError:
        return None
    try:
        return keyring.get_password(KEYRING_SERVICE, _keyring_user(kind, base_url)) or None
    except (KeyringError, RuntimeError, OSError):
        # No usable keyring backend (a headless machine): the environment is the only source.
        return None


def save_api_key(kind: str, key: str, base_url: str | None = None) -> str | None:
    """Store a key in the OS keyring for the server at `base_url` (None: the official host), read back to be sure:
    a backend may store nothing without a word (keyring.backends.null, a misconfigured one). One that did not keep it
    (or failed) leaves the key in use until Precis closes, and what to tell the user is returned; None when stored."""
    import keyring
    from keyring.errors import KeyringError

    user = _keyring_user(kind, base_url)
    backend = type(keyring.get_keyring())
    try:
        keyring.set_password(KEYRING_SERVICE, user, key)
        kept = keyring.get_password(KEYRING_SERVICE, user) == key
        why = f"the keyring in use ({backend.__module__}.{backend.__qualname__}) keeps nothing"
    except (KeyringError, RuntimeError, OSError) as exc:
        kept, why = False, f"the OS keyring refused it ({type(exc).__name__})"
    if kept:
        _SESSION_KEYS.pop(user, None)
        return None
    _SESSION_KEYS[user] = key
    instead = (f"set {KEY_ENV[kind]} in the environment before starting Precis" if _official(kind, base_url) and
               kind in KEY_ENV else f"store it in a working keyring (service {KEYRING_SERVICE}, user {user})")
    return (f"The {kind} API key could not be stored: {why}. It is used until Precis closes, and kept nowhere. "
            f"To keep it, {instead}.")


def check_connection(provider: Provider) -> str:
    """A small real request to a hosted provider (its model list): what the server answered, in plain words.
    Failures raise the provider's own error, which says it plainly (refused, key rejected, no answer in time)."""
    models = provider.list_models()
    server = getattr(provider, "server", provider.name)
    listed = counted(len(models), 'model')
    if provider.model in models:
        return f"Connected: {server} serves {listed}, {provider.model} among them"
    if not models:
        return f"Connected to {server}, but it lists no models"
    some = ", ".join(models[:3]) + (", …" if len(models) > 3 else "")
    return f"Connected: {server} serves {listed} ({some}), but not {provider.model}"


def make_provider(kind: str, *, base_url: str | None = None, model: str | None = None,
                  api_key: str | None = None, extra_buffer_types: bool = False,
                  model_path: str | None = None) -> Provider:
    """A provider of the given kind; remote kinds look their key up when none is given.

    A key is required only for the hosted default endpoints; a custom base URL (Ollama, LM Studio, a llama.cpp
    server) often needs none. `extra_buffer_types` and `model_path` (a GGUF file; None: the built-in model) apply to
    the local model only (see local.llama_class).
    """
    if kind == "local":
        from pathlib import Path

        from .local import LocalProvider

        return LocalProvider(Path(model_path) if model_path else None, extra_buffer_types=extra_buffer_types)
    if kind not in KINDS:
        raise ValueError(f"unknown provider {kind!r}; choose one of {', '.join(KINDS)}")
    if base_url is not None and (problem := base_url_problem(base_url)):
        raise ValueError(f"Base URL {problem}")
    key = api_key or api_key_for(kind, base_url)
    parts = urlsplit(base_url or "")
    if key and parts.scheme == "http" and not _loopback(parts.hostname) and os.environ.get(ALLOW_HTTP_KEY_ENV) != "1":
        raise AuthError(f"refusing to send the {kind} API key over plain HTTP to {parts.hostname}: anyone on the "
                        f"network could read it. Use https, or set {ALLOW_HTTP_KEY_ENV}=1 to allow it")
    if key is None and base_url is None:
        raise AuthError(f"no API key for {kind}. {key_hint(kind)}")
    model = model or DEFAULT_MODELS[kind]
    if kind == "openai":
        from .openai_compat import DEFAULT_BASE_URL, OpenAICompatProvider

        return OpenAICompatProvider(base_url or DEFAULT_BASE_URL, model, key)
    from .anthropic import DEFAULT_BASE_URL as ANTHROPIC_URL
    from .anthropic import AnthropicProvider

    return AnthropicProvider(base_url or ANTHROPIC_URL, model, key)


def provider_for(choice: ProviderChoice, api_key: str | None = None) -> Provider:
    """The provider a ProviderChoice (Settings → Provider, Local model) names (see make_provider)."""
    return make_provider(choice.kind, base_url=choice.base_url or None, model=choice.model or None, api_key=api_key,
                         extra_buffer_types=choice.extra_buffer_types, model_path=choice.model_path or None)


def launch(choice: ProviderChoice) -> None:
    """Start loading the local model a choice names in its process, without waiting (app start-up)."""
    if choice.kind == "local":
        from .local import LocalProvider  # imported only where the local model is used

        provider = provider_for(choice)
        if isinstance(provider, LocalProvider):  # as the kind says
            provider.launch()

