"""A stand-in for the Hugging Face hub, which cannot be reached here: a loopback HTTP server answering the requests
huggingface_hub makes to download one file, as the hub answers them.

HEAD or GET /{repo}/resolve/{revision}/{file} answers 302 to /cdn/{sha256} on another host name (localhost rather
than 127.0.0.1: the hub's redirect goes to its storage's host, which the library does not follow for the metadata)
with X-Repo-Commit, X-Linked-Etag (the file's sha256), X-Linked-Size and ETag; GET /cdn/{sha256} serves the bytes,
honouring Range. Anything else is a 404 with the hub's X-Error-Code. The bytes are a real GGUF (the
embedded model's file) served under whatever name a test gives it.

Faults a real hub produces on a bad day, set per test: `claimed_sha256` (the hub describes other bytes), `cut_at`
(the first GET of the bytes is cut after that many bytes), `stall_at` (the first GET stops sending after that many
bytes, and every later request hangs without an answer until `release` is set), `down` (every request dropped
unanswered).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"
SEND_BYTES = 256 * 1024


@dataclass
class ServedFile:
    source: Path
    sha256: str
    size: int


_SHA256_OF: dict[Path, str] = {}


def sha256_of(path: Path) -> str:
    if path not in _SHA256_OF:
        with open(path, "rb") as stream:
            _SHA256_OF[path] = hashlib.file_digest(stream, "sha256").hexdigest()
    return _SHA256_OF[path]


@dataclass
class Faults:
    claimed_sha256: str | None = None
    cut_at: int | None = None
    stall_at: int | None = None
    down: bool = False
    release: threading.Event = field(default_factory=threading.Event)


class StandInHub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        self.files: dict[str, ServedFile] = {}  # "repo/file" -> what is served
        self.faults = Faults()
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range header)
        self.bytes_sent = 0
        self._first_get_done = False
        super().__init__(("127.0.0.1", 0), _HubHandler)
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def serve(self, repo: str, file: str, source: Path) -> ServedFile:
        served = ServedFile(source=source, sha256=sha256_of(source), size=source.stat().st_size)
        self.files[f"{repo}/{file}"] = served
        return served

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> StandInHub:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.faults.release.set()
        self.shutdown()
        self.server_close()

    def _by_sha256(self, sha256: str) -> ServedFile | None:
        return next((f for f in self.files.values() if f.sha256 == sha256), None)

    def first_get(self) -> bool:
        first, self._first_get_done = not self._first_get_done, True
        return first


class _HubHandler(BaseHTTPRequestHandler):
    server: StandInHub
    protocol_version = "HTTP/1.1"

    def log_message(self, *_args) -> None:
        pass

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(body=False)

    def do_GET(self) -> None:  # noqa: N802
        self._answer(body=True)

    def _answer(self, body: bool) -> None:
        hub = self.server
        hub.requests.append((self.command, self.path, self.headers.get("Range")))
        faults = hub.faults
        if faults.down:
            self.close_connection = True
            return
        if faults.stall_at is not None and hub._first_get_done and not faults.release.is_set():
            faults.release.wait(60)
            self.close_connection = True
            return
        if self.path.startswith("/cdn/"):
            served = hub._by_sha256(self.path.removeprefix("/cdn/"))
            if served is not None:
                self._send_bytes(served, body)
                return
        parts = self.path.split("/")
        # /{owner}/{name}/resolve/{revision}/{file}
        served = hub.files.get(f"{parts[1]}/{parts[2]}/{parts[5]}") if len(parts) == 6 and parts[3] == "resolve" \
            else None
        if served is None:
            self._not_found(body)
            return
        sha256 = faults.claimed_sha256 or served.sha256
        self.send_response(302)
        self.send_header("Location", f"http://localhost:{hub.server_address[1]}/cdn/{served.sha256}")
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("X-Linked-Etag", f'"{sha256}"')
        self.send_header("X-Linked-Size", str(served.size))
        self.send_header("ETag", '"0a1b2c3d"')  # the git blob's, which a client must not take for the sha256
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _not_found(self, body: bool) -> None:
        message = b"Entry not found"
        self.send_response(404)
        self.send_header("X-Error-Code", "EntryNotFound")
        self.send_header("X-Error-Message", "Entry not found")
        self.send_header("Content-Length", str(len(message)))
        self.end_headers()
        if body:
            self.wfile.write(message)

    def _send_bytes(self, served: ServedFile, body: bool) -> None:
        start, end = 0, served.size - 1
        asked = self.headers.get("Range")
        if asked and asked.startswith("bytes="):
            first, _, last = asked.removeprefix("bytes=").partition("-")
            start = int(first)
            end = int(last) if last else end
        self.send_response(206 if asked else 200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{served.sha256}"')
        self.send_header("Content-Length", str(end - start + 1))
        if asked:
            self.send_header("Content-Range", f"bytes {start}-{end}/{served.size}")
        self.end_headers()
        if not body:
            return
        hub = self.server
        first = hub.first_get()
        faults = hub.faults
        limit = end + 1
        if first and faults.cut_at is not None:
            limit = min(limit, faults.cut_at)
        if first and faults.stall_at is not None:
            limit = min(limit, faults.stall_at)
        with open(served.source, "rb") as stream:
            stream.seek(start)
            position = start
            while position < limit:
                chunk = stream.read(min(SEND_BYTES, limit - position))
                try:
                    self.wfile.write(chunk)
                except OSError:
                    return  # the client went away (a pause)
                position += len(chunk)
                hub.bytes_sent += len(chunk)
        if position <= end:  # cut or stalled on purpose
            self.wfile.flush()
            if first and faults.stall_at is not None:
                faults.release.wait(60)
            self.close_connection = True
