"""Scaling benchmark: every path a user takes on a long chat, at 10k, 20k, 40k and 100k messages.

Each step goes through the real entry point: `precis import` (OpenAI chat JSON), opening the chat to its prompt (the
engine restored from the store and the prompt assembled, as the window and `precis chat --chat` do), `precis
context`, `precis compact` (rule summaries), `precis search` and `precis export`, each run in this process. Printed:
the median of --repeat runs per step and size, on the clock and in CPU seconds of this process (the CPU time does not
grow with the load of a shared machine), the growth from the smallest size, and per doubling of the chat (the ratio
of times, scaled to a factor of two in size).

Goals: opening a 100,000-message chat to its prompt under 2 s; every step at most 2.2x per doubling (linear).
Run: python benchmarks/bench_scale.py [SIZES...] [--repeat N]   (the default sizes take several minutes)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import math
import os
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


def timed(step: Callable[[], object]) -> Timing:
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    return Timing(time.perf_counter() - wall, time.process_time() - cpu)


def open_to_prompt(data: str, chat_id: str) -> None:
    with open_store(data) as store:
        engine, _ = restore_engine(store, chat_id, default_window=WINDOW)
        engine.assemble()


def measure(count: int, folder: Path) -> dict[str, Timing]:
    """One run of every step on a fresh data folder."""
    source, transcript = chat_files(folder, count)
    data = str(folder / f"data-{count}")
    shutil.rmtree(data, ignore_errors=True)
    times: dict[str, Timing] = {}
    chat_id = ""

    def do_import() -> None:
        nonlocal chat_id
        chat_id = run("--data-dir", data, "import", str(source)).strip()

    times["import"] = timed(do_import)
    # `context` first: it saves the token counts a reopened chat then reuses, as the window does after a first paint.
    times["context"] = timed(lambda: run("--data-dir", data, "context", chat_id))
    times["open to prompt"] = timed(lambda: open_to_prompt(data, chat_id))
    times["compact"] = timed(lambda: run("compact", str(transcript), "--mode", "rule", "--json"))
    times["search"] = timed(lambda: run("--data-dir", data, "search", "parcel bay 42"))
    times["export"] = timed(lambda: run("--data-dir", data, "export", chat_id, "--format", "jsonl",
                                        "-o", str(folder / f"export-{count}.jsonl")))
    return times


def median_timing(runs: list[dict[str, Timing]], step: str) -> Timing:
    return Timing(statistics.median(r[step].wall for r in runs), statistics.median(r[step].cpu for r in runs))


def per_doubling(t_small: float, t_large: float, n_small: int, n_large: int) -> float:
    return (t_large / t_small) ** (math.log(2) / math.log(n_large / n_small))


def print_table(results: dict[int, dict[str, Timing]], sizes: tuple[int, ...], kind: str) -> float:
    """Medians of one kind of time per step and size, the growth from the smallest size and per doubling;
    returns the worst growth per doubling."""
    smallest = sizes[0]
    print(f"\n{kind + ' s (median)':<15}" + "".join(f"{n:>10,}" for n in sizes)
          + "   x from " + f"{smallest:,}: " + " ".join(f"{n / smallest:g}x" for n in sizes[1:])
          + "   per doubling")
    worst = 0.0
    for step in STEPS:
        value = {n: getattr(results[n][step], kind) for n in sizes}
        growth = [value[n] / value[smallest] for n in sizes[1:]]
        doubling = [per_doubling(value[a], value[b], a, b) for a, b in itertools.pairwise(sizes)]
        worst = max([worst, *doubling])
        print(f"{step:<15}" + "".join(f"{value[n]:>9.2f}s" for n in sizes) + "   "
              + " ".join(f"{g:.2f}x" for g in growth) + "   " + " ".join(f"{d:.2f}x" for d in doubling))
    return worst


def main_bench(sizes: tuple[int, ...], repeat: int) -> None:
    print(f"load average at the start: {' '.join(f'{v:.2f}' for v in os.getloadavg())} "
          f"on {os.cpu_count()} CPUs; {repeat} runs per size")
    results: dict[int, dict[str, Timing]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for count in sizes:
            runs = [measure(count, Path(tmp)) for _ in range(repeat)]
            results[count] = {step: median_timing(runs, step) for step in STEPS}
            print(f"{count:>7} messages: " + ", ".join(
                f"{s} {results[count][s].wall:.2f} s ({results[count][s].cpu:.2f} CPU)" for s in STEPS), flush=True)
    worst = print_table(results, sizes, "wall")
    worst_cpu = print_table(results, sizes, "cpu")
    print(f"\nload average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    largest = sizes[-1]
    opened = results[largest]["open to prompt"]
    print(f"open {largest:,} messages to the prompt: {opened.wall:.2f} s, {opened.cpu:.2f} s CPU "
          f"(goal < {OPEN_GOAL_S} s) {'ok' if opened.wall < OPEN_GOAL_S else 'MISSED'}")
    print(f"worst growth per doubling: {worst:.2f}x wall, {worst_cpu:.2f}x CPU (goal <= {DOUBLING_GOAL}x) "
          f"{'ok' if worst_cpu <= DOUBLING_GOAL else 'MISSED'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=list(SIZES), help="chat lengths in messages")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size (the median is printed)")
    args = parser.parse_args()
    main_bench(tuple(args.sizes), args.repeat)
