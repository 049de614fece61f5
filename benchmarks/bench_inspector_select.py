"""Selecting a summary of nearly a whole long chat in the inspector, again and again: what blocks the window.

bench_window_scale.py selects once per run, and its block varies with the machine's load; this selects one summary
--repeat times (deselecting between) and prints, per select, the time until its Archived rows are shown, the longest
GUI-thread block (the heartbeat of bench_window_scale), the garbage collections that ran meanwhile (a collection holds
the interpreter lock, so the window waits whichever thread runs it) and the window thread's CPU. Then the window's
own work of a select, timed on its thread with no worker running: showing the record (its text), showing its
archive (rows and "Before"), and the events that follow (layout, paint).
The chat is built as bench_scale.py builds it, imported into a temporary data folder, summarized by the rules.
Run: QT_QPA_PLATFORM=offscreen python benchmarks/bench_inspector_select.py [MESSAGES] [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import chat_files, run  # noqa: E402
from bench_window_scale import Heartbeat, wait_until  # noqa: E402
from precis.core.settings import SUMMARIZATION_KEY  # noqa: E402
from precis.core.storage.store import open_store  # noqa: E402


class Collections:
    """The garbage collections that run while it is on: (generation, ms) each."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, float]] = []
        self._started = 0.0
        gc.callbacks.append(self._seen)

    def _seen(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.runs.append((info["generation"], (time.perf_counter() - self._started) * 1000))


def measure(count: int, folder: Path, repeat: int) -> None:
    from precis.gui.app import application
    from precis.gui.main_window import MainWindow
    from PySide6.QtWidgets import QApplication

    source, _ = chat_files(folder, count)
    data = folder / "data"
    chat_id = run("--data-dir", str(data), "import", str(source)).strip()
    app = application()
    store = open_store(data)
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "enabled": False})
    window = MainWindow(store, load_model=False)
    window.resize(1400, 900)
    window.show()
    chat, inspector = window.chat, window.inspector
    archive = inspector.archived_view.rows_model

    def idle() -> bool:
        return chat.snapshot is not None and not chat.busy and not chat.store_calls.busy

    window.open_chat(chat_id)
    wait_until(lambda: idle() and chat.is_open(chat_id) and not chat.snapshot.partial)
    window.summarize_now()
    wait_until(lambda: idle() and bool(chat.snapshot.chain))
    record = chat.snapshot.chain[-1]
    print(f"a summary of {chat.snapshot.archived_counts[record.id]:,} messages, selected {repeat} times")
    heartbeat, collections, blocks = Heartbeat(), Collections(), []
    for _ in range(repeat):
        inspector.chain.clearSelection()
        wait_until(lambda: archive.rowCount() == 0 and idle())
        wait_until(lambda: False, 0.5)
        collections.runs.clear()
        cpu = time.thread_time()
        (seconds,), block = heartbeat.run(lambda: window.select_summary(record.id), lambda: archive.rowCount() > 0)
        cpu = time.thread_time() - cpu
        blocks.append(block)
        longest = max((ms for _, ms in collections.runs), default=0.0)
        print(f"  select: {seconds * 1000:5.0f} ms, block {block:4.0f} ms, {len(collections.runs):3} collections "
              f"(longest {longest:3.0f} ms, generation {max((g for g, _ in collections.runs), default=0)}), "
              f"window thread CPU {cpu * 1000:3.0f} ms")
    print(f"block: median {statistics.median(blocks):.0f} ms, longest {max(blocks):.0f} ms")

    made = chat.snapshot.archived_rows(record.id)
    parts: dict[str, list[float]] = {"show the record": [], "show its archive": [], "the events after": []}
    for _ in range(repeat):
        inspector.details.show_record(None)
        wait_until(lambda: False, 0.2)
        for name, step in (("show the record", lambda: inspector.details.show_record(record)),
                           ("show its archive", lambda: inspector.details.show_archive(made)),
                           ("the events after", QApplication.processEvents)):
            started = time.perf_counter()
            step()
            parts[name].append((time.perf_counter() - started) * 1000)
    print("the window's own work: " + ", ".join(
        f"{name} {statistics.median(times):.1f} ms" for name, times in parts.items()) + " (medians)")
    window.close()
    chat.finish_background_work()
    store.close()
    app.processEvents()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("messages", nargs="?", type=int, default=100_000, help="the chat's length")
    parser.add_argument("--repeat", type=int, default=7, help="selects")
    args = parser.parse_args()
    print(f"load average at the start: {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        measure(args.messages, Path(tmp), args.repeat)
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
