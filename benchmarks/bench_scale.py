"""Scaling benchmark: every path a user takes on a long chat, at 10k, 20k, 40k and 100k messages.

Each step goes through the real entry point: `precis import` (OpenAI chat JSON), opening the chat to its prompt (the
engine restored from the store and the prompt assembled, as the window and `precis chat --chat` do), `precis
context`, `precis compact` (rule summaries), `precis search` and `precis export`. Printed: seconds per step and size,
and the growth per doubling of the chat (the ratio of times, scaled to a factor of two in size).

Goals: opening a 100,000-message chat to its prompt under 2 s; every step at most 2.2x per doubling (linear).
Run: python benchmarks/bench_scale.py [SIZES...]   (the default sizes take a few minutes)
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import sys
import tempfile
import time
from collections.abc import Callable
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


def timed(step: Callable[[], object]) -> float:
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def open_to_prompt(data: str, chat_id: str) -> None:
    with open_store(data) as store:
        engine, _ = restore_engine(store, chat_id, default_window=WINDOW)
        engine.assemble()


def measure(count: int, folder: Path) -> dict[str, float]:
    source, transcript = chat_files(folder, count)
    data = str(folder / f"data-{count}")
    times: dict[str, float] = {}
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


def per_doubling(t_small: float, t_large: float, n_small: int, n_large: int) -> float:
    return (t_large / t_small) ** (math.log(2) / math.log(n_large / n_small))


def main_bench(sizes: tuple[int, ...]) -> None:
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for count in sizes:
            results[count] = measure(count, Path(tmp))
            print(f"{count:>7} messages: " + ", ".join(f"{s} {results[count][s]:.2f} s" for s in STEPS), flush=True)
    print()
    print(f"{'step':<15}" + "".join(f"{n:>10,}" for n in sizes) + "   growth per doubling")
    worst = 0.0
    for step in STEPS:
        ratios = [per_doubling(results[a][step], results[b][step], a, b) for a, b in itertools.pairwise(sizes)]
        worst = max([worst, *ratios])
        print(f"{step:<15}" + "".join(f"{results[n][step]:>9.2f}s" for n in sizes) + "   "
              + " ".join(f"{r:.2f}x" for r in ratios))
    largest = sizes[-1]
    opened = results[largest]["open to prompt"]
    print(f"\nopen {largest:,} messages to the prompt: {opened:.2f} s (goal < {OPEN_GOAL_S} s) "
          f"{'ok' if opened < OPEN_GOAL_S else 'MISSED'}")
    print(f"worst growth per doubling: {worst:.2f}x (goal <= {DOUBLING_GOAL}x) "
          f"{'ok' if worst <= DOUBLING_GOAL else 'MISSED'}")


if __name__ == "__main__":
    main_bench(tuple(int(a) for a in sys.argv[1:]) or SIZES)
