"""HTTP plumbing shared by the remote providers: status -> error mapping, bounded retries, cancel, cut streams.

Every error message names the server (base URL without credentials) and the HTTP status, and is scrubbed of
the API key, because these messages reach the user, logs and exports.
"""

from __future__ import annotations

import email.utils
import html
import json
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from .base import (
    AuthError,
    Cancelled,
    CancelToken,
    ContextLengthExceeded,
    MalformedResponse,
    ModelNotFound,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    ServerError,
    StreamInterrupted,
)
from .cancellable import cancellable, shut_down, watch_sockets
from .registry import key_hint

# A model list is a few kilobytes, answered at once by a server that works; a server that accepts the connection
# and then says nothing (a port held by something that is no API, a server stuck) is given up on after this.
LIST_TIMEOUT_SECONDS = 5.0
# Longest server-supplied detail quoted in a message.
DETAIL_CHARS = 300
CONTEXT_ERROR_MARKERS = (
    "context_length_exceeded", "maximum context length", "context length", "context window",
    "n_ctx", "context size", "prompt is too long", "too many tokens",
)
# Key-like strings a server may echo back (OpenAI quotes a masked key in 401 messages).
_KEY_LIKE = re.compile(r"\b(?:sk|pk|key|rk)-[A-Za-z0-9_\-*.]{6,}")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded retries for 429 and 5xx before any text has streamed."""

    max_retries: int = 3
    base_delay: float = 0.25
    # A Retry-After longer than this is not waited for: the error is raised with the server's delay instead.
    max_wait: float = 30.0

    def backoff(self, attempt: int) -> float:
        return min(self.base_delay * (2 ** attempt), self.max_wait)


def server_label(base_url: str) -> str:
    """The base URL as shown to users: no user:password, query or fragment."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", "")) or base_url


def scrub(text: str, secret: str | None) -> str:
    if secret:
        text = text.replace(secret, "[api key]")
    return _KEY_LIKE.sub("[api key]", text)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


# What a server that answers with a web page (a website's or a router's address given as the base URL) is told.
URL_HINT = "Check the base URL: it is the API's address, such as http://localhost:11434/v1 for Ollama"
_TAG = re.compile(r"<(script|style|title)\b.*?</\1\s*>|<[^>]*>", re.IGNORECASE | re.DOTALL)


def looks_like_html(body: str) -> bool:
    start = body.lstrip()[:200].lower()
    return start.startswith(("<!doctype html", "<html")) or ("<html" in start and start.startswith("<"))


def server_detail(body: str) -> str:
    """The human part of an error body: error.message of the usual JSON shapes, the words of an HTML page (not its
    markup), else the text itself."""
    text = body.strip()
    if looks_like_html(text):
        words = " ".join(html.unescape(_TAG.sub(" ", text)).split())
        return f"a web page: {words}"[:DETAIL_CHARS]
    try:
        payload = json.loads(text)
    except ValueError:
        return text[:DETAIL_CHARS]
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            text = str(error.get("message") or error.get("type") or text)
        elif isinstance(error, str):
            text = error
    return text[:DETAIL_CHARS]


def error_for_status(status: int, body: str, headers: httpx.Headers | dict, *, server: str, model: str,
                     secret: str | None, key_hint: str = "") -> ProviderError:
    detail = scrub(server_detail(body), secret).rstrip(".")  # some messages go on with a sentence of their own
    suffix = f": {detail}" if detail else ""
    lowered = body.lower()
    if status in (401, 403):
        hint = f" {key_hint}" if key_hint else ""
        return AuthError(f"{server} rejected the API key (HTTP {status}){suffix}.{hint}")
    if status == 404:
        return ModelNotFound(
            f"{server} has no model {model!r} or no such endpoint (HTTP 404){suffix}. Check the model name and base URL.")
    if status == 429:
        wait = parse_retry_after(headers.get("retry-after"))
        when = f"; retry after {wait:.0f} s" if wait is not None else ""
        return RateLimited(f"{server} is rate limiting requests (HTTP 429){when}{suffix}", retry_after=wait)
    if status in (400, 413, 422) and any(marker in lowered for marker in CONTEXT_ERROR_MARKERS):
        return ContextLengthExceeded(
            f"{server}: the prompt is longer than the model's context window (HTTP {status}){suffix}")
    if status in (405, 501):  # the method is not served there: no API at that address, and no use retrying
        return ProviderError(f"{server} does not take this request (HTTP {status}){suffix}. {URL_HINT}.")
    if status >= 500:
        if status == 529:
            return ServerError(f"{server} is overloaded (HTTP 529){suffix}")
        return ServerError(f"{server} had a server error (HTTP {status}){suffix}")
    return ProviderError(f"{server} rejected the request (HTTP {status}){suffix}")


def _close_at_once(response: httpx.Response) -> Callable[[], None]:
    """A closer for CancelToken: shut the socket down so a read blocked in another thread returns now (the reader
    then closes the response); a response with no socket (a test's transport) is closed."""

    def close() -> None:
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if sock is not None:
            shut_down(sock)
        else:
            response.close()

    return close


class HTTPProvider:
    """What the hosted backends share: a base URL, a model, a key kept to the request headers, one httpx client."""

    name: str  # the provider kind, as the registry names it

    def __init__(self, base_url: str, model: str, api_key: str | None, *, window: int | None, timeout: float,
                 connect_timeout: float, retry: RetryPolicy, transport: httpx.BaseTransport | None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.server = server_label(self.base_url)
        self._api_key = api_key
        self._window = window
        self._retry = retry
        self._key_hint = key_hint(self.name, self.base_url)  # where its key is looked for, told when it is refused
        self._client = watch_sockets(
            httpx.Client(timeout=httpx.Timeout(timeout, connect=connect_timeout), transport=transport))

    def close(self) -> None:
        self._client.close()

    def _event_json(self, data: str) -> dict[str, Any]:
        """One stream event's data as a JSON object; MalformedResponse (key scrubbed) otherwise."""
        try:
            parsed = json.loads(data)
        except ValueError:
            raise MalformedResponse(f"{self.server} sent stream data that is not JSON: {scrub(data[:80], self._api_key)!r}") from None
        if not isinstance(parsed, dict):
            raise MalformedResponse(f"{self.server} sent stream data that is not a JSON object: {scrub(data[:80], self._api_key)!r}")
        return parsed


@contextmanager
def connection_errors(server: str, secret: str | None) -> Iterator[None]:
    """httpx's connect and timeout failures as provider errors naming the server (never the key)."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise ProviderTimeout(f"{server} did not answer in time ({type(exc).__name__})") from exc
    except httpx.TransportError as exc:
        raise ProviderUnavailable(f"cannot connect to {server}: {scrub(str(exc), secret) or type(exc).__name__}") from exc


def open_stream(client: httpx.Client, request: httpx.Request, *, server: str, model: str, secret: str | None,
                retry: RetryPolicy, cancel: CancelToken, key_hint: str = "",
                final: Callable[[int, str], bool] | None = None) -> httpx.Response:
    """Send a streaming request; return the open 2xx response (closed by cancel) or raise a ProviderError.

    429 and 5xx are retried at most retry.max_retries times (Retry-After honoured up to retry.max_wait,
    else backoff); `final(status, body)` marks a failure not worth retrying. Cancelling ends it at once, even while
    the server has not answered (see cancellable).
    """
    with cancellable(cancel):
        for attempt in range(retry.max_retries + 1):
            with connection_errors(server, secret):
                response = client.send(request, stream=True)
            if cancel.cancelled:  # cancelled as the headers arrived: the watch may have shut the socket already
                response.close()
                raise Cancelled()
            if response.status_code < 400 and "html" in response.headers.get("content-type", ""):
                response.close()
                raise _web_page(server, response.status_code)
            if response.status_code < 400:
                cancel.on_cancel(_close_at_once(response))
                return response
            try:
                body = response.read().decode("utf-8", "replace")
            except httpx.HTTPError:
                body = ""
            finally:
                response.close()
            error = error_for_status(response.status_code, body, response.headers, server=server, model=model,
                                     secret=secret, key_hint=key_hint)
            give_up = final(response.status_code, body) if final is not None else False
            if give_up or not error.retryable or attempt == retry.max_retries:
                if error.retryable and attempt:
                    error.args = (f"{error.args[0]} (gave up after {attempt + 1} attempts)",)
                raise error
            wait = retry.backoff(attempt)
            if isinstance(error, RateLimited) and error.retry_after is not None:
                if error.retry_after > retry.max_wait:
                    raise error
                wait = error.retry_after
            if cancel.wait(wait):
                raise Cancelled()
    raise AssertionError("unreachable: the loop returns or raises")


def get_json(client: httpx.Client, url: str, *, headers: dict[str, str], server: str, model: str,
             secret: str | None, key_hint: str = "") -> object:
    """One GET that returns parsed JSON (used for model lists), with the same error mapping; a server silent for
    LIST_TIMEOUT_SECONDS has failed (not the reply's minute: Test connection and a chat's window wait on it)."""
    with connection_errors(server, secret):
        response = client.get(url, headers=headers, timeout=LIST_TIMEOUT_SECONDS)
    if response.status_code >= 400:
        raise error_for_status(response.status_code, response.text, response.headers, server=server, model=model,
                               secret=secret, key_hint=key_hint)
    try:
        return response.json()
    except ValueError as exc:
        if "html" in response.headers.get("content-type", "") or looks_like_html(response.text):
            raise _web_page(server, response.status_code) from None
        raise MalformedResponse(f"{server} sent a response that is not JSON (HTTP {response.status_code})") from exc


def _web_page(server: str, status: int) -> MalformedResponse:
    """A 2xx web page where the API's JSON was due: the stream of such a page read as 'ended the stream before the
    reply was complete'."""
    return MalformedResponse(f"{server} answered with a web page (HTML, HTTP {status}), not an API's JSON. {URL_HINT}.")


def stream_failure(exc: Exception, *, server: str, partial: str, cancel: CancelToken) -> ProviderError:
    """What a failure while reading a stream means to the user; any text that arrived is kept."""
    if cancel.cancelled:
        return Cancelled(partial=partial)
    if isinstance(exc, ProviderError):
        error = exc
    elif isinstance(exc, httpx.TimeoutException):
        error = ProviderTimeout(f"{server} stopped sending mid-reply (read timed out)")
    else:
        error = StreamInterrupted(f"the connection to {server} was cut mid-reply ({type(exc).__name__})")
    if partial:
        return StreamInterrupted(f"{error.args[0]}; the partial reply was kept", partial=partial)
    return error
