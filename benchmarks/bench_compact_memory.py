"""`precis compact`'s peak memory as the chat grows: each size in a process of its own (its own high-water mark, not
this one's), at 10,000 and 100,000 messages by default.

Issue 22: compact peaked at 2.15 GB at 100,000 messages (204 MB at 10,000). Goal: its memory grows no faster than
the chat: the peak above the bare process (Python with Precis imported, compacting nothing) at most 2x per doubling
of the chat (linear), between every pair of sizes measured.

Printed per size: the peak resident set, the same above the bare process, that per 1,000 messages, and the time.
The baseline a user would compare with is the transcript itself: its size on disk is printed beside.
Run: python benchmarks/bench_compact_memory.py [SIZES...]
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_scale import chat_files

SIZES = (10_000, 100_000)
DOUBLING_GOAL = 2.0  # memory above the bare process, per doubling of the chat: linear


def peak_mb(argv: list[str]) -> tuple[float, float]:
    """(peak resident MB, seconds) of a child process running argv, from its own resource usage."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {process.stderr.read().decode()[-2000:]}")
    return usage.ru_maxrss / 1024, seconds


def main(sizes: tuple[int, ...]) -> None:
    python = sys.executable
    bare, _ = peak_mb([python, "-c", "import precis.core.cli.main, precis.core.cli.compact"])
    print(f"bare process (Python with Precis imported): {bare:.0f} MB")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for count in sizes:
            _openai, transcript = chat_files(Path(folder), count)
            peak, seconds = peak_mb([python, "-m", "precis.core.cli.main", "compact", str(transcript), "--mode", "rule",
                                     "--json"])
            above = peak - bare
            rows.append((count, above))
            print(f"{count:>8,} messages ({transcript.stat().st_size / 2**20:5.1f} MB on disk): peak {peak:6.0f} MB, "
                  f"{above:6.0f} MB above the bare process, {above / count * 1000:5.2f} MB per 1,000 messages, "
                  f"{seconds:6.1f} s")
    for (small, low), (large, high) in zip(rows, rows[1:], strict=False):
        doubling = (high / low) ** (math.log(2) / math.log(large / small)) if low > 0 else float("inf")
        verdict = "met" if doubling <= DOUBLING_GOAL else "NOT met"
        print(f"{small:,} → {large:,}: memory above the bare process x{high / max(low, 1e-9):.1f} for x{large / small:.0f} "
              f"the messages, {doubling:.2f} per doubling (goal ≤ {DOUBLING_GOAL}: {verdict})")


if __name__ == "__main__":
    main(tuple(int(arg) for arg in sys.argv[1:]) or SIZES)
