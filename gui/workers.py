"""Background work: jobs run on thread pools and report back to the GUI thread through queued signals.

The window never waits on a job. Each chat has a serial pool (one thread), so everything that touches that chat's
context engine runs in order and the engine is never used from two threads at once; independent work (model
loading, imports, shell commands) runs on the shared pool.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, QTimer, Signal

from ..core.providers.base import CancelToken
from .wording import is_refusal

log = logging.getLogger("precis.gui")


class Job(QObject):
    """A handle on one piece of background work. Its public signals are emitted on the GUI thread.

    The worker hands its outcome over through a queued connection made when the job is created, so the public
    signals fire from the event loop, after whoever submitted the job has connected to them: a job that finishes
    at once cannot be missed.
    """

    progress = Signal(object)
    succeeded = Signal(object)
    # The exception that ended the work: a handler tells a refusal from a fault by it (wording.failure_text).
    failed = Signal(object)
    # Emitted last, after succeeded or failed.
    finished = Signal()
    _outcome = Signal(bool, object)
    _progress = Signal(object)

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label
        self.cancel_token = CancelToken()
        self.done = False
        self._outcome.connect(self._deliver, Qt.ConnectionType.QueuedConnection)
        self._progress.connect(self.progress, Qt.ConnectionType.QueuedConnection)

    def cancel(self) -> None:
        self.cancel_token.cancel()

    @property
    def cancelled(self) -> bool:
        return self.cancel_token.cancelled

    def report(self, value: Any) -> None:
        """Called from the worker thread: forward a progress value to the GUI thread."""
        self._progress.emit(value)

    def _deliver(self, ok: bool, value: Any) -> None:
        self.done = True
        if ok:
            self.succeeded.emit(value)
        else:
            self.failed.emit(value)
        self.finished.emit()
        # Its connections hold their slots' closures, and those often hold the job (a cycle the garbage collector
        # cannot see through Qt): deleting the Qt side drops them, and with them the session or results they hold.
        self.deleteLater()


class _Runnable(QRunnable):
    def __init__(self, job: Job, fn: Callable[[Job], Any]) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self._job = job
        self._fn = fn

    def run(self) -> None:
        job = self._job
        try:
            result = self._fn(job)
        except Exception as exc:  # noqa: BLE001 - every failure is reported to the user, none is swallowed
            if is_refusal(exc):
                log.warning("%s failed: %s: %s", job.label, type(exc).__name__, exc)
            else:  # a fault: where it happened is what a report needs
                log.error("%s failed", job.label, exc_info=exc)
            # Its frames would keep what the work held (a closed chat's session) alive as long as a handler keeps it.
            exc.__traceback__ = None
            self._hand_over(False, exc)
        else:
            self._hand_over(True, result)
        finally:
            # The pool's Python side keeps its runnables for its own life (a chat's pool: as long as the chat was
            # open; the shared one: the window's). What the work held (a closed chat's session and engine, every
            # message of it) must not live on with them.
            self._fn = self._job = None

    def _hand_over(self, ok: bool, value: Any) -> None:
        try:
            self._job._outcome.emit(ok, value)
        except RuntimeError:
            # The window (and with it the job's Qt side) was closed while this ran: nobody is left to tell.
            log.info("%s finished after its window closed", self._job.label)


class Runner(QObject):
    """Starts jobs on a pool and keeps them alive until they finish."""

    def __init__(self, max_threads: int | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        if max_threads is not None:
            self.pool.setMaxThreadCount(max_threads)
        self._jobs: set[Job] = set()

    def submit(self, label: str, fn: Callable[[Job], Any]) -> Job:
        job = Job(label)
        self._jobs.add(job)
        job.finished.connect(lambda: self._jobs.discard(job))
        self.pool.start(_Runnable(job, fn))
        return job

    @property
    def busy(self) -> bool:
        return any(not job.done for job in self._jobs)

    def cancel_all(self) -> None:
        for job in list(self._jobs):
            job.cancel()

    def wait(self, msecs: int = -1) -> bool:
        """Block until every job has finished (used when closing: jobs were cancelled first)."""
        return self.pool.waitForDone(msecs)


class StreamBuffer:
    """Text deltas from a worker, collected cheaply and picked up by the GUI on a timer.

    Appending is O(1) per chunk; the GUI joins the pieces at most every FLUSH_MS, so the cost per chunk does not
    grow with the length of the reply.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pieces: list[str] = []
        self._text = ""
        self.version = 0
        # (tokens read, tokens in the prompt) while the model reads the prompt, before any text.
        self.progress: tuple[int, int] | None = None

    def append(self, text: str) -> None:
        with self._lock:
            self._pieces.append(text)
            self.version += 1

    def set_progress(self, read: int, total: int) -> None:
        with self._lock:
            self.progress = (read, total)
            self.version += 1

    def text(self) -> str:
        with self._lock:
            if self._pieces:
                self._text += "".join(self._pieces)
                self._pieces.clear()
            return self._text


FLUSH_MS = 50


class StreamPump(QObject):
    """Every FLUSH_MS, if the buffer grew, hand its whole text to `apply` (on the GUI thread); while no text has come,
    once a second as well (what is shown meanwhile says how long the wait has been)."""

    def __init__(self, buffer: StreamBuffer, apply: Callable[[str], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._buffer = buffer
        self._apply = apply
        self._seen = -1
        self._applied = 0.0
        self._timer = QTimer(self)
        self._timer.setInterval(FLUSH_MS)
        self._timer.timeout.connect(self.flush)
        self._timer.start()

    def flush(self) -> None:
        version = self._buffer.version
        waiting = not self._buffer.text()
        if version != self._seen or (waiting and time.monotonic() - self._applied >= 1.0):
            self._seen = version
            self._applied = time.monotonic()
            self._apply(self._buffer.text())

    def stop(self) -> None:
        self._timer.stop()
        self.flush()
