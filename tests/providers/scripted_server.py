"""A small scripted OpenAI-compatible HTTP server on loopback, for what a real model server cannot do on demand
(faults, hostile text, recording headers); the real httpx stack talks to it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Step = Callable[[BaseHTTPRequestHandler], None]


def delta(text: str) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})


FINISH = "data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
USAGE = "data: " + json.dumps({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 3}})


def reply(status: int, body: str = "", headers: dict[str, str] | None = None) -> Step:
    def step(handler: BaseHTTPRequestHandler) -> None:
        data = body.encode()
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    return step


def stream(lines: list[str], stall: float = 0.0) -> Step:
    """An SSE body; the connection closes after the lines (a cut, unless they end the reply), or stalls first."""
    def step(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")
        handler.end_headers()
        for line in lines:
            handler.wfile.write((line + "\n\n").encode())
            handler.wfile.flush()
        if stall:
            time.sleep(stall)
    return step


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.steps: list[Step] = []
        self.requests: list[tuple[float, str, dict]] = []
        self.authorizations: list[str | None] = []  # the Authorization header of each request

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class Handler(BaseHTTPRequestHandler):
    server: ScriptedServer

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else {}
        self.server.requests.append((time.monotonic(), self.path, body))
        self.server.authorizations.append(self.headers.get("Authorization"))
        step = self.server.steps.pop(0) if self.server.steps else reply(500, '{"error": "script exhausted"}')
        step(self)

    do_GET = do_POST = _handle

    def log_message(self, *args) -> None:
        pass
