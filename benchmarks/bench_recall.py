"""Recall beyond shared words: the shipped search against the offline expansions tried for issue 24, measured.

Recall misses answers said in other words than the question's ("relationship status" asked, "single parent" said).
Each candidate below widens the query from the archive itself, without a model: related words by co-occurrence
within messages (PMI), pseudo-relevance feedback (the rare words of the best matches), rank fusion with a second
search by the best match's words, and word forms beyond the Porter stems (every term sharing a 5-letter prefix, as
an FTS5 prefix query would; for every asked word, or only for those no archived message has). Each is installed in
place of RecallIndex.search, so `precis compact --probes` (run in this process) recalls through it, and the
yardstick of benchmarks/fidelity.py counts the answers in the probes' prompts at 8k, rule mode. Then the cost: one
search (what each prompt adds) over an index of 100,000 messages whose words are drawn from the conversations' own,
and that index's memory.

    python -m benchmarks.bench_recall                                   # locomo_1..3 (1 and 2 were tuned on)
    python -m benchmarks.bench_recall --conversations-dir DIR           # held out: see docs/fidelity.md
    python -m benchmarks.bench_recall --messages 20000 --variants shipped,prf

Goal: a candidate is worth shipping only if it recalls more answers on conversations not tuned on, adding under
5 ms a prompt at 100,000 messages.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import heapq
import io
import json
import math
import random
import statistics
import time
import tracemalloc
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from unittest import mock

from precis.core.cli.main import main as precis
from precis.core.context.porter import stem
from precis.core.context.recall_index import MIN_IDF, RecallIndex, content_words
from precis.core.summary.text_rules import STOP_WORDS

from benchmarks import fidelity

Search = Callable[[RecallIndex, str, int], list[str]]
STOP_STEMS = frozenset(stem(w) for w in STOP_WORDS)
RELATED_PER_WORD, RELATED_WEIGHT, COOCCURRENCE_MAX_POSTINGS = 2, 0.4, 300
FEEDBACK_MATCHES, FEEDBACK_WORDS, FEEDBACK_WEIGHT = 3, 5, 0.2
FUSION_K, FUSION_WEIGHT = 20, 0.6
PREFIX = 5


def weighted_bm25(index: RecallIndex, weights: dict[str, float], limit: int) -> list[str]:
    """RecallIndex's BM25 (FTS5's), each term's share multiplied by its weight; terms may be postings' unions."""
    n = len(index._terms)
    if not n:
        return []
    average = index._total_length / n or 1.0
    scores: dict[str, float] = defaultdict(float)
    for term, weight in weights.items():
        posting = union(index, term)
        if not posting or len(posting) > n // 2 + 1:
            continue
        idf = max(MIN_IDF, math.log((n - len(posting) + 0.5) / (len(posting) + 0.5)))
        for message_id, tf in posting.items():
            scores[message_id] += weight * idf * tf * (index.K1 + 1) / (
                tf + index.K1 * (1 - index.B + index.B * index._lengths[message_id] / average))
    return heapq.nlargest(limit, scores, key=lambda m: (scores[m], m))


def union(index: RecallIndex, term: str) -> dict[str, int]:
    """A term's posting; a term ending in '*' is a prefix, its posting every matching term's (as FTS5's)."""
    if not term.endswith("*"):
        return index._postings.get(term, {})
    merged: Counter[str] = Counter()
    for other, posting in index._postings.items():
        if other.startswith(term[:-1]):
            merged.update(posting)
    return merged


def cooccurrence(index: RecallIndex, query: str, limit: int) -> list[str]:
    asked = content_words(query)
    weights, n = dict.fromkeys(asked, 1.0), len(index._terms)
    for term in asked:
        posting = index._postings.get(term)
        if not posting or len(posting) > COOCCURRENCE_MAX_POSTINGS:
            continue
        together = Counter(t for m in posting for t in index._terms[m])
        related = [(math.log(c * n / (len(posting) * len(index._postings[t]))) * math.log(1 + c), t)
                   for t, c in together.items() if c >= 2 and t not in weights and t not in STOP_STEMS]
        for _, t in heapq.nlargest(RELATED_PER_WORD, related):
            weights[t] = RELATED_WEIGHT
    return weighted_bm25(index, weights, limit)


def feedback(index: RecallIndex, query: str, limit: int) -> list[str]:
    weights, n = dict.fromkeys(content_words(query), 1.0), len(index._terms)
    rarity: Counter[str] = Counter()
    for match in weighted_bm25(index, dict(weights), FEEDBACK_MATCHES):
        for t in index._terms[match]:
            if t not in weights and t not in STOP_STEMS and len(index._postings[t]) >= 2:
                rarity[t] += math.log((n - len(index._postings[t]) + 0.5) / (len(index._postings[t]) + 0.5))
    weights |= dict.fromkeys((t for t, _ in rarity.most_common(FEEDBACK_WORDS)), FEEDBACK_WEIGHT)
    return weighted_bm25(index, weights, limit)


def fusion(index: RecallIndex, query: str, limit: int) -> list[str]:
    asked = dict.fromkeys(content_words(query), 1.0)
    first = weighted_bm25(index, asked, max(limit, 24))
    second = weighted_bm25(index, {t: 1.0 for t in index._terms[first[0]] if t not in asked}, 24) if first else []
    scores: dict[str, float] = defaultdict(float)
    for weight, ranked in ((1.0, first), (FUSION_WEIGHT, second)):
        for rank, message_id in enumerate(ranked):
            scores[message_id] += weight / (FUSION_K + rank)
    return heapq.nlargest(limit, scores, key=lambda m: (scores[m], m))


def prefixes(index: RecallIndex, query: str, limit: int) -> list[str]:
    return weighted_bm25(index, {(t[:PREFIX] + "*" if len(t) > PREFIX else t): 1.0 for t in content_words(query)},
                         limit)


def unmatched_prefixes(index: RecallIndex, query: str, limit: int) -> list[str]:
    """The prefix only for the asked words no archived message has; the others as they are."""
    return weighted_bm25(index, {(t[:PREFIX] + "*" if len(t) > PREFIX and t not in index._postings else t): 1.0
                                 for t in content_words(query)}, limit)


VARIANTS: dict[str, Search] = {"shipped": RecallIndex.search, "cooccurrence": cooccurrence, "prf": feedback,
                               "fusion": fusion, "prefix": prefixes, "unmatched-prefix": unmatched_prefixes}


def compact_here(path: Path, window: int, mode: str, probes: Path | None = None, **_: object) -> dict:
    """`precis compact --json` in this process, so that the search installed by mock.patch is the one used."""
    args = ["compact", str(path), "--context-tokens", str(window), "--mode", mode, "--json"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if precis([*args, *(["--probes", str(probes)] if probes else [])]) != 0:
            raise SystemExit(f"bench_recall: precis {' '.join(args)} failed")
    return json.loads(out.getvalue())


def recalled_answers(search: Search, paths: list[Path]) -> tuple[int, int]:
    with mock.patch.object(RecallIndex, "search", search), mock.patch.object(fidelity, "compact", compact_here):
        rows = [fidelity.conversation_row(p, "8k", "rule", with_probes=True) for p in paths]
    return sum(r.recall_kept for r in rows), sum(r.recall_asked for r in rows)


def large_index(paths: list[Path], size: int) -> RecallIndex:
    """`size` messages of the conversations' lengths, their words drawn from the conversations' words (so the
    postings grow as a real chat's do)."""
    messages = [m["content"] for p in paths for m in fidelity.read_jsonl(p) if m["role"] != "system"]
    vocabulary = [w for text in messages for w in text.split()]
    lengths = [len(text.split()) for text in messages]
    chance = random.Random(24)
    index = RecallIndex()
    for n in range(size):
        index.add(f"m{n:06d}", " ".join(chance.choices(vocabulary, k=chance.choice(lengths))))
    return index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations-dir", type=Path, default=fidelity.CONVERSATIONS_DIR)
    parser.add_argument("--messages", type=int, default=100_000, help="the size of the index timed")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ",".join(VARIANTS))
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    if unknown := [v for v in variants if v not in VARIANTS]:
        parser.error(f"--variants: unknown {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    paths = [args.conversations_dir / f"{c}.jsonl" for c in fidelity.conversations_in(args.conversations_dir)]
    questions = [q["question"] for p in paths for q in fidelity.read_jsonl(p.with_suffix(".questions.jsonl"))]

    gc.collect()
    tracemalloc.start()
    index = large_index(paths, args.messages)
    memory = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(f"{len(paths)} conversations in {args.conversations_dir}; {len(questions)} questions timed on an index of "
          f"{args.messages:,} messages ({memory / 2**20:.0f} MiB, tracemalloc)\n")
    print("| search | answers in the probes' prompts, 8k | ms a prompt, median | p95 |\n|---|---|---|---|")
    for name in variants:
        kept, asked = recalled_answers(VARIANTS[name], paths)
        times = []
        for question in questions:
            started = time.process_time()
            VARIANTS[name](index, question, 24)
            times.append(1000 * (time.process_time() - started))
        p95 = statistics.quantiles(times, n=20)[-1]
        print(f"| {name} | {fidelity.pct(kept, asked)} | {statistics.median(times):.2f} | {p95:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
