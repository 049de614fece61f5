"""Recall beyond shared words: the shipped search against the offline expansions tried for issue 24, measured.

Recall misses answers said in other words than the question's ("relationship status" asked, "single parent" said).
Each candidate below widens the query from the archive itself, without a model: related words by co-occurrence
within messages (PMI), pseudo-relevance feedback (the rare words of the best matches), rank fusion with a second
search by the best match's words, and word forms beyond the Porter stems (every term sharing a 5-letter prefix, as
an FTS5 prefix query would; for every asked word, or only for those no archived message has). Then what has a sense
of meaning: an embedding model's vectors (wordllama, installed apart), alone, fused with BM25 or after it, and the
embedded model writing search terms (its wait timed apart). Each is installed in
place of RecallIndex.search, so `precis compact --probes` (run in this process) recalls through it, and the
yardstick of benchmarks/fidelity.py counts the answers in the probes' prompts at 8k, rule mode. Then the cost: one
search (what each prompt adds) over an index of 100,000 messages whose words are drawn from the conversations' own,
and that index's memory.

    python -m benchmarks.bench_recall                                   # locomo_1..3 (1 and 2 were tuned on)
    python -m benchmarks.bench_recall --conversations-dir DIR           # held out: see docs/fidelity.md
    python -m benchmarks.bench_recall --messages 20000 --variants shipped,prf
    python -m benchmarks.bench_recall --variants shipped,embedding,embedding-fusion,embedding-after   # wordllama
    python -m benchmarks.bench_recall --variants shipped,model-terms --messages 20000     # the embedded model

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


class Embeddings:
    """Each indexed message's vector from wordllama (static 256-dimension token vectors, averaged; the weights ship
    inside its wheel, so it runs offline), kept beside the RecallIndex they belong to while this bench runs. Not a
    dependency of Precis: `pip install wordllama` to measure it."""

    model = None
    vectors: dict[int, dict[str, object]] = {}
    matrices: dict[int, tuple[list[str], object]] = {}

    @classmethod
    def embed(cls, texts: list[str]):
        if cls.model is None:
            try:
                from wordllama import WordLlama
            except ImportError:
                raise SystemExit("bench_recall: the embedding variants need wordllama (pip install wordllama)") from None
            cls.model = WordLlama.load()
        return cls.model.embed(texts, norm=True)

    @classmethod
    def add(cls, index: RecallIndex, message_id: str, text: str) -> None:
        cls.add_many(index, [(message_id, text)])

    @classmethod
    def add_many(cls, index: RecallIndex, items: list[tuple[str, str]]) -> None:
        vectors = cls.vectors.setdefault(id(index), {})
        new = [(m, t) for m, t in items if m not in vectors]
        if new:
            for (message_id, _), vector in zip(new, cls.embed([t for _, t in new]), strict=True):
                vectors[message_id] = vector
            cls.matrices.pop(id(index), None)

    @classmethod
    def remove(cls, index: RecallIndex, message_id: str) -> None:
        if cls.vectors.get(id(index), {}).pop(message_id, None) is not None:
            cls.matrices.pop(id(index), None)

    @classmethod
    def nearest(cls, index: RecallIndex, query: str, limit: int) -> list[str]:
        import numpy as np

        if id(index) not in cls.matrices:
            vectors = cls.vectors.get(id(index), {})
            ids = sorted(vectors)
            cls.matrices[id(index)] = (ids, np.stack([vectors[m] for m in ids]) if ids else np.zeros((0, 256)))
        ids, matrix = cls.matrices[id(index)]
        if not ids:
            return []
        scores = matrix @ cls.embed([query])[0]
        best = np.argpartition(-scores, min(limit, len(ids) - 1))[:limit]
        return [ids[n] for n in sorted(best, key=lambda n: -scores[n])]


def embedding_add(index: RecallIndex, message_id: str, text: str) -> None:
    ORIGINAL_ADD(index, message_id, text)
    Embeddings.add(index, message_id, text)


def embedding_remove(index: RecallIndex, message_id: str) -> None:
    ORIGINAL_REMOVE(index, message_id)
    Embeddings.remove(index, message_id)


ORIGINAL_ADD, ORIGINAL_REMOVE, BM25 = RecallIndex.add, RecallIndex.remove, RecallIndex.search


def embedding(index: RecallIndex, query: str, limit: int) -> list[str]:
    """The messages nearest the question in meaning, by their vectors' cosine."""
    return Embeddings.nearest(index, query, limit)


def embedding_fusion(index: RecallIndex, query: str, limit: int) -> list[str]:
    """BM25's ranks fused with the vectors' (reciprocal rank): a message in both comes first, and one found only
    by meaning can enter the room recall has."""
    scores: dict[str, float] = defaultdict(float)
    for weight, ranked in ((1.0, BM25(index, query, max(limit, 24))),
                           (FUSION_WEIGHT, Embeddings.nearest(index, query, max(limit, 24)))):
        for rank, message_id in enumerate(ranked):
            scores[message_id] += weight / (FUSION_K + rank)
    return heapq.nlargest(limit, scores, key=lambda m: (scores[m], m))


def embedding_after(index: RecallIndex, query: str, limit: int) -> list[str]:
    """BM25's matches as they are, then the nearest in meaning that it did not find."""
    found = BM25(index, query, limit)
    return found + [m for m in Embeddings.nearest(index, query, limit) if m not in found][:max(0, limit - len(found))]


class QueryModel:
    """The embedded model (SmolLM2-135M, through Precis's model server, started on first use) turning a question
    into search terms, bounded in time; what it writes joins the asked words at MODEL_TERMS_WEIGHT, and past the
    bound the asked words go alone. Each call's seconds are kept: what a prompt would wait."""

    stack: contextlib.ExitStack | None = None
    base_url = ""
    said: dict[str, list[str]] = {}
    seconds: list[float] = []

    @classmethod
    def terms(cls, question: str) -> list[str]:
        if question in cls.said:
            return cls.said[question]
        if cls.stack is None:
            import atexit

            from benchmarks import answers

            cls.stack = contextlib.ExitStack()
            cls.base_url = cls.stack.enter_context(answers.embedded_server())
            atexit.register(cls.stack.close)
        import httpx

        started = time.perf_counter()
        try:
            response = httpx.post(f"{cls.base_url}/chat/completions", timeout=MODEL_TERMS_SECONDS, json={
                "messages": [{"role": "system", "content": MODEL_TERMS_PROMPT}, {"role": "user", "content": question}],
                "temperature": 0, "max_tokens": 24})
            written = response.json()["choices"][0]["message"].get("content") or ""
        except httpx.TimeoutException:
            written = ""
        cls.seconds.append(time.perf_counter() - started)
        cls.said[question] = [t for t in content_words(written) if t not in content_words(question)]
        return cls.said[question]


MODEL_TERMS_SECONDS, MODEL_TERMS_WEIGHT = 2.0, 0.5
MODEL_TERMS_PROMPT = ("Write 5 to 8 search keywords, comma-separated, that would find the chat message answering the "
                      "user's question. Include words the answer itself would use. Only the keywords.")


def model_terms(index: RecallIndex, query: str, limit: int) -> list[str]:
    return weighted_bm25(index, dict.fromkeys(content_words(query), 1.0)
                         | dict.fromkeys(QueryModel.terms(query), MODEL_TERMS_WEIGHT), limit)


VARIANTS: dict[str, Search] = {"shipped": BM25, "cooccurrence": cooccurrence, "prf": feedback,
                               "fusion": fusion, "prefix": prefixes, "unmatched-prefix": unmatched_prefixes,
                               "embedding": embedding, "embedding-fusion": embedding_fusion,
                               "embedding-after": embedding_after, "model-terms": model_terms}
EMBEDDING_VARIANTS = {"embedding", "embedding-fusion", "embedding-after"}
WITHOUT_MODEL = [v for v in VARIANTS if v not in EMBEDDING_VARIANTS | {"model-terms"}]


def compact_here(path: Path, window: int, mode: str, probes: Path | None = None, **_: object) -> dict:
    """`precis compact --json` in this process, so that the search installed by mock.patch is the one used."""
    args = ["compact", str(path), "--context-tokens", str(window), "--mode", mode, "--json"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if precis([*args, *(["--probes", str(probes)] if probes else [])]) != 0:
            raise SystemExit(f"bench_recall: precis {' '.join(args)} failed")
    return json.loads(out.getvalue())


def recalled_answers(search: Search, paths: list[Path], embedded: bool = False) -> tuple[int, int]:
    with contextlib.ExitStack() as patches:
        patches.enter_context(mock.patch.object(RecallIndex, "search", search))
        patches.enter_context(mock.patch.object(fidelity, "compact", compact_here))
        if embedded:
            patches.enter_context(mock.patch.object(RecallIndex, "add", embedding_add))
            patches.enter_context(mock.patch.object(RecallIndex, "remove", embedding_remove))
        rows = [fidelity.conversation_row(p, "8k", "rule", with_probes=True) for p in paths]
    return sum(r.recall_kept for r in rows), sum(r.recall_asked for r in rows)


def large_index(paths: list[Path], size: int) -> tuple[RecallIndex, list[tuple[str, str]]]:
    """`size` messages of the conversations' lengths, their words drawn from the conversations' words (so the
    postings grow as a real chat's do), and the messages (id, text)."""
    messages = [m["content"] for p in paths for m in fidelity.read_jsonl(p) if m["role"] != "system"]
    vocabulary = [w for text in messages for w in text.split()]
    lengths = [len(text.split()) for text in messages]
    chance = random.Random(24)
    index, texts = RecallIndex(), []
    for n in range(size):
        texts.append((f"m{n:06d}", " ".join(chance.choices(vocabulary, k=chance.choice(lengths)))))
        index.add(*texts[-1])
    return index, texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations-dir", type=Path, default=fidelity.CONVERSATIONS_DIR)
    parser.add_argument("--messages", type=int, default=100_000, help="the size of the index timed")
    parser.add_argument("--variants", default=",".join(WITHOUT_MODEL),
                        help="comma-separated, of: " + ",".join(VARIANTS) + " (default: those without a model)")
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    if unknown := [v for v in variants if v not in VARIANTS]:
        parser.error(f"--variants: unknown {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    paths = [args.conversations_dir / f"{c}.jsonl" for c in fidelity.conversations_in(args.conversations_dir)]
    questions = [q["question"] for p in paths for q in fidelity.read_jsonl(p.with_suffix(".questions.jsonl"))]

    gc.collect()
    tracemalloc.start()
    index, texts = large_index(paths, args.messages)
    memory = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(f"{len(paths)} conversations in {args.conversations_dir}; {len(questions)} questions timed on an index of "
          f"{args.messages:,} messages ({memory / 2**20:.0f} MiB, tracemalloc)\n")
    print("| search | answers in the probes' prompts, 8k | ms a prompt, median | p95 |\n|---|---|---|---|")
    for name in variants:
        embedded = name in EMBEDDING_VARIANTS
        kept, asked = recalled_answers(VARIANTS[name], paths, embedded)
        if embedded and id(index) not in Embeddings.vectors:
            started = time.perf_counter()
            Embeddings.add_many(index, texts)
            Embeddings.nearest(index, "warm", 1)
            matrix = Embeddings.matrices[id(index)][1]
            print(f"(embedded {len(index):,} messages in {time.perf_counter() - started:.1f} s; their vectors "
                  f"{matrix.nbytes / 2**20:.0f} MiB)")
        times = []
        for question in questions:
            started = time.process_time()
            VARIANTS[name](index, question, 24)
            times.append(1000 * (time.process_time() - started))
        p95 = statistics.quantiles(times, n=20)[-1]
        print(f"| {name} | {fidelity.pct(kept, asked)} | {statistics.median(times):.2f} | {p95:.2f} |")
        if name == "model-terms":
            waits = sorted(QueryModel.seconds)
            print(f"(the model's terms: {len(waits)} calls, median {1000 * statistics.median(waits):.0f} ms, p95 "
                  f"{1000 * statistics.quantiles(waits, n=20)[-1]:.0f} ms, {sum(w >= MODEL_TERMS_SECONDS for w in waits)}"
                  f" past {MODEL_TERMS_SECONDS:.0f} s; e.g. {next(iter(QueryModel.said.items()), '')})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
