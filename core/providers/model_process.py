"""The local model in a child process: a native fault in llama.cpp ends the child, never the app.

Protocol: one JSON object a line. The parent sends requests `{"id", "tokens", "max_tokens", "temperature",
"json_schema", "repeat_penalty"}` and cancels `{"cancel": id}` on the child's stdin; the child answers on a
private copy of its stdout (llama.cpp's own prints go to stderr) with `{"ready": true}` once loaded (or
`{"error"}`), then `{"id", "progress": [read, total]}` as it reads the prompt, `{"id", "text"}` per piece and
`{"id", "done": true, "finish", "cancelled"}` at the end.
The child exits when its stdin closes, so it never outlives the app.

Run by the parent as `python -m precis.core.providers.model_process MODEL N_CTX EXTRA_BUFFER_TYPES(0/1)`.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import IO, Any

from .base import Cancelled, ProviderUnavailable, StreamInterrupted

# How long a caller waits for the model process while another reply is running on it.
BUSY_WAIT_SECONDS = 300.0


class _ProcessEnded(Exception):
    """The child's output ended: it is gone."""


class ModelProcessDied(StreamInterrupted):
    """The model process ended mid-request (a crash, a kill, the OOM killer); `partial` keeps what had arrived."""


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    """The model process's stdin or stdout: pipes, as _spawn opens them (Popen types them as maybe absent)."""
    assert stream is not None, "the model process is started with stdin and stdout piped"
    return stream


def exit_description(returncode: int) -> str:
    """'killed by SIGKILL' / 'exited with code 1', from a Popen return code."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with code {returncode}"


class ModelProcess:
    """Starts the child on first use, restarts it after it died, stops it on `close()` (and at exit)."""

    def __init__(self, path: Path, n_ctx: int, extra_buffer_types: bool) -> None:
        self.path = path
        self.n_ctx = n_ctx
        self.extra_buffer_types = extra_buffer_types
        self._process: subprocess.Popen[bytes] | None = None
        self._ready = False  # the process said its model is loaded
        self._log: IO[bytes] | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.last_exit: str | None = None
        self.loaded_params: dict[str, Any] = {}

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    @property
    def loaded(self) -> bool:
        """The process runs with its model loaded: a request now starts on its work at once."""
        return self._ready and self._process is not None and self._process.poll() is None

    def launch(self) -> None:
        """Start the model process without waiting for its model to load (`start` or the first request waits).
        Nothing to do when it runs, or while a request holds it."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            if self._process is None or (self._ready and self._process.poll() is not None):
                self._spawn()
        finally:
            self._lock.release()

    def start(self) -> None:
        """Start the model process and wait until its model is loaded (call off the GUI thread)."""
        with self._lock:
            self._ensure_running()

    def _spawn(self) -> subprocess.Popen[bytes]:
        self.last_exit = None
        self._ready = False
        self._log = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(self.path), str(self.n_ctx), str(int(self.extra_buffer_types))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, bufsize=0)
        return self._process

    def _ensure_running(self) -> subprocess.Popen[bytes]:
        process = self._process
        if process is None or (self._ready and process.poll() is not None):
            process = self._spawn()
        if self._ready:
            return process
        # Launched and loading (or failed to load: its one line says why).
        line = _pipe(process.stdout).readline()
        message = json.loads(line) if line.strip() else {}
        # What the loaded Llama passed to llama.cpp, read back in the child.
        self.loaded_params = {"use_extra_bufts": message.get("use_extra_bufts")}
        if not message.get("ready"):
            process.wait()
            reason = message.get("error") or f"the model process {exit_description(process.returncode)}"
            self._process = None
            raise ProviderUnavailable(f"cannot load the local model {self.path}: {reason}")
        self._ready = True
        return process

    def stream(self, tokens: list[int], *, max_tokens: int, temperature: float, json_schema: dict | None,
               repeat_penalty: float, cancelled: Callable[[], bool],
               on_cancel: Callable[[Callable[[], None]], None] | None = None,
               ) -> Generator[tuple[str, str | None, tuple[int, int] | None], None, None]:
        """("", None, (tokens read, prompt tokens)) as the prompt is read, (text piece, None, None) per piece, then
        ("", finish reason, None); `cancelled()` is checked between pieces.

        The child reads the prompt before its first piece and cannot be asked to stop meanwhile: a cancel then
        (registered through `on_cancel`) ends the process, so a deadline holds; the next request restarts it."""
        if not self._lock.acquire(timeout=BUSY_WAIT_SECONDS):
            raise ProviderUnavailable(f"the local model stayed busy with another reply for {BUSY_WAIT_SECONDS:.0f} s")
        parts: list[str] = []
        reading_prompt = threading.Event()
        try:
            process = self._ensure_running()

            def stop_reading_prompt() -> None:
                if reading_prompt.is_set():
                    process.kill()

            reading_prompt.set()
            if on_cancel is not None:
                on_cancel(stop_reading_prompt)
            request_id = next(self._ids)
            self._send(process, {"id": request_id, "tokens": tokens, "max_tokens": max_tokens,
                                 "temperature": temperature, "json_schema": json_schema,
                                 "repeat_penalty": repeat_penalty})
            finished = False
            try:
                for message in self._replies(process, request_id):
                    if "progress" in message:
                        yield "", None, tuple(message["progress"])
                        continue
                    reading_prompt.clear()
                    if message.get("done"):
                        finished = True
                        yield "", message.get("finish") or "stop", None
                        return
                    parts.append(message["text"])
                    yield message["text"], None, None
                    if cancelled():
                        break
            finally:
                if not finished and self._process is process:
                    # Cancelled, or the caller stopped reading: stop the child's reply and read up to its end, so
                    # the next request starts in step.
                    self._send(process, {"cancel": request_id})
                    for message in self._replies(process, request_id):
                        if message.get("done"):
                            break
        except (BrokenPipeError, _ProcessEnded):
            process.wait()
            self._process = None
            if cancelled():
                raise Cancelled(partial="".join(parts)) from None  # ended by stop_reading_prompt
            self.last_exit = exit_description(process.returncode)
            raise ModelProcessDied(
                f"the local model process stopped ({self.last_exit}); the partial reply was kept and the next "
                "request restarts it", partial="".join(parts)) from None
        finally:
            reading_prompt.clear()
            self._lock.release()

    @staticmethod
    def _replies(process: subprocess.Popen[bytes], request_id: int) -> Iterator[dict[str, Any]]:
        """The child's messages about one request; raises _ProcessEnded when its output ends."""
        stdout = _pipe(process.stdout)
        while True:
            line = stdout.readline()
            if not line:
                raise _ProcessEnded
            try:
                message = json.loads(line)
            except ValueError:
                raise _ProcessEnded from None  # a line cut by the child's death
            if message.get("id") != request_id:
                continue
            if message.get("error"):
                raise ProviderUnavailable(f"the local model failed: {message['error']}")
            yield message

    @staticmethod
    def _send(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
        _pipe(process.stdin).write((json.dumps(message) + "\n").encode("utf-8"))

    def close(self) -> None:
        """Stop the model process (closing its stdin ends it; a stuck one is killed)."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            _pipe(process.stdin).close()
        except OSError:
            pass
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ------------------------------------------------------------------------------------------- the child side

def _serve(path: str, n_ctx: int, extra_buffer_types: bool) -> None:
    # The protocol gets a private copy of stdout; anything llama.cpp prints goes to stderr instead.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")

    from .local import LoadedModel

    try:
        model = LoadedModel(Path(path), n_ctx, extra_buffer_types)
    except ProviderUnavailable as exc:
        send({"error": str(exc)})
        return
    requests: queue.Queue = queue.Queue()
    cancelled: set[int] = set()

    def read_stdin() -> None:
        for line in sys.stdin:
            message = json.loads(line)
            if "cancel" in message:
                cancelled.add(message["cancel"])
            else:
                requests.put(message)
        os._exit(0)  # the app closed the pipe (or died): nothing left to serve

    threading.Thread(target=read_stdin, daemon=True).start()
    send({"ready": True, "use_extra_bufts": model.extra_buffer_types})
    while True:
        request = requests.get()
        request_id = request["id"]
        finish: list[str] = []

        def on_event(event: dict[str, Any], request_id: int = request_id, finish: list[str] = finish) -> bool:
            """Passes an event of the reply on; True (stop) once the app cancelled it."""
            if request_id in cancelled:
                return True
            if "finish" in event:
                finish.append(event["finish"])
            else:
                send({"id": request_id, **event})
            return False

        try:
            model.generate(request["tokens"], max_tokens=request["max_tokens"], temperature=request["temperature"],
                           json_schema=request["json_schema"], repeat_penalty=request["repeat_penalty"],
                           on_event=on_event)
            send({"id": request_id, "done": True, "finish": finish[0] if finish else None,
                  "cancelled": request_id in cancelled})
        except Exception as exc:  # noqa: BLE001 - reported to the app, which raises it there
            send({"id": request_id, "error": f"{type(exc).__name__}: {exc}"})
        cancelled.discard(request_id)


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1")
