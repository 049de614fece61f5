"""The embedded local model's speed: load time, time to first token, tokens/s, and one LLM summary's latency.

Run: python benchmarks/bench_local_model.py [--runs 5]
Prints medians. The machine must be otherwise idle: llama.cpp's threads slow down many times over when other
processes compete for the two cores.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precis.core.model.messages import Message  # noqa: E402
from precis.core.model.tokens import TokenCounter  # noqa: E402
from precis.core.providers.local import LocalProvider  # noqa: E402
from precis.core.storage.interchange import read_transcript  # noqa: E402

TRANSCRIPT = Path(__file__).resolve().parents[2] / "shared" / "transcripts" / "sweagent_1.jsonl"
PROMPT = [Message("system", "You are a helpful assistant."),
          Message("user", "Explain in a few sentences why the sky is blue.")]


def measure_stream(provider: LocalProvider, max_tokens: int) -> tuple[float, float, int]:
    """(seconds to first token, tokens/s after it, completion tokens) of one streamed reply."""
    start = time.perf_counter()
    first = None
    usage = None
    for chunk in provider.stream_chat(PROMPT, max_tokens=max_tokens, temperature=0):
        if chunk.text and first is None:
            first = time.perf_counter()
        if chunk.done:
            usage = chunk.usage
    end = time.perf_counter()
    tokens = usage.completion_tokens if usage else 0
    rate = (tokens - 1) / (end - first) if first and end > first and tokens > 1 else float("nan")
    return (first or end) - start, rate, tokens


def summary_latency(provider: LocalProvider) -> str:
    try:
        from precis.core.summary.summarize import LLMSummarizer, SummaryRequest
    except ImportError:
        return "LLM summary latency: skipped (core.summarize has no LLMSummarizer yet)"
    if not TRANSCRIPT.exists():
        return f"LLM summary latency: skipped ({TRANSCRIPT} not found)"
    messages = read_transcript(TRANSCRIPT)[:30]
    counter = TokenCounter(exact=provider.count_tokens)
    start = time.perf_counter()
    draft = LLMSummarizer(provider).summarize(SummaryRequest(messages=messages, max_tokens=400, counter=counter))
    seconds = time.perf_counter() - start
    input_tokens = counter.prompt_tokens(messages)
    fallback = f", fell back: {draft.fallback_reason}" if draft.fallback_used else ", schema-valid without fallback"
    return (f"LLM summary latency: {seconds:.2f} s for {len(messages)} messages ({input_tokens} tokens) "
            f"of {TRANSCRIPT.name}{fallback}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()

    provider = LocalProvider()
    start = time.perf_counter()
    provider.load()
    print(f"model load: {time.perf_counter() - start:.2f} s ({provider.model}, {provider.context_window()} tokens)")

    measure_stream(provider, 4)  # warm-up: first-call allocations
    runs = [measure_stream(provider, args.max_tokens) for _ in range(args.runs)]
    print(f"time to first token: median {statistics.median(r[0] for r in runs) * 1000:.0f} ms "
          f"({args.runs} runs, {len(provider.prompt_tokens(PROMPT))}-token prompt)")
    print(f"generation: median {statistics.median(r[1] for r in runs):.1f} tokens/s "
          f"(replies of {statistics.median(r[2] for r in runs):.0f} tokens)")
    print(summary_latency(provider))


if __name__ == "__main__":
    main()
