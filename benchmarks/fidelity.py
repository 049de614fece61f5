"""Summary fidelity: what each summary keeps of the messages it replaced, at what size and speed.

Replays every shared transcript into the context engine as a live chat (the automatic policy summarizes as it
goes) at several windows and summary modes, and for every summary checks which facts of the messages it covered
(files, commands with exit codes, errors, identifiers, the user's instructions) are still in what the model sees
right after it. A reference row measures Claude Code's own compaction summary (message 405 of
claudecode_session.jsonl, covering messages 0..404) against the same facts, next to one Precis summary per mode
of the same span at the same size.

    python -m benchmarks.fidelity                 # every transcript, 4k/8k/32k, rule + llm + hybrid
    python -m benchmarks.fidelity --quick         # rule mode only
    python -m benchmarks.fidelity --modes hybrid --windows 32k --transcripts claudecode_session --max-summaries 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from precis.core.context.engine import Budget, ContextEngine
from precis.core.context.policy import SummarizationPolicy
from precis.core.model.messages import Message
from precis.core.model.records import Retention, SummaryMode
from precis.core.model.tokens import TokenCounter
from precis.core.providers.base import Provider
from precis.core.storage.interchange import read_transcript
from precis.core.summary.retention import KINDS, check_retention, context_text
from precis.core.summary.summarize import make_summarizer

TRANSCRIPTS_DIR = Path(__file__).resolve().parents[2] / "shared" / "transcripts"
REFERENCE_TRANSCRIPT = "claudecode_session"
REFERENCE_INDEX = 405  # Claude Code's compaction summary of messages 0..404
REFERENCE_SUMMARY_TOKENS = 4000  # the size the issue compares against: about Claude Code's own summary
WINDOWS = {"4k": 4096, "8k": 8192, "32k": 32768}
MODES: tuple[SummaryMode, ...] = ("rule", "llm", "hybrid")
RESERVE_OUTPUT = 512


@dataclass
class Tally:
    """Retention summed over many checks: kept and total facts per kind."""

    kept: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))

    def add(self, retention: Retention) -> None:
        for kind in KINDS:
            self.kept[kind] += retention.kept.get(kind, 0)
            self.total[kind] += retention.total.get(kind, 0)

    def cell(self, kind: str) -> str:
        total = self.total[kind]
        return f"{100 * self.kept[kind] / total:.0f}% ({self.kept[kind]}/{total})" if total else "–"


@dataclass
class Row:
    transcript: str
    window: str
    mode: str
    summaries: int = 0
    fallbacks: int = 0
    summary_tokens: list[int] = field(default_factory=list)
    covered_tokens: list[int] = field(default_factory=list)
    context_ratios: list[float] = field(default_factory=list)
    summary_ms: list[float] = field(default_factory=list)
    check_ms: list[float] = field(default_factory=list)
    fallback_reasons: list[str] = field(default_factory=list)
    after: Tally = field(default_factory=Tally)
    final: Tally = field(default_factory=Tally)

    def as_dict(self) -> dict:
        return {
            "transcript": self.transcript, "window": self.window, "mode": self.mode,
            "summaries": self.summaries, "fallbacks": self.fallbacks,
            "summary_tokens_median": median(self.summary_tokens),
            "compression": self.compression(), "context_after_before": median(self.context_ratios),
            "summary_ms_median": median(self.summary_ms), "check_ms_median": median(self.check_ms),
            "fallback_reasons": self.fallback_reasons,
            "retention_after": {k: [self.after.kept[k], self.after.total[k]] for k in KINDS},
            "retention_final": {k: [self.final.kept[k], self.final.total[k]] for k in KINDS},
        }

    def compression(self) -> float | None:
        covered = sum(self.covered_tokens)
        return round(sum(self.summary_tokens) / covered, 4) if covered else None


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def load(name: str) -> list[Message]:
    return read_transcript(TRANSCRIPTS_DIR / f"{name}.jsonl")


def make_engine(mode: SummaryMode, window: int, provider: Provider | None,
                policy: SummarizationPolicy | None = None) -> ContextEngine:
    policy = policy or SummarizationPolicy(mode=mode)
    return ContextEngine(Budget(window=window, reserve_output=RESERVE_OUTPUT), policy=policy,
                         counter=TokenCounter(), summarizer=make_summarizer(mode, provider))


def timed_check(covered: list[Message], text: str, row: Row) -> Retention:
    started = time.perf_counter()
    retention = check_retention(covered, text)
    row.check_ms.append((time.perf_counter() - started) * 1000)
    return retention


def replay_row(name: str, window_label: str, mode: SummaryMode, provider: Provider | None,
               max_summaries: int | None) -> Row:
    """Replay one transcript as a live chat; check every summary against the context right after it."""
    messages = load(name)
    engine = make_engine(mode, WINDOWS[window_label], provider)
    counter = engine.counter
    row = Row(name, window_label, mode)
    for message in messages:
        record = engine.append(message)
        if record is None:
            continue
        covered = engine.archived_messages(record.id)
        direct = set(record.covered_ids)
        covered = [m for m in covered if m.id in direct]
        row.summaries += 1
        row.fallbacks += record.fallback_used
        row.fallback_reasons += [record.fallback_reason] if record.fallback_reason else []
        row.summary_tokens.append(counter.count_text(record.text))
        row.covered_tokens.append(sum(counter.raw_message_tokens(m) for m in covered))
        row.context_ratios.append(record.tokens_after / record.tokens_before if record.tokens_before else 1.0)
        row.summary_ms.append(record.duration_ms)
        row.after.add(timed_check(covered, context_text(engine.assemble().messages), row))
        if max_summaries and row.summaries >= max_summaries:
            break
    # Everything archived by the end, against the final context: what survives the whole chain (merges included).
    archived = [m for m in engine.messages if engine.archived_by(m.id) is not None]
    if archived:
        row.final.add(timed_check(archived, context_text(engine.assemble().messages), row))
    return row


def reference_rows(modes: list[SummaryMode], provider: Provider | None) -> list[Row]:
    """Claude Code's own summary of messages 0..404, and one Precis summary per mode of the same span and size."""
    messages = load(REFERENCE_TRANSCRIPT)
    covered, summary = messages[:REFERENCE_INDEX], messages[REFERENCE_INDEX]
    counter = TokenCounter()
    reference = Row(REFERENCE_TRANSCRIPT, "0..404", "Claude Code /compact")
    reference.summaries = 1
    reference.summary_tokens.append(counter.count_text(summary.content))
    reference.covered_tokens.append(sum(counter.raw_message_tokens(m) for m in covered))
    reference.after.add(timed_check(covered, summary.content, reference))
    rows = [reference]
    # A window large enough that the whole span is one summary, capped at the reference's size.
    policy_kwargs = dict(max_summary_tokens=REFERENCE_SUMMARY_TOKENS, enabled=False)
    for mode in modes:
        engine = make_engine(mode, 400_000, provider, SummarizationPolicy(mode=mode, **policy_kwargs))
        for message in covered:
            engine.append(message)
        record = engine.summarize_now(up_to=covered[-1].id)
        row = Row(REFERENCE_TRANSCRIPT, "0..404", f"precis {mode} (one summary)")
        row.summaries, row.fallbacks = 1, int(record.fallback_used)
        row.fallback_reasons += [record.fallback_reason] if record.fallback_reason else []
        row.summary_tokens.append(counter.count_text(record.text))
        row.covered_tokens.append(reference.covered_tokens[0])
        row.summary_ms.append(record.duration_ms)
        row.after.add(timed_check(covered, context_text(engine.assemble().messages), row))
        rows.append(row)
    return rows


def fmt(value: float | None, pattern: str = "{:.0f}") -> str:
    return "–" if value is None else pattern.format(value)


def markdown(rows: list[Row]) -> str:
    head = ["transcript", "window", "mode", "summaries", "fallbacks", "summary tok (median)",
            "summary/covered", "context after/before", *KINDS, "ms/summary (median)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r.transcript, r.window, r.mode, str(r.summaries), str(r.fallbacks), fmt(median(r.summary_tokens)),
                 fmt(r.compression(), "{:.3f}"), fmt(median(r.context_ratios), "{:.2f}"),
                 *(r.after.cell(k) for k in KINDS), fmt(median(r.summary_ms), "{:.0f}")]
        lines.append("| " + " | ".join(cells) + " |")
    finals = [r for r in rows if any(r.final.total.values())]
    if finals:
        lines += ["", "Facts of every archived message against the final context (what survives the whole chain):", "",
                  "| transcript | window | mode | " + " | ".join(KINDS) + " |", "|" + "---|" * (3 + len(KINDS))]
        for r in finals:
            lines.append(f"| {r.transcript} | {r.window} | {r.mode} | " + " | ".join(r.final.cell(k) for k in KINDS)
                         + " |")
    reasons = sorted({f"{r.mode}: {reason}" for r in rows for reason in r.fallback_reasons})
    if reasons:
        lines += ["", "Fallbacks to the rule summary: " + "; ".join(reasons)]
    checks = [ms for r in rows for ms in r.check_ms]
    if checks:
        lines += ["", f"Retention check: median {statistics.median(checks):.1f} ms, max {max(checks):.1f} ms "
                      f"over {len(checks)} checks."]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    names = sorted(p.name.removesuffix(".jsonl") for p in TRANSCRIPTS_DIR.glob("*.jsonl")
                   if not p.name.endswith(".raw.jsonl"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: rule,llm,hybrid")
    parser.add_argument("--windows", default=",".join(WINDOWS), help="comma-separated: " + ",".join(WINDOWS))
    parser.add_argument("--transcripts", default=",".join(names), help="comma-separated: " + ",".join(names))
    parser.add_argument("--quick", action="store_true", help="rule mode only")
    parser.add_argument("--max-summaries", type=int, default=None,
                        help="stop each replay after this many summaries (the local model takes ~seconds each)")
    parser.add_argument("--no-reference", action="store_true", help="skip the Claude Code reference rows")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON to this file")
    args = parser.parse_args(argv)
    args.modes = ["rule"] if args.quick else [m for m in args.modes.split(",") if m]
    args.windows = [w for w in args.windows.split(",") if w]
    args.transcripts = [t.removesuffix(".jsonl") for t in args.transcripts.split(",") if t]
    for mode in args.modes:
        if mode not in MODES:
            parser.error(f"--modes: unknown mode {mode!r}; choose from {', '.join(MODES)}")
    for window in args.windows:
        if window not in WINDOWS:
            parser.error(f"--windows: unknown window {window!r}; choose from {', '.join(WINDOWS)}")
    for name in args.transcripts:
        if name not in names:
            parser.error(f"--transcripts: no transcript {name!r} in {TRANSCRIPTS_DIR}; choose from {', '.join(names)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    provider = None
    if any(m != "rule" for m in args.modes):
        from precis.core.providers.local import LocalProvider
        provider = LocalProvider()
    rows: list[Row] = []
    for name in args.transcripts:
        for window in args.windows:
            for mode in args.modes:
                started = time.perf_counter()
                rows.append(replay_row(name, window, mode, provider, args.max_summaries))
                print(f"{name} {window} {mode}: {rows[-1].summaries} summaries in "
                      f"{time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    if not args.no_reference:
        rows.extend(reference_rows(args.modes, provider))
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps([r.as_dict() for r in rows], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
