"""Stop that ends an HTTP request at once, whatever it is waiting for: the connection, the server's response headers
(a llama.cpp or Ollama server sends none until it has read the whole prompt: minutes for a long one on a CPU), or
its body.

A blocking socket read cannot be interrupted from another thread except by shutting the socket down, and httpx
does not say which socket a request uses until its headers have arrived. So the providers' clients connect through
WatchedBackend, whose streams tell the request's watch (set for the thread by `cancellable`) which socket they are
using each time they read, write or connect; cancelling the token shuts that socket down, the blocked call returns
at once, the server sees the client go (llama.cpp's server then stops working on the request), and httpx drops the
connection (it is not pooled again).
"""

from __future__ import annotations

import contextvars
import socket
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

from .base import Cancelled, CancelToken

_current: contextvars.ContextVar[_Watch | None] = contextvars.ContextVar("precis_http_watch", default=None)


def shut_down(sock: socket.socket) -> None:
    """Shut a socket down so a call blocked on it in another thread returns now. The plain socket's shutdown even
    for a TLS one: SSLSocket.shutdown would also drop its TLS state under the thread still reading it."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:  # not connected yet, or already closed
        pass


class _Watch:
    """The socket a cancellable request is using; once cancelled, it and any socket it goes on to use are shut down.
    Ended when the request's `cancellable` block is left: its connection may then go back to the pool, for another
    request, and a later cancel must not touch it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self.cancelled = False
        self._ended = False

    def use(self, sock: socket.socket | None) -> None:
        """Called by the thread about to block on `sock`; raises if the request was cancelled (the socket is shut
        down, so a read would not block either)."""
        with self._lock:
            self._socket = sock
            if self.cancelled and sock is not None:
                shut_down(sock)
        if self.cancelled:
            raise httpcore.ReadError("cancelled")

    def cancel(self) -> None:
        with self._lock:
            if self._ended:
                return
            self.cancelled = True
            if self._socket is not None:
                shut_down(self._socket)

    def end(self) -> None:
        with self._lock:
            self._ended = True
            self._socket = None


@contextmanager
def cancellable(cancel: CancelToken) -> Iterator[None]:
    """Within it, cancelling `cancel` ends at once any request this thread makes through a provider's client (see
    watch_sockets), and the block raises Cancelled, whatever the request failed with as its socket went."""
    if cancel.cancelled:
        raise Cancelled()
    watch = _Watch()
    cancel.on_cancel(watch.cancel)
    token = _current.set(watch)
    try:
        yield
    except Cancelled:
        raise
    except Exception as exc:
        if cancel.cancelled:
            raise Cancelled() from exc
        raise
    finally:
        _current.reset(token)
        watch.end()


def _using(stream: httpcore.NetworkStream) -> None:
    watch = _current.get()
    if watch is not None:
        watch.use(stream.get_extra_info("socket"))


class _WatchedStream(httpcore.NetworkStream):
    """A connection's stream that tells the current request's watch which socket it blocks on."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        _using(self._stream)
        return self._stream.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        _using(self._stream)
        self._stream.write(buffer, timeout)

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        _using(self._stream)
        return _WatchedStream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class WatchedBackend(httpcore.NetworkBackend):
    """httpcore's own backend, its streams watched, and its connect too: the socket is made first, so a connect to
    a host that does not answer (its packets dropped) is cancellable as well."""

    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        watch = _current.get()
        if watch is None:
            return _WatchedStream(self._backend.connect_tcp(host, port, timeout, local_address, socket_options))
        return _WatchedStream(_connect(watch, host, port, timeout, local_address, socket_options or ()))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _WatchedStream(self._backend.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def _connect(watch: _Watch, host: str, port: int, timeout: float | None, local_address: str | None,
             socket_options: Iterable[Any]) -> httpcore.NetworkStream:
    """socket.create_connection's walk over the host's addresses (as httpcore's SyncBackend uses it), each socket
    given to the watch before it connects."""
    errors: list[OSError] = []
    try:
        addresses = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    except OSError as exc:
        raise httpcore.ConnectError(str(exc)) from exc
    for family, kind, protocol, _name, address in addresses:
        sock = socket.socket(family, kind, protocol)
        try:
            watch.use(sock)
            sock.settimeout(timeout)
            if local_address is not None:
                sock.bind((local_address, 0))
            sock.connect(address)
            watch.use(sock)  # cancelled while connecting: the connect may still have succeeded
            for option in socket_options:
                sock.setsockopt(*option)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except httpcore.ReadError:
            sock.close()
            raise
        except TimeoutError as exc:
            sock.close()
            raise httpcore.ConnectTimeout(str(exc) or "timed out") from exc
        except OSError as exc:
            sock.close()
            errors.append(exc)
            continue
        return _plain_stream(sock)
    raise httpcore.ConnectError(str(errors[-1]) if errors else f"no address for {host}")


def _plain_stream(sock: socket.socket) -> httpcore.NetworkStream:
    """httpcore's own stream over a connected socket (what its SyncBackend.connect_tcp returns)."""
    from httpcore._backends.sync import SyncStream

    return SyncStream(sock)


def watch_sockets(client: httpx.Client) -> httpx.Client:
    """Connect every transport of `client` that httpx made (the default one and those for proxies from the
    environment) through WatchedBackend. httpx has no public setting for the backend; its pools (httpcore's
    ConnectionPool and the proxies built on it) take one, kept as `_network_backend`. A transport given by the caller
    (a test's MockTransport) is left as it is."""
    for transport in (getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()):
        pool = getattr(transport, "_pool", None)
        if isinstance(transport, httpx.HTTPTransport) and isinstance(pool, httpcore.ConnectionPool):
            pool._network_backend = WatchedBackend()
    return client
