"""Scaling benchmark: every path a user takes on a long chat, at 10k, 20k, 40k and 100k messages.

Each step goes through the real entry point: `precis import` (OpenAI chat JSON), opening the chat to its prompt (the
engine restored from the store and the prompt assembled, as the window and `precis chat --chat` do), `precis
context`, `precis compact` (rule summaries), `precis search` and `precis export`, each run in this process. Printed:
the median of --repeat runs per step and size, on the clock and in CPU seconds of this process (the CPU time does not
grow with the load of a shared machine), the growth from the smallest size, and per doubling of the chat (the ratio
of times, scaled to a factor of two in size).

Goals: opening a 100,000-message chat to its prompt under 2 s; every step at most 2.2x per doubling (linear).
Also printed: the peak resident memory of this process after each step (its high-water mark so far).
Run: python benchmarks/bench_scale.py [SIZES...] [--repeat N] [--steps import,search,...]
(the default sizes and every step take several minutes; import always runs, as the other steps need the chat)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import math
import os
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from precis.core.cli.main import main
from precis.core.storage.chats import restore_engine
from precis.core.storage.store import open_store

SIZES = (10_000, 20_000, 40_000, 100_000)
OPEN_GOAL_S = 2.0
DOUBLING_GOAL = 2.2
WINDOW = 8192
STEPS = ("import", "open to prompt", "context", "compact", "search", "export")


def chat_files(folder: Path, count: int) -> tuple[Path, Path]:
    """`count` short messages as OpenAI chat JSON (one message a line, as exported chats are; what `import` reads
    here) and as interchange JSONL (what `compact` replays)."""
    lines = [json.dumps({"role": "user" if i % 2 == 0 else "assistant",
                         "content": f"note {i}: the parcel for bay {i % 97} leaves at {i % 24}:00"})
             for i in range(count)]
    openai, jsonl = folder / f"chat-{count}.json", folder / f"chat-{count}.jsonl"
    openai.write_text('{"messages": [\n' + ",\n".join(lines) + "\n]}\n")
    jsonl.write_text("\n".join(lines) + "\n")
    return openai, jsonl


def run(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    if code:
        raise SystemExit(f"precis {' '.join(argv)} exited {code}")
    return out.getvalue()


@dataclass(frozen=True)
class Timing:
    wall: float  # seconds on the clock
    cpu: float  # seconds of this process's CPU: what the step costs, whatever else the machine is doing
    peak_mb: float = 0.0  # this process's peak resident memory after the step (a high-water mark: never falls)


def peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux, bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if os.uname().sysname == "Darwin" else 2**10)


def timed(step: Callable[[], object]) -> Timing:
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    return Timing(time.perf_counter() - wall, time.process_time() - cpu, peak_rss_mb())


def open_to_prompt(data: str, chat_id: str) -> None:
    with open_store(data) as store:
        engine, _ = restore_engine(store, chat_id, default_window=WINDOW)
        engine.assemble()


def measure(count: int, folder: Path, steps: tuple[str, ...]) -> dict[str, Timing]:
    """One run of the chosen steps (and the import they need) on a fresh data folder."""
    source, transcript = chat_files(folder, count)
    data = str(folder / f"data-{count}")
    shutil.rmtree(data, ignore_errors=True)
    times: dict[str, Timing] = {}
    chat_id = ""

    def do_import() -> None:
        nonlocal chat_id
        chat_id = run("--data-dir", data, "import", str(source)).strip()

    # `context` before opening: it saves the token counts a reopened chat then reuses, as the window does after a
    # first paint.
    actions: dict[str, Callable[[], object]] = {
        "import": do_import,
        "context": lambda: run("--data-dir", data, "context", chat_id),
        "open to prompt": lambda: open_to_prompt(data, chat_id),
        "compact": lambda: run("compact", str(transcript), "--mode", "rule", "--json"),
        "search": lambda: run("--data-dir", data, "search", "parcel bay 42"),
        "export": lambda: run("--data-dir", data, "export", chat_id, "--format", "jsonl",
                              "-o", str(folder / f"export-{count}.jsonl")),
    }
    for step, action in actions.items():
        if step == "import" or step in steps:
            times[step] = timed(action)
    return times


def median_timing(runs: list[dict[str, Timing]], step: str) -> Timing:
    return Timing(statistics.median(r[step].wall for r in runs), statistics.median(r[step].cpu for r in runs))


def per_doubling(t_small: float, t_large: float, n_small: int, n_large: int) -> float:
    return (t_large / t_small) ** (math.log(2) / math.log(n_large / n_small))


def print_table(results: dict[int, dict[str, Timing]], sizes: tuple[int, ...], steps: tuple[str, ...],
                kind: str) -> float:
    """Medians of one kind of time per step and size, the growth from the smallest size and per doubling;
    returns the worst growth per doubling."""
    smallest = sizes[0]
    print(f"\n{kind + ' s (median)':<15}" + "".join(f"{n:>10,}" for n in sizes)
          + "   x from " + f"{smallest:,}: " + " ".join(f"{n / smallest:g}x" for n in sizes[1:])
          + "   per doubling")
    worst = 0.0
    for step in steps:
        value = {n: getattr(results[n][step], kind) for n in sizes}
        growth = [value[n] / value[smallest] for n in sizes[1:]]
        doubling = [per_doubling(value[a], value[b], a, b) for a, b in itertools.pairwise(sizes)]
        worst = max([worst, *doubling])
        print(f"{step:<15}" + "".join(f"{value[n]:>9.2f}s" for n in sizes) + "   "
              + " ".join(f"{g:.2f}x" for g in growth) + "   " + " ".join(f"{d:.2f}x" for d in doubling))
    return worst


def main_bench(sizes: tuple[int, ...], repeat: int, steps: tuple[str, ...]) -> None:
    print(f"load average at the start: {' '.join(f'{v:.2f}' for v in os.getloadavg())} "
          f"on {os.cpu_count()} CPUs; {repeat} runs per size")
    runs: dict[int, list[dict[str, Timing]]] = {count: [] for count in sizes}
    with tempfile.TemporaryDirectory() as tmp:
        # Round after round of every size, so a burst of load on a shared machine falls on all sizes alike rather
        # than on the repeats of one.
        for _ in range(repeat):
            for count in sizes:
                runs[count].append(measure(count, Path(tmp), steps))
    results = {count: {step: median_timing(runs[count], step) for step in steps} for count in sizes}
    for count in sizes:
        # The peak from the first round: the sizes grow within it, and the high-water mark never falls.
        print(f"{count:>7} messages: " + ", ".join(
            f"{s} {results[count][s].wall:.2f} s ({results[count][s].cpu:.2f} CPU, peak {runs[count][0][s].peak_mb:.0f} MB)"
            for s in steps))
    worst = print_table(results, sizes, steps, "wall")
    worst_cpu = print_table(results, sizes, steps, "cpu")
    print(f"\nload average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    largest = sizes[-1]
    if "open to prompt" in steps:
        opened = results[largest]["open to prompt"]
        print(f"open {largest:,} messages to the prompt: {opened.wall:.2f} s, {opened.cpu:.2f} s CPU "
              f"(goal < {OPEN_GOAL_S} s) {'ok' if opened.wall < OPEN_GOAL_S else 'MISSED'}")
    print(f"worst growth per doubling: {worst:.2f}x wall, {worst_cpu:.2f}x CPU (goal <= {DOUBLING_GOAL}x) "
          f"{'ok' if worst_cpu <= DOUBLING_GOAL else 'MISSED'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=list(SIZES), help="chat lengths in messages")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size (the median is printed)")
    parser.add_argument("--steps", default=",".join(STEPS),
                        help=f"comma-separated steps to measure, of: {', '.join(STEPS)} (default: all)")
    args = parser.parse_args()
    chosen = tuple(s.strip() for s in args.steps.split(","))
    if unknown := [s for s in chosen if s not in STEPS]:
        parser.error(f"unknown step(s) {', '.join(unknown)}; choose from {', '.join(STEPS)}")
    main_bench(tuple(args.sizes), args.repeat, tuple(s for s in STEPS if s in chosen))
