"""`precis compact` on one huge message (issue 12: a 20 MB message of one repeated letter took 26 s and 1.1 GB, and
the prompt was cut without a notice). Runs the real command in a child process per text and prints its wall and CPU
time, its peak memory and the notice it gave.

Run: python benchmarks/bench_huge_message.py [--megabytes 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def texts(size: int) -> dict[str, str]:
    words = "the parcel leaves the depot at noon and arrives by six "
    return {"one letter": "a" * size, "ordinary words": (words * (size // len(words) + 1))[:size]}


def run_compact(path: Path) -> tuple[float, float, int, str]:
    """(wall s, CPU s, peak RSS MB, the cut notice) of `precis compact PATH` in its own process."""
    script = ("import resource, subprocess, sys, time\n"
              "started = time.perf_counter()\n"
              "done = subprocess.run([sys.executable, '-m', 'precis.core.cli.main', 'compact', sys.argv[1]],"
              " capture_output=True, text=True)\n"
              "wall = time.perf_counter() - started\n"
              "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
              "print(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024, done.returncode)\n"
              "print(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else '')\n")
    probe = subprocess.run([sys.executable, "-c", script, str(path)], cwd=ROOT, capture_output=True, text=True,
                           check=True)
    first, notice = (probe.stdout.splitlines() + [""])[:2]
    wall, cpu, peak, code = first.split()
    assert code == "0", probe.stdout
    return float(wall), float(cpu), int(peak), notice


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=20)
    args = parser.parse_args()
    size = args.megabytes * 1_000_000
    print(f"precis compact on one {args.megabytes} MB user message (then a short reply); load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as folder:
        for name, text in texts(size).items():
            path = Path(folder) / "huge.jsonl"
            path.write_text(json.dumps({"role": "user", "content": text}) + "\n"
                            + json.dumps({"role": "assistant", "content": "ok"}) + "\n")
            wall, cpu, peak, notice = run_compact(path)
            print(f"  {name:<15} wall {wall:6.1f} s  CPU {cpu:6.1f} s  peak {peak:5d} MB")
            print(f"  {'':<15} notice: {notice or '(none)'}")


if __name__ == "__main__":
    main()
