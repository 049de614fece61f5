"""A fake HTTP peer on loopback that takes a request whole and then sends no response headers until released: what a
llama.cpp or Ollama server does while it reads a long prompt (minutes on a CPU), produced on demand. A fake because
a real server's wait cannot be held open and released at will; it is a real socket, so the client's httpx stack is
the real one, and it notices, as a real server does, when the client goes (its end of the socket closes).

GET /…/models is answered at once (a window opening on it asks for the model's window) unless `hold_lists`."""

from __future__ import annotations

import json
import select
import socket
import threading
import time

MODELS_BODY = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
REPLY_LINES = (
    'data: {"choices": [{"index": 0, "delta": {"content": "Hello"}, "finish_reason": null}]}',
    'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}',
    "data: [DONE]",
)


class HeldHeadersServer:
    def __init__(self, hold_lists: bool = False) -> None:
        self.hold_lists = hold_lists
        self.asked = threading.Event()  # a held request has been read whole
        self.client_left = threading.Event()  # the client closed its end while its request was held
        self.left_at: float | None = None  # time.monotonic() when it did
        self.released = threading.Event()
        self.paths: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._connections: list[socket.socket] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    @property
    def port(self) -> int:
        return self._listener.getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def release(self) -> None:
        """Answer what is held (a short streamed reply), as a server that has read the prompt does."""
        self.released.set()

    def close(self) -> None:
        self._stop.set()
        self.released.set()
        self._accepting.join()
        for thread in self._threads:
            thread.join(5)
        for connection in self._connections:
            connection.close()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            self._connections.append(connection)
            thread = threading.Thread(target=self._serve, args=(connection,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, connection: socket.socket) -> None:
        connection.settimeout(5)
        with connection.makefile("rb") as reader:
            while not self._stop.is_set():
                request_line = reader.readline()
                if not request_line:
                    return
                method, path, _ = request_line.decode("latin-1").split(" ", 2)
                length = 0
                while (line := reader.readline().strip()):
                    name, _, value = line.decode("latin-1").partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                reader.read(length)
                self.paths.append(path)
                if method == "GET" and path.endswith("/models") and not self.hold_lists:
                    self._send(connection, "application/json", MODELS_BODY, close=False)  # kept: the next reuses it
                    continue
                self.asked.set()
                if not self._hold(connection):
                    return
                if method == "GET":
                    self._send(connection, "application/json", MODELS_BODY)
                else:
                    self._send(connection, "text/event-stream", "".join(f"{line}\n\n" for line in REPLY_LINES).encode())
                return

    def _hold(self, connection: socket.socket) -> bool:
        """Wait for release; False if the client left first (its end closed: a read returns nothing)."""
        while not self.released.is_set():
            readable, _, _ = select.select([connection], [], [], 0.02)
            if readable:
                try:
                    data = connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    data = b""
                if not data:
                    self.left_at = time.monotonic()
                    self.client_left.set()
                    return False
        return not self._stop.is_set()

    @staticmethod
    def _send(connection: socket.socket, content_type: str, body: bytes, close: bool = True) -> None:
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n").encode()
        try:
            connection.sendall(head + body)
        except OSError:
            pass
