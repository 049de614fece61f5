"""A stand-in for an Ollama server, which cannot be installed here: it answers GET /api/tags with one model as
Ollama does, and passes /v1/... (Ollama's OpenAI-compatible endpoint) on to a real llama_cpp.server, so the
model's replies are real. Without an upstream it only lists (discovery tests)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

MODEL = "smollm2:135m"
MODEL_SIZE = 98_362_432


# GET /api/tags as Ollama answers it (one model; the fields Ollama 0.x sends).
TAGS = {"models": [{"name": MODEL, "model": MODEL, "modified_at": "2026-11-01T10:00:00.000000000Z",
                    "size": MODEL_SIZE, "digest": "0" * 64,
                    "details": {"parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"],
                                "parameter_size": "134.52M", "quantization_level": "Q4_1"}}]}


class StandInOllama(ThreadingHTTPServer):
    """The stand-in server on a free loopback port. /api/tags answers once `listing` is set (set from the start
    unless `hold_listing`), so a test can show the window does not wait for it."""

    def __init__(self, upstream: str | None = None, hold_listing: bool = False) -> None:
        self.upstream = upstream
        self.listing = threading.Event()
        self.forwarded: list[str] = []  # the paths passed on to the model's server
        if not hold_listing:
            self.listing.set()
        super().__init__(("127.0.0.1", 0), _OllamaHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _OllamaHandler(BaseHTTPRequestHandler):
    server: StandInOllama

    def log_message(self, *_args) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/api/tags":
            self.server.listing.wait(60)
            self._send(200, json.dumps(TAGS).encode(), "application/json")
        else:
            self._forward(None)

    def do_POST(self) -> None:  # noqa: N802
        self._forward(self.rfile.read(int(self.headers.get("Content-Length", 0))))

    def _forward(self, body: bytes | None) -> None:
        if self.server.upstream is None:
            self._send(404, b'{"error": "not found"}', "application/json")
            return
        self.server.forwarded.append(self.path)
        url = self.server.upstream.removesuffix("/v1") + self.path
        with httpx.stream("POST" if body is not None else "GET", url, content=body, timeout=120,
                          headers={"Content-Type": "application/json"}) as response:
            self.send_response(response.status_code)
            self.send_header("Content-Type", response.headers.get("content-type", "application/json"))
            self.send_header("Connection", "close")
            self.end_headers()
            for piece in response.iter_raw():
                self.wfile.write(piece)
                self.wfile.flush()
        self.close_connection = True
