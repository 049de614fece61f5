"""One interface for every model backend: stream a chat completion, cancel it, know the window, count tokens."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..model.messages import Message, ToolCall
from ..model.tokens import TokenCounter
from ..model.tools import AUTO, ToolSpec


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True, slots=True)
class ChatChunk:
    """A text delta while streaming; the last chunk has done=True with usage and finish_reason. A backend that says how
    far it has read the prompt sends `progress` (tokens read, tokens in the prompt) before the first text."""

    text: str = ""
    done: bool = False
    usage: Usage | None = None
    finish_reason: str | None = None
    progress: tuple[int, int] | None = None
    # The tool calls of the reply, whole (arguments parsed), on the last chunk: finish_reason is then "tool_calls".
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    usage: Usage | None
    finish_reason: str | None


class CancelToken:
    """Set from any thread to stop a stream; providers register a closer that drops the connection at once."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._closers: list[Callable[[], object]] = []  # what they return is not used
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        self._event.set()
        with self._lock:
            closers, self._closers = self._closers, []
        for close in closers:
            try:
                close()
            except Exception:  # noqa: BLE001 - closing an already-closed stream is fine
                pass

    def on_cancel(self, close: Callable[[], object]) -> None:
        with self._lock:
            if not self._event.is_set():
                self._closers.append(close)
                return
        close()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, waking early on cancel; True if cancelled."""
        return self._event.wait(seconds)


class ProviderError(Exception):
    """A backend failure with a message fit to show a user. Never contains an API key."""

    retryable = False


class AuthError(ProviderError):
    pass


class ModelNotFound(ProviderError):
    pass


class RateLimited(ProviderError):
    retryable = True

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class ServerError(ProviderError):
    retryable = True


class ProviderTimeout(ProviderError):
    retryable = True


# How freely a reply's tokens are sampled unless the user chooses otherwise (`precis chat --temperature`).
DEFAULT_TEMPERATURE = 0.7


class ProviderUnavailable(ProviderError):
    """Cannot connect, or the backend cannot load."""

    retryable = True


class ContextLengthExceeded(ProviderError):
    pass


class MalformedResponse(ProviderError):
    pass


class StreamInterrupted(ProviderError):
    """The stream stopped mid-reply; `partial` holds what had arrived."""

    def __init__(self, message: str, partial: str = ""):
        super().__init__(message)
        self.partial = partial


class Cancelled(ProviderError):
    def __init__(self, message: str = "cancelled by the user", partial: str = ""):
        super().__init__(message)
        self.partial = partial


@runtime_checkable
class Provider(Protocol):
    """What the engine, the CLI and the GUI need of a backend."""

    name: str
    model: str

    def context_window(self) -> int: ...

    def stream_chat(
        self,
        messages: list[Message],
        *,
        max_tokens: int = 512,
        temperature: float = 0.7,
        json_schema: dict[str, Any] | None = None,
        cancel: CancelToken | None = None,
        tools: Sequence[ToolSpec] = (),
        tool_choice: str = AUTO,
    ) -> Iterator[ChatChunk]:
        """The reply as it streams. With `tools`, the model may call them (tool_choice: AUTO, NONE, or a tool's name
        to force that call); the calls come whole on the last chunk."""
        ...

    def request_body(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.7,
                     tools: Sequence[ToolSpec] = (), tool_choice: str = AUTO) -> dict[str, Any]:
        """What stream_chat would send for these messages, as JSON (the model's own prompt text for a local model):
        what "Copy as the provider's request" gives. Never an API key (keys go in headers)."""
        ...

    def count_tokens(self, text: str) -> int | None:
        """Exact count from the backend's tokenizer, or None where it has none."""
        ...

    def tokenizer_name(self) -> str | None:
        """What identifies the tokenizer count_tokens uses (counts saved under this name are its), or None where
        there is none."""
        ...

    def list_models(self) -> list[str]: ...


def token_counter(provider: Provider) -> TokenCounter:
    """Exact counts with the provider's own tokenizer where it has one (loaded here, so one that cannot load fails
    now, not mid-count), else estimates."""
    name = provider.tokenizer_name()
    if name is None or provider.count_tokens("probe") is None:
        return TokenCounter()

    def exact(text: str) -> int:
        count = provider.count_tokens(text)
        if count is None:  # it counted the probe: a tokenizer that stops counting is the backend's failure
            raise ProviderError(f"the {provider.name} provider's tokenizer stopped counting")
        return count

    return TokenCounter(exact=exact, exact_name=name)


def complete(provider: Provider, messages: list[Message], **kwargs: Any) -> Completion:
    """Run a stream to its end and return the whole text."""
    parts: list[str] = []
    usage = finish = None
    for chunk in provider.stream_chat(messages, **kwargs):
        parts.append(chunk.text)
        if chunk.done:
            usage, finish = chunk.usage, chunk.finish_reason
    return Completion(text="".join(parts), usage=usage, finish_reason=finish)
