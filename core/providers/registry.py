"""Build a provider by kind, and find its API key (environment first, then the OS keyring; never the database).

A key goes only to the server it belongs to: the environment's key to the official API host, a key saved for
another server (kept in the keyring under that server's origin) to that server, and none over plain HTTP to a host
beyond this machine unless the user allows it (ALLOW_HTTP_KEY_ENV).
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from .base import AuthError, Provider

Kind = Literal["local", "openai", "anthropic"]
KINDS: tuple[str, ...] = Kind.__args__
# The store setting holding the ProviderChoice.
PROVIDER_KEY = "provider"
KEYRING_SERVICE = "precis"
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}
OFFICIAL_HOSTS = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}
# Set to 1 to send a key over plain HTTP to a host that is not this machine (a trusted network only).
ALLOW_HTTP_KEY_ENV = "PRECIS_ALLOW_HTTP_KEY"


class ProviderChoice(BaseModel):
    """Where replies come from: the settings of the Provider and Local model pages, stored under the `provider`
    setting. The API key is not here: it is kept in the OS keyring (or the environment), never in the database."""

    kind: Kind = Field("local", title="Provider",
                       description="local: a model run on this computer (Settings → Local model); openai: any "
                                   "OpenAI-compatible server (OpenAI, Ollama, LM Studio, a llama.cpp server); "
                                   "anthropic: Claude")
    base_url: str = Field("", title="Base URL", json_schema_extra={"line": True},
                          description="The server's address, e.g. http://localhost:11434/v1 for Ollama; empty: "
                                      "the provider's official endpoint")
    model: str = Field("", title="Model", json_schema_extra={"line": True},
                       description=f"The model's name on the server; empty: {DEFAULT_MODELS['openai']} (openai) or "
                                   f"{DEFAULT_MODELS['anthropic']} (anthropic)")
    extra_buffer_types: bool = Field(False, title="Extra buffer types", json_schema_extra={"page": "Local model"},
                                     description="Repack the local model's weights for this CPU's kernels "
                                                 "(llama.cpp's use_extra_bufts): faster on some CPUs, but on Intel "
                                                 "AMX CPUs it crashes the model, so it is off unless turned on")
    # The local model's GGUF file ('' : the built-in SmolLM2); set by the model picker, not typed.
    model_path: str = ""

    @field_validator("base_url")
    @classmethod
    def _web_address(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError(f"must start with http:// or https://, not {value[:30]!r}")
        return value

    @model_validator(mode="after")
    def _local_has_no_server(self) -> ProviderChoice:
        if self.kind == "local" and (self.base_url or self.model):
            raise ValueError("the local model has no base URL or model name to set; choose openai or anthropic, "
                             "or pick a model in Local model")
        return self

    @classmethod
    def from_setting(cls, value: Any) -> ProviderChoice:
        """The stored setting; a value that no longer validates keeps its valid fields, the rest default."""
        value = value if isinstance(value, dict) else {}
        try:
            return cls.model_validate(value)
        except ValidationError as exc:
            bad = {err["loc"][0] for err in exc.errors() if err["loc"]}
        kept = {name: value[name] for name in cls.model_fields if name in value and name not in bad}
        try:
            return cls.model_validate(kept)
        except ValidationError:  # valid fields that do not go together (a local model with a URL): the model alone
            return cls(**{name: kept[name] for name in ("model_path", "extra_buffer_types") if name in kept})

    def to_setting(self) -> dict[str, Any]:
        return self.model_dump()

    def make(self, api_key: str | None = None) -> Provider:
        """The provider these settings name (see make_provider)."""
        return make_provider(self.kind, base_url=self.base_url or None, model=self.model or None, api_key=api_key,
                             extra_buffer_types=self.extra_buffer_types, model_path=self.model_path or None)

    def launch(self) -> None:
        """Start loading the local model these settings name in its process, without waiting (app start-up)."""
        if self.kind == "local":
            self.make().launch()


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


def api_key_for(kind: str, base_url: str | None = None) -> str | None:
    """The key for a provider kind at `base_url` (None: its official host). The environment variable counts for
    the official host only; any server's key can come from the keyring, saved for that server."""
    env = KEY_ENV.get(kind)
    if env and os.environ.get(env) and _official(kind, base_url):
        return os.environ[env]
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


def save_api_key(kind: str, key: str, base_url: str | None = None) -> None:
    """Store a key in the OS keyring for the server at `base_url` (None: the official host); raises AuthError with
    the reason if there is no usable keyring."""
    import keyring
    from keyring.errors import KeyringError

    try:
        keyring.set_password(KEYRING_SERVICE, _keyring_user(kind, base_url), key)
    except (KeyringError, RuntimeError, OSError) as exc:
        raise AuthError(f"cannot store the {kind} key in the OS keyring ({type(exc).__name__}); "
                        f"set {KEY_ENV.get(kind, 'the key')} in the environment instead") from None


def check_connection(provider: Provider) -> str:
    """A small real request to a hosted provider (its model list): what the server answered, in plain words.
    Failures raise the provider's own error, which says it plainly (refused, key rejected, no answer in time)."""
    models = provider.list_models()
    server = getattr(provider, "server", provider.name)
    listed = f"{len(models)} model{'s' * (len(models) != 1)}"
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
    key = api_key or api_key_for(kind, base_url)
    parts = urlsplit(base_url or "")
    if key and parts.scheme == "http" and not _loopback(parts.hostname) and os.environ.get(ALLOW_HTTP_KEY_ENV) != "1":
        raise AuthError(f"refusing to send the {kind} API key over plain HTTP to {parts.hostname}: anyone on the "
                        f"network could read it. Use https, or set {ALLOW_HTTP_KEY_ENV}=1 to allow it")
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
