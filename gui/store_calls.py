"""Store calls the window makes (the chat list, search, settings), run off the GUI thread.

A write waits for SQLite's lock (up to the busy timeout) while another connection writes: a summary being saved,
a `precis` command. On the GUI thread that wait froze the window; here only the answer is late. Writes run on one
thread, in the order they were made (two saves of one setting land in that order); reads on another, so a search
is never queued behind a write waiting for the lock (WAL readers do not wait for writers). For a question asked
again before its answer arrived (a search while typing) only the newest answer is delivered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from ..core.storage.store import Store
from .workers import Job, Runner


class StoreCalls(QObject):
    failed = Signal(object, str)  # a call without its own failure handler failed: (the exception, what it did)
    write_ended = Signal()  # a write succeeded or failed (what was said about its wait for the lock can go)

    def __init__(self, store: Store, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.reads = Runner(max_threads=1, parent=self)
        self.writes = Runner(max_threads=1, parent=self)
        self._newest: dict[str, Job] = {}

    def write(self, label: str, fn: Callable[[Store], Any], done: Callable[[Any], Any] | None = None,
              failed: Callable[[BaseException], Any] | None = None) -> Job:
        """Run the write `fn(store)` after the writes before it; `done(result)` or `failed(error)` (default: the
        `failed` signal) are called on the GUI thread."""
        store = self.store
        job = self.writes.submit(label, lambda _job: fn(store))
        if done is not None:
            job.succeeded.connect(done)
        job.failed.connect(failed if failed is not None else lambda error: self.failed.emit(error, label))
        job.finished.connect(self.write_ended)
        return job

    def newest(self, topic: str, fn: Callable[[Store], Any], done: Callable[[Any], Any]) -> Job:
        """Run the read `fn(store)`; of the reads on one topic only the newest one's answer is delivered (an older
        one not started yet when a newer one is made is skipped, and its answer dropped)."""
        self.forget(topic)

        def deliver(result: Any) -> None:
            if self._newest.get(topic) is job:
                del self._newest[topic]
                done(result)

        def start(job_: Job) -> Any:
            return None if job_.cancelled else fn(self.store)

        job = self.reads.submit(topic, start)
        self._newest[topic] = job
        job.succeeded.connect(deliver)
        job.failed.connect(lambda error: self.failed.emit(error, topic))
        return job

    def forget(self, topic: str) -> None:
        """Drop the answer of the read on this topic still under way, if any."""
        previous = self._newest.pop(topic, None)
        if previous is not None:
            previous.cancel()

    def set_setting(self, key: str, value: Any) -> Job:
        return self.write("save the setting", lambda store: store.set_setting(key, value))

    @property
    def busy(self) -> bool:
        return self.reads.busy or self.writes.busy

    def wait(self, msecs: int) -> bool:
        return self.reads.wait(msecs) and self.writes.wait(msecs)
