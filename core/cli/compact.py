"""`precis compact`: replay a transcript as a live chat under the automatic policy and show what the model sees."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import click

from ..context.budget import cut_messages
from ..context.engine import Budget, ContextEngine, Prompt
from ..model.counted import counted
from ..model.messages import Message
from ..model.records import SummaryMode
from ..providers.base import Provider, ProviderError
from ..providers.registry import make_provider
from ..settings import KINDS, SUMMARY_SECONDS, SummarizationPolicy
from ..storage.chats import counter_for
from ..storage.importers import ImportFailed, parse_file
from ..storage.interchange import TranscriptError, message_to_record, parse_jsonl_line
from ..storage.text_files import as_utf8
from ..summary.summarizers import make_summarizer
from .group import cli


@dataclass
class ReplayResult:
    engine: ContextEngine
    prompt: Prompt
    originals: list[Message]


def replay(messages: list[Message], engine: ContextEngine) -> ReplayResult:
    """Append each message as it would arrive in a live chat, letting the policy summarize as it goes. The
    prompt is the history as it stands, without recall: recall serves a question still to come (see probes)."""
    for message in messages:
        engine.append(message)
    return ReplayResult(engine=engine, prompt=engine.assemble(recall=False), originals=messages)


class ProbeError(ValueError):
    """A line of a probes file that is not {"question": "..."}."""


def read_probes(path: str) -> list[str]:
    """The questions of a probes file: one JSON object with a non-empty "question" a line (blank lines skipped), read
    as an imported chat's lines are (UTF-16 with its mark, bytes that are not UTF-8 as U+FFFD). OSError if it
    cannot be read."""
    with open(path, "rb") as stream:
        data = stream.read()
    questions = []
    try:
        for number, line in enumerate(as_utf8(data, path).splitlines(), start=1):
            record = parse_jsonl_line(line, path, number)
            if record is None:
                continue
            question = record.get("question") if isinstance(record, dict) else None
            if not isinstance(question, str) or not question.strip():
                raise ProbeError(f'{path}, line {number}: expected {{"question": "..."}} with a non-empty text')
            questions.append(question)
    except TranscriptError as exc:
        raise ProbeError(str(exc)) from None
    return questions


def probe(result: ReplayResult, question: str) -> dict:
    """The prompt the model would be sent if `question` were the next user message, recall included; the chat
    is left as it was."""
    engine = result.engine
    pending = Message(role="user", content=question)
    engine.append(pending, auto=False)
    try:
        prompt = engine.assemble()
    finally:
        engine.remove_last(pending.id)
    index = {m.id: n for n, m in enumerate(result.originals)}
    return {"question": question,
            "context": [message_to_record(m) for m in prompt.messages],
            "recalled": [index[i.source_id] for i in prompt.items if i.kind == "recalled" and i.source_id in index]}


def archived_indices(result: ReplayResult) -> list[int]:
    """Indices of original messages not present verbatim in the prompt."""
    verbatim = {item.source_id for item in result.prompt.items if item.kind in ("system", "message", "tool_output")}
    return [i for i, m in enumerate(result.originals) if m.id not in verbatim]


# A prompt item's kind, as UsageReport.by_kind names it; "trimmed": shrunk to one line or cut to fit.
_KIND_NAMES = {"system": "system", "summary": "summaries", "recalled": "recalled", "message": "messages",
               "tool_output": "tool_outputs", "trimmed": "trimmed"}


def sent_by_kind(prompt) -> dict[str, int]:
    """The tokens of the prompt as sent, by kind; they add up to its tokens (the reply's priming with the
    messages). The stats' usage_by_kind was the context before trimming: with old tool outputs shrunk to one
    line, its kinds added up to 3,853 beside context_tokens 3,204 (sweagent_1 at 4,000)."""
    kinds = dict.fromkeys(_KIND_NAMES.values(), 0)
    for item in prompt.items:
        kinds[_KIND_NAMES[item.kind]] += item.tokens
    kinds["messages"] += prompt.tokens - sum(kinds.values())
    return kinds


def result_json(result: ReplayResult) -> dict:
    engine, prompt = result.engine, result.prompt
    usage = engine.usage(recall=False)  # of the context as replayed (recall is in the probes)
    summaries = [r.model_dump(mode="json") for r in engine.records]
    return {
        "context": [message_to_record(m) for m in prompt.messages],
        "summaries": summaries,
        "archived": archived_indices(result),
        # Messages too large for what the budget left them, sent cut short (index into the transcript).
        "cut": [c.as_json() for c in cut_messages(engine, prompt)],
        "stats": {
            "messages": len(result.originals),
            "context_messages": len(prompt.items),
            "context_tokens": prompt.tokens,
            "budget": engine.budget.available,
            "window": engine.budget.window,
            "reserve_output": engine.budget.reserve_output,
            "usage_ratio": round(prompt.tokens / engine.budget.available, 4),
            "usage_by_kind": sent_by_kind(prompt),
            "summaries_made": len(engine.records),
            "active_summaries": len(engine.chain()),
            "tokens_exact": usage.exact,
            "tokenizer": engine.counter.name,
            "fallbacks": sum(r.fallback_used for r in engine.records),
        },
    }


def print_report(result: ReplayResult, out) -> None:
    engine, prompt = result.engine, result.prompt
    budget = engine.budget
    print(f"{counted(len(result.originals), 'message')} replayed into a {budget.window}-token window "
          f"({budget.available} available after reserving {budget.reserve_output} for the reply)", file=out)
    counting = "exact" if engine.counter.is_exact else "estimated"
    print(f"prompt: {counted(len(prompt.items), 'item')}, {prompt.tokens} tokens "
          f"({prompt.tokens / budget.available:.0%} of the budget, {counting})", file=out)
    print("by kind: " + ", ".join(f"{k} {v}" for k, v in sent_by_kind(prompt).items() if v), file=out)
    print(f"summaries made: {len(engine.records)}, in the chain now: {len(engine.chain())}", file=out)
    for record in engine.records:
        covered = engine.archive.covered_count(record)
        coverage = f" | trail coverage: {record.trail_coverage.describe()}" if record.trail_coverage else ""
        fallback = f" ({record.fallback})" if record.fallback_used else ""
        print(f"  [{record.status}] depth {record.depth} {record.kind}{fallback}: {counted(covered, 'message')} in "
              f"{record.tokens} tokens; context {record.tokens_before} -> {record.tokens_after} tokens, "
              f"trigger {record.trigger}{coverage}", file=out)
    print(f"archived (not verbatim in the prompt): {counted(len(archived_indices(result)), 'message')}", file=out)
    for cut in cut_messages(engine, prompt):
        print(f"cut to fit: {cut.describe()}", file=out)


@cli.command(short_help="Replay a transcript through the context engine; report.")
@click.argument("transcript")
@click.option("--context-tokens", type=click.IntRange(min=1), default=8192, show_default=True,
              help="the model's context window")
@click.option("--reserve-output", type=click.IntRange(min=0), default=512, show_default=True,
              help="tokens reserved for the reply")
@click.option("--mode", type=click.Choice(("rule", "llm", "hybrid")), default="rule", show_default=True,
              help="who writes the summaries: the rules, the model, or the rules with the model's narrative")
@click.option("--provider", type=click.Choice(KINDS), default="local", show_default=True,
              help="the model the prompt is for: its own vocabulary counts the tokens where it is at hand (the "
                   "embedded model's), else they are estimated; it writes llm/hybrid summaries")
@click.option("--base-url", help="the server's base URL, for --provider openai (…/v1) or anthropic")
@click.option("--model", help="the model name on that server")
@click.option("--summary-seconds", type=click.FloatRange(min=0, min_open=True), default=SUMMARY_SECONDS,
              show_default=True,
              help="time limit of one llm/hybrid summary; past it the rules write that summary")
@click.option("--json", "as_json", is_flag=True, help="print context, summaries, archived and stats as JSON")
@click.option("--probes", "probes_path", metavar="QUESTIONS.jsonl",
              help='after the replay, the prompt each question ({"question": ...} a line) would get, recall included')
def compact(transcript: str, context_tokens: int, reserve_output: int, mode: SummaryMode, provider: str,
            base_url: str | None, model: str | None, summary_seconds: float, as_json: bool,
            probes_path: str | None) -> int:
    """Replay TRANSCRIPT (any format `precis import` reads) under the summarization policy and print what the model
    would see. Summaries the file already holds (a Claude Code compaction) are not replayed: every original is."""
    try:
        parsed = parse_file(transcript)
    except ImportFailed as exc:
        print(f"precis compact: {exc.source}, line {exc.line}: {exc.problem}", file=sys.stderr)
        return 2
    except OSError as exc:  # 'cannot read FILE: why'
        print(f"precis compact: {exc}", file=sys.stderr)
        return 2
    try:
        questions = read_probes(probes_path) if probes_path else []
    except ProbeError as exc:
        print(f"precis compact: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"precis compact: cannot read {probes_path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        budget = Budget(window=context_tokens, reserve_output=reserve_output)
    except ValueError as exc:  # the reply's reserve leaves too little of the window
        print(f"precis compact: --context-tokens {context_tokens} is too small for --reserve-output {reserve_output}: "
              f"{exc}", file=sys.stderr)
        return 2
    for notice in parsed.notices():
        print(f"precis compact: {notice}", file=sys.stderr)
    messages = parsed.messages
    try:
        chat_model: Provider | None = make_provider(provider, base_url=base_url, model=model)
    except ProviderError as exc:
        if mode != "rule":  # it writes the summaries
            print(f"precis compact: {exc}", file=sys.stderr)
            return 1
        print(f"precis compact: token counts are estimated: {exc}", file=sys.stderr)
        chat_model = None
    except ValueError as exc:  # a --base-url that is no server's address
        print(f"precis compact: {exc}", file=sys.stderr)
        return 2
    try:
        engine = ContextEngine(budget, SummarizationPolicy(mode=mode), counter_for(chat_model),
                               make_summarizer(mode, chat_model if mode != "rule" else None, summary_seconds))
        result = replay(messages, engine)
    except (ProviderError, ValueError) as exc:
        print(f"precis compact: {exc}", file=sys.stderr)
        return 1
    for cut in cut_messages(result.engine, result.prompt):  # told whatever the output format
        print(f"precis compact: {cut.describe()} to fit the {budget.available:,}-token budget", file=sys.stderr)
    probes = [probe(result, q) for q in questions]
    if as_json:
        output = result_json(result)
        if probes_path:
            output["probes"] = probes
        json.dump(output, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    else:
        print_report(result, sys.stdout)
        for answer in probes:
            print(f"probe {answer['question']!r}: {len(answer['context'])} messages, "
                  f"recalled {answer['recalled'] or 'nothing'}", file=sys.stdout)
    return 0
