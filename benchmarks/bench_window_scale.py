"""The window on a very long chat: what the user waits for, and the longest GUI-thread block, at 10,000 and 100,000
messages.

The chat is built as bench_scale.py builds it (short messages, OpenAI chat JSON) and imported with `precis import`
into a temporary data folder; the window (offscreen) then opens it and the user's actions run on it:
- open: from another chat, until its last rows show, until the inspector shows the whole chat, until idle (the
  first opening counts every message; later ones read the saved counts);
- switch away (to a short chat) and back;
- scroll to the top (QAbstractItemView.scrollToTop, until the first row shows) and back to the end;
- search all chats (typed in the search box) for a rare word and a common one, until the hits show;
- Summarize now, expand the summary's row (its toggle), select it in the inspector's chain, Undo last;
- send a message, answered by the embedded model (SmolLM2), until the reply is finished.
Automatic summaries are off, so all of the chat's messages are rows of the conversation (the view's worst case);
Summarize now writes with the rules (the model's summary would time how fast SmolLM2 writes, not the window).

How it is measured: the time on the clock from the action to what it waits for, and the longest block of the GUI
thread meanwhile: the largest gap between ticks of a 10 ms QTimer, less its 10 ms, over the action and the
SETTLE_MS after it (work the action left queued on the GUI thread counts too). Each action runs --repeat times
(Summarize now, Undo last and send as many times too, each summary undone before the next); printed per action:
the median time and the longest block over the runs, at each size, and the ratio of the 100k to the 10k figure.
Goal: no block over 100 ms; nothing grows faster than the chat (10x the messages, at most ~10x the time).
Run: QT_QPA_PLATFORM=offscreen python benchmarks/bench_window_scale.py [SIZES...] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import chat_files, run  # noqa: E402
from precis.core.model.messages import Message  # noqa: E402
from precis.core.settings import SUMMARIZATION_KEY  # noqa: E402
from precis.core.storage.store import open_store  # noqa: E402
from PySide6.QtCore import QEventLoop, QTimer  # noqa: E402

SIZES = (10_000, 100_000)
TICK_MS = 10
SETTLE_MS = 300
BLOCK_GOAL_MS = 100
TIMEOUT_S = 900.0
COMMON_WORD = "parcel"  # in every message


class Heartbeat:
    """A TICK_MS QTimer on the GUI thread: the largest gap between its ticks, less TICK_MS, is the longest block."""

    def __init__(self) -> None:
        self.timer = QTimer()
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self.last = 0.0
        self.largest = 0.0

    def _tick(self) -> None:
        now = time.perf_counter()
        self.largest = max(self.largest, now - self.last)
        self.last = now

    def run(self, act: Callable[[], object], *done: Callable[[], bool]) -> tuple[list[float], float]:
        """`act()`, then the event loop until each of `done` holds in turn, then SETTLE_MS more: (seconds from the
        act to each, the longest block in ms)."""
        self.last, self.largest = time.perf_counter(), 0.0
        self.timer.start()
        started = time.perf_counter()
        act()
        times = []
        for condition in done:
            wait_until(condition)
            times.append(time.perf_counter() - started)
        wait_until(lambda: False, SETTLE_MS / 1000)
        self._tick()
        self.timer.stop()
        return times, max(0.0, self.largest * 1000 - TICK_MS)


def wait_until(condition: Callable[[], bool], timeout_s: float = TIMEOUT_S) -> None:
    """Run the event loop until `condition()` (checked every millisecond) or the timeout."""
    if condition():
        return
    loop = QEventLoop()
    poll = QTimer()
    poll.setInterval(1)
    poll.timeout.connect(lambda: condition() and loop.quit())
    poll.start()
    deadline = QTimer()
    deadline.setSingleShot(True)
    deadline.timeout.connect(loop.quit)
    deadline.start(int(timeout_s * 1000))
    loop.exec()
    poll.stop()
    deadline.stop()
    if timeout_s == TIMEOUT_S and not condition():
        raise SystemExit(f"gave up waiting after {TIMEOUT_S:.0f} s")


def measure(count: int, folder: Path, repeat: int) -> dict[str, list[tuple[float, float]]]:
    """(seconds, longest block in ms) of each run of each action on a chat of `count` messages."""
    from precis.gui.app import application
    from precis.gui.main_window import MainWindow

    source, _ = chat_files(folder, count)
    data = folder / f"data-{count}"
    chat_id = run("--data-dir", str(data), "import", str(source)).strip()
    app = application()
    store = open_store(data)
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "enabled": False})
    short = store.create_chat("short")
    store.add_messages(short, [Message(role="user", content="Where is bay 3?"),
                               Message(role="assistant", content="Next to bay 4.")])
    window = MainWindow(store)
    window.resize(1400, 900)
    window.show()
    chat, view, rows = window.chat, window.conversation, window.conversation.rows_model
    last_of = {c: store.load_last_messages(c, 1)[0].id for c in (chat_id, short)}
    heartbeat = Heartbeat()
    results: dict[str, list[tuple[float, float]]] = {}

    def idle() -> bool:
        return chat.snapshot is not None and not chat.busy and not chat.store_calls.busy

    def record(name: str, seconds: float, block: float) -> None:
        results.setdefault(name, []).append((seconds, block))

    def open_chat(chat_to: str) -> tuple[list[float], float]:
        """Open a chat: (until its last row is in the view, until the inspector shows the whole chat, until idle)."""
        return heartbeat.run(lambda: window.open_chat(chat_to),
                             lambda: chat.is_open(chat_to) and rows.row_of(last_of[chat_to]) is not None,
                             lambda: chat.is_open(chat_to) and chat.snapshot is not None and not chat.snapshot.partial,
                             idle)

    wait_until(lambda: chat.model.state == "ready", 300)  # the model loaded first: its loading is not measured
    wait_until(idle)
    for number in range(repeat):
        window.open_chat(short)
        wait_until(idle)
        (shown, inspected, done), block = open_chat(chat_id)
        name = "open, first" if number == 0 else "open again"
        record(name + ": last rows shown", shown, block)
        record(name + ": inspector shown", inspected, block)
        record(name + ": all counted, idle", done, block)
    for _ in range(repeat):
        (_, _, away), block = open_chat(short)
        record("switch to a short chat", away, block)
        (_, inspected, back), block = open_chat(chat_id)
        record("switch back: inspector shown", inspected, block)

    bar = view.verticalScrollBar()
    top = rows.index(0)
    for _ in range(repeat):
        (seconds,), block = heartbeat.run(view.scrollToTop, lambda: bar.value() == bar.minimum()
                                          and view.visualRect(top).intersects(view.viewport().rect()))
        record("scroll to the top", seconds, block)
        (seconds,), block = heartbeat.run(view.scroll_to_end, lambda: view.visualRect(
            rows.index(rows.rowCount() - 1)).intersects(view.viewport().rect()) and view.is_at_bottom())
        record("scroll to the end", seconds, block)

    hits: list[object] = []
    show_hits = window.chat_list.show_hits

    def shown_hits(found) -> None:
        hits.append(found)
        show_hits(found)

    window.chat_list.show_hits = shown_hits
    for word, name in ((str(count - 3), "search a rare word"), (COMMON_WORD, "search a common word")):
        for _ in range(repeat):
            hits.clear()
            (seconds,), block = heartbeat.run(lambda word=word: window.chat_list.search.setText(word),
                                              lambda: any(h is not None for h in hits))
            record(name, seconds, block)
            window.chat_list.clear_search()
            wait_until(idle)

    def summary_round() -> None:
        """Summarize now, expand the summary's row, select it in the inspector's chain, undo it."""
        before = len(chat.snapshot.chain)
        (seconds,), block = heartbeat.run(window.summarize_now, lambda: idle() and len(chat.snapshot.chain) > before)
        record("Summarize now", seconds, block)
        summary = next(n for n, row in enumerate(rows.rows()) if row.record is not None)
        view.scrollTo(rows.index(summary))
        wait_until(lambda: False, 0.2)
        height = view.visualRect(rows.index(summary)).height()
        (seconds,), block = heartbeat.run(lambda: view.delegate.toggled.emit(summary),
                                          lambda: view.visualRect(rows.index(summary)).height() != height)
        record("expand a summary", seconds, block)
        record_id = rows.row_at(summary).record.id
        archive = window.inspector.archived_view.rows_model
        (seconds,), block = heartbeat.run(lambda: window.select_summary(record_id),
                                          lambda: archive.rowCount() > 0)
        record("select it in the inspector", seconds, block)
        (seconds,), block = heartbeat.run(window.inspector.undo_requested.emit,
                                          lambda: idle() and len(chat.snapshot.chain) == before)
        record("Undo last", seconds, block)

    for _ in range(repeat):
        summary_round()

    replies: list[object] = []
    window.reply_finished.connect(replies.append)
    for number in range(repeat):
        replies.clear()
        (seconds,), block = heartbeat.run(
            lambda number=number: window.submit(f"Which bay does parcel {number} leave from? One word."),
            lambda: bool(replies) and idle())
        record("send: reply finished (model)", seconds, block)

    window.close()
    chat.finish_background_work()
    store.close()
    app.processEvents()
    return results


def main_bench(sizes: tuple[int, ...], repeat: int) -> None:
    print(f"load average at the start: {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs; "
          f"{repeat} runs per action; the time is the median, the block the longest over the runs")
    measured = {}
    with tempfile.TemporaryDirectory() as tmp:
        for count in sizes:
            started = time.perf_counter()
            measured[count] = measure(count, Path(tmp), repeat)
            print(f"{count:,} messages measured in {time.perf_counter() - started:.0f} s", flush=True)
    actions = list(measured[sizes[0]])
    print(f"\n{'action':<36}" + "".join(f"{f'{n:,}: time':>14}{'block':>9}" for n in sizes)
          + ("   time x   block x" if len(sizes) > 1 else ""))
    worst = 0.0
    for action in actions:
        line = f"{action:<36}"
        figures = []
        for count in sizes:
            runs = measured[count][action]
            seconds = statistics.median(s for s, _ in runs)
            block = max(b for _, b in runs)
            worst = max(worst, block)
            figures.append((seconds, block))
            line += f"{seconds * 1000:>12.0f}ms{block:>7.0f}ms"
        if len(sizes) > 1:
            (t_small, b_small), (t_large, b_large) = figures[0], figures[-1]
            line += f"   {t_large / t_small:>6.1f}x {b_large / max(b_small, 1.0):>7.1f}x"
        print(line)
    print(f"\nlongest GUI-thread block: {worst:.0f} ms (goal < {BLOCK_GOAL_MS} ms) "
          f"{'ok' if worst < BLOCK_GOAL_MS else 'MISSED'}")
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=list(SIZES), help="chat lengths in messages")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each action at each size")
    args = parser.parse_args()
    main_bench(tuple(sorted(args.sizes)), args.repeat)
