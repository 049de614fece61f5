"""Storage benchmarks: importing the Claude Code sample, opening a 10,000-message chat, searching 100,000 messages.

Run: python benchmarks/bench_store.py   (prints medians against the goals; each part takes well under a minute)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precis.core.context.engine import Budget, ContextEngine  # noqa: E402
from precis.core.model.messages import new_id  # noqa: E402
from precis.core.settings import SummarizationPolicy  # noqa: E402
from precis.core.storage.importers import import_file  # noqa: E402
from precis.core.storage.interchange import read_transcript  # noqa: E402
from precis.core.storage.store import attach_engine, open_store  # noqa: E402

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "tests" / "data" / "transcripts"
RAW = TRANSCRIPTS / "claudecode_session.raw.jsonl"
OPEN_GOAL_S = 0.5
SEARCH_GOAL_MS = 50.0


def sample_messages(count: int):
    """`count` real messages: the shared transcripts repeated, each copy with fresh ids."""
    pool = [m for p in sorted(TRANSCRIPTS.glob("*.jsonl")) if not p.name.endswith(".raw.jsonl")
            for m in read_transcript(p)]
    out, calls = [], {}
    while len(out) < count:
        for m in pool[: count - len(out)]:
            tool_calls = tuple(c.__class__(id=calls.setdefault(c.id, new_id()), name=c.name, arguments=c.arguments)
                               for c in m.tool_calls)
            out.append(m.with_changes(id=new_id(), tool_calls=tool_calls,
                                      tool_call_id=calls.get(m.tool_call_id) if m.tool_call_id else None))
        calls = {}
    return out


def bench_import() -> None:
    times = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as folder, open_store(folder) as store:
            started = time.perf_counter()
            import_file(store, RAW)
            times.append(time.perf_counter() - started)
    size = RAW.stat().st_size / 1e6
    print(f"import {RAW.name} ({size:.1f} MB): median {statistics.median(times):.3f} s "
          f"({size / statistics.median(times):.1f} MB/s)")


def bench_open_chat() -> None:
    budget = Budget(window=8192, reserve_output=512)
    policy = SummarizationPolicy()
    with tempfile.TemporaryDirectory() as folder:
        with open_store(folder) as store:
            # A long chat summarized three times along the way, every summary persisted as it happened.
            messages = sample_messages(10_000)
            chat = store.import_chat("big", messages)
            engine = ContextEngine(budget, policy)
            attach_engine(store, chat, engine)
            for start in range(0, 10_000, 3_334):
                for message in messages[start:start + 3_334]:
                    engine.append(message, auto=False)
                engine.summarize_now()
        times, stages = [], []
        for _ in range(5):
            started = time.perf_counter()
            with open_store(folder) as store:
                messages = store.load_messages(chat)
                loaded = time.perf_counter()
                records = store.load_records(chat)
            engine = ContextEngine.restore(messages, records, budget, policy)
            restored = time.perf_counter()
            prompt = engine.assemble()
            done = time.perf_counter()
            times.append(done - started)
            stages.append((loaded - started, restored - loaded, done - restored))
        median = statistics.median(times)
        load, restore, assemble = (statistics.median(s[i] for s in stages) for i in range(3))
        print(f"open 10,000-message chat to assembled prompt ({len(records)} summaries, {len(prompt.items)} items, "
              f"{prompt.tokens} tokens): median {median:.3f} s (goal < {OPEN_GOAL_S} s, "
              f"{median / OPEN_GOAL_S:.0%} of it; load {load:.3f}, restore {restore:.3f}, assemble {assemble:.3f})")


def bench_search() -> None:
    with tempfile.TemporaryDirectory() as folder, open_store(folder) as store:
        pool = sample_messages(10_000)
        started = time.perf_counter()
        for n in range(10):
            store.import_chat(f"chat {n}", [m.with_changes(id=new_id()) for m in pool])
        build = time.perf_counter() - started
        queries = ["error", "opentelemetry bandit", "flag", "marshmallow timedelta", "config test exs",
                   "nonexistentword"]
        per_query = {}
        for query in queries:
            times = []
            for _ in range(7):
                t = time.perf_counter()
                hits = store.search(query, limit=20)
                times.append(time.perf_counter() - t)
            per_query[query] = (statistics.median(times) * 1000, len(hits))
        median = statistics.median(ms for ms, _ in per_query.values())
        worst = max(ms for ms, _ in per_query.values())
        print(f"search over 100,000 messages (inserted in {build:.1f} s): median {median:.1f} ms, "
              f"slowest query {worst:.1f} ms (goal < {SEARCH_GOAL_MS:.0f} ms, {median / SEARCH_GOAL_MS:.0%} of it)")
        for query, (ms, n) in per_query.items():
            print(f"  {query!r:<26} {ms:7.1f} ms  {n} hits")


if __name__ == "__main__":
    bench_import()
    bench_open_chat()
    bench_search()
