"""Summarizers: rule-based (deterministic), LLM (strict JSON from a provider) and hybrid (rules + LLM narrative)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from pydantic import ValidationError

from ..model.counted import counted
from ..model.messages import Message
from ..model.records import MAX_KEY_POINTS, Facets, SummaryMode
from ..model.tokens import TokenCounter
from ..providers.base import Cancelled, CancelToken, Provider, ProviderError, Usage, complete, token_counter
from ..providers.local import LocalProvider
from ..providers.model_process import ModelProcessDied
from ..settings import SUMMARY_SECONDS
from .digest import conversation_digest, is_conversation
from .facets import extract_facets
from .llm_output import (
    SUMMARY_SCHEMA,
    LLMSummaryOut,
    action_items,
    ground,
    render_llm_text,
    says_something,
    whole_sentences,
    without_noise,
)
from .redact import redact
from .summary_block import render_artifact_trail, rule_summary
from .text_rules import SENTENCE_END, clip
from .tool_output import one_line

log = logging.getLogger("precis.summarize")

RETRY_BASE_SECONDS = 0.25
# The documents' target is a summary in under 10 s. The reply is capped (a complete summary JSON from a small model
# is 200-400 tokens) and generation is cancelled at the deadline, after which the rules write the summary; the
# request cap below keeps the prompt's processing, which cannot be interrupted, to a few seconds.
OUTPUT_TOKENS = 512
# 6 s leaves room for the rules' summary after it (1-3 s on two cores busy with other work) within the 10 s.
TRANSPORT_ATTEMPTS = 2  # the first try and one retry
# Loading the embedded model (once per process: a second idle, far longer on a busy machine) is awaited apart from
# the summary's time limit, which counts the model's work on the summary: right after start-up, it was the loading
# that ran out the limit and the rules wrote nearly every summary.
LOAD_SECONDS = 120.0
STOP_CHECK_SECONDS = 0.1  # how often the wait for the model to load looks for the chat closing (stop)
CHAT_CLOSED = "the chat was closed before the model finished its summary"


RULES = "rules"


class SummarizationFailed(RuntimeError):
    """Raised only with `abort_on_failure`; otherwise failures fall back to the rule-based summary. A refusal the
    user asked for, not a fault: its words say what failed and which setting stopped the rules."""

    def __init__(self, why: str) -> None:
        super().__init__("not summarized: the model's summary failed and “Stop if the model's summary fails” is on, "
                         f"so the rules did not write it ({why}); the messages stay as they are")


@dataclass
class SummaryDraft:
    text: str
    key_points: list[str]
    facets: Facets
    mode: SummaryMode
    fallback_used: bool = False
    fallback_reason: str | None = None
    summarizer_tokens: int = 0  # prompt and reply tokens of the model calls it took
    written_by: str = RULES  # who wrote it: "rules", or the provider and model ("local: SmolLM2-135M-Instruct")


@dataclass
class SummaryRequest:
    messages: list[Message]
    max_tokens: int
    counter: TokenCounter
    instructions: str | None = None
    preserve_error_details: bool = True
    abort_on_failure: bool = False
    # The session date in effect where the stretch starts, when its marker came before it (the chat's opening
    # message, or a stretch already summarized).
    date: str = ""
    depth: int = 1  # the depth the summary will have in the chain (1: the first)


class Summarizer(Protocol):
    mode: SummaryMode

    def summarize(self, request: SummaryRequest) -> SummaryDraft: ...


def fit_text(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """Cut text to at most max_tokens (keeping the start), marking the cut where there is room for the mark."""
    tokens = counter.count_text(text)
    if tokens <= max_tokens:
        return text
    marker = "\n[… cut to fit its token budget]"
    room = max_tokens - counter.count_text(marker)
    if room < 1:
        marker, room = "", max(max_tokens, 0)
    # Estimate the cut from the text's characters per token, then tighten: each step tokenizes only the kept part.
    end = int(len(text) * room / tokens)
    while end > 0 and counter.count_text(text[:end]) > room:
        end = int(end * 0.9)
    return text[:end].rstrip() + marker


def conversation_facets(messages: list[Message]) -> Facets:
    """The facets of talk (rule and hybrid summaries alike): "What made you decide to ...?" asks about a decision; it
    is not one."""
    facets = extract_facets(messages)
    facets.decisions = [d for d in facets.decisions if not d.rstrip().endswith("?")]
    return facets


class RuleSummarizer:
    mode: SummaryMode = "rule"

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        if is_conversation(request.messages):
            facets = conversation_facets(request.messages)
            # The sentences stating its decisions are digest lines under their speaker, kept first (the record's
            # facets list them too).
            text, key_points = conversation_digest(request.messages, request.max_tokens, request.counter, request.date,
                                                    facets.decisions)
            return SummaryDraft(text=text, key_points=key_points[:MAX_KEY_POINTS], facets=facets, mode="rule")
        text, key_points, facets = rule_summary(
            request.messages, max_tokens=request.max_tokens, count_tokens=request.counter.count_text)
        return SummaryDraft(text=text, key_points=key_points, facets=facets, mode="rule")


SYSTEM_PROMPT = (
    "You summarize the earlier part of a conversation so that it can continue without the original messages. "
    "Reply with JSON only, matching the schema: narrative (what happened, in order, concise), key_points, "
    "decisions, action_items (owner, task, due), unresolved_questions, entities. "
    "Keep identifiers, numbers, file paths, commands and error names exactly as written. "
    "Keep the user's requests and corrections. Do not invent anything that is not in the transcript."
)


def render_transcript(messages: list[Message], preserve_error_details: bool) -> list[str]:
    """One block per message; tool outputs pre-shrunk to their rule-based line so the request stays small."""
    calls = {c.id: c for m in messages for c in m.tool_calls}
    blocks = []
    for m in messages:
        if m.role == "tool":
            call = calls.get(m.tool_call_id or "")
            blocks.append(f"TOOL RESULT {one_line(call, m, preserve_error_details=preserve_error_details)}")
            continue
        text = m.content.strip()
        for call in m.tool_calls:
            args = json.dumps(call.arguments, ensure_ascii=False)
            text += f"\n(calls {call.name} {args[:300]})"
        if text:
            blocks.append(f"{m.role.upper()}: {text}")
    return blocks


def with_instructions(system: str, request: SummaryRequest) -> str:
    return system + ("\nAdditional instructions from the user: " + request.instructions if request.instructions else "")


def meta_header(request: SummaryRequest) -> str:
    """Document 004's meta header: the stretch's size (all of it, also when the transcript is cut to fit the window)
    and the summary's depth."""
    tokens = sum(map(request.counter.raw_message_tokens, request.messages))
    return f"<meta total_messages={len(request.messages)} total_tokens={tokens} depth={request.depth} />"


def build_request(request: SummaryRequest, window: int, output_tokens: int, counter: TokenCounter) -> list[Message]:
    """The summary request, capped so it always fits the summarizer's own window (oldest side cut first)."""
    system = with_instructions(SYSTEM_PROMPT, request)
    blocks = [redact(b)[0] for b in render_transcript(request.messages, request.preserve_error_details)]
    head = f"{meta_header(request)}\nTranscript to summarize:\n"
    # Room for the transcript: window minus the system prompt, the output and a margin for chat formatting.
    room = window - output_tokens - counter.count_text(system) - counter.count_text(head) - 64
    kept: list[str] = []
    used = 0
    for block in reversed(blocks):
        cost = counter.count_text(block) + 1
        if used + cost > room:
            if not kept and room > 16:  # a single huge block: keep its end rather than nothing
                kept.append(fit_text(block, room, counter))
            break
        kept.append(block)
        used += cost
    kept.reverse()
    if len(kept) < len(blocks):
        kept.insert(0, f"[{len(blocks) - len(kept)} older messages cut to fit the summarizer's window]")
    return [Message(role="system", content=system), Message(role="user", content=head + "\n".join(kept))]


@dataclass
class LLMSummarizer:
    """Asks a provider for strict JSON; transport errors get one retry, invalid JSON none; then the rules."""

    provider: Provider
    mode: SummaryMode = "llm"
    sleep: Callable[[float], None] = time.sleep
    output_tokens: ClassVar[int] = OUTPUT_TOKENS
    reply_schema: ClassVar[dict | None] = SUMMARY_SCHEMA  # the grammar the reply is held to
    # Caps the request (transcript + output): prompt processing time grows with it (the embedded model reads a
    # few hundred tokens a second on 2 cores), and tool outputs are pre-shrunk to one line each, so this still
    # carries a long stretch of conversation; the rules keep the files, commands and errors of the rest.
    max_request_tokens: int = 1536
    deadline_seconds: float = SUMMARY_SECONDS  # for all attempts together; then the rules, saying why
    load_seconds: float = LOAD_SECONDS  # the wait for the embedded model to load, before the time limit starts
    # "ok" / "invalid" / "loading" / "transport" / "deadline" / "stopped" / "ungrounded" / "empty", for fidelity
    # reports
    attempts: list[str] = field(default_factory=list)
    tokens_used: int = 0  # model tokens of the summary being made (prompt and reply)
    _exact_counter: TokenCounter | None = field(default=None, repr=False)
    _stopped: threading.Event = field(default_factory=threading.Event, repr=False)  # see stop
    _asking: CancelToken | None = field(default=None, repr=False)  # the request under way

    def stop(self) -> None:
        """The chat is closing: the summary under way gives up on the model now (its request, or the wait for the
        model to load) and the rules write it, the record saying why; so does every later one of this summarizer.
        Called from another thread: closing waited out the time limit, and the model's load, before."""
        self._stopped.set()
        if self._asking is not None:
            self._asking.cancel()

    def _check_stopped(self) -> None:
        if self._stopped.is_set():
            self.attempts.append("stopped")
            raise SummaryFallback(CHAT_CLOSED)

    def _counter(self, fallback: TokenCounter) -> TokenCounter:
        """The summarizer's own tokenizer where it has one: the request must fit *its* window."""
        if self._exact_counter is None:
            counter = token_counter(self.provider)
            self._exact_counter = counter if counter.is_exact else fallback
        return self._exact_counter

    def _await_loading(self) -> None:
        """Wait up to `load_seconds` for the embedded model to load (it goes on loading after that, for the next
        summary); raises SummaryFallback saying why when it does not load or takes longer."""
        if not isinstance(self.provider, LocalProvider):
            return
        provider = self.provider
        try:
            if provider.process.loaded:
                return
        except ProviderError as exc:  # no model file to load
            self.attempts.append("loading")
            raise SummaryFallback(f"the local model did not load: {exc}") from None
        failure: list[ProviderError] = []
        loaded = threading.Event()

        def load() -> None:
            try:
                provider.load()
            except ProviderError as exc:
                failure.append(exc)
            finally:
                loaded.set()

        threading.Thread(target=load, name="precis-summary-model-load", daemon=True).start()
        give_up_at = time.monotonic() + self.load_seconds
        while not loaded.wait(min(STOP_CHECK_SECONDS, max(give_up_at - time.monotonic(), 0))):
            self._check_stopped()
            if time.monotonic() < give_up_at:
                continue
            self.attempts.append("loading")
            raise SummaryFallback(f"the local model was still loading after {self.load_seconds:g} s (the wait for "
                                  "it to load, apart from the summary's time limit)")
        if failure:
            self.attempts.append("loading")
            raise SummaryFallback(f"the local model did not load: {failure[0]}")

    def _ask(self, request: SummaryRequest) -> LLMSummaryOut:
        self._await_loading()
        counter = self._counter(request.counter)
        # The schema bounds the JSON to well under this many tokens; the rendered text is cut to the cap later.
        output_tokens = min(self.output_tokens, self.provider.context_window() // 4)
        window = min(self.provider.context_window(), self.max_request_tokens)
        prompt = self._prompt(request, window, output_tokens, counter)
        last_error: ProviderError | None = None
        reply: str | None = None
        self._asking = cancel = CancelToken()
        if self._stopped.is_set():  # stop came before this request could be cancelled
            cancel.cancel()
        timer = threading.Timer(self.deadline_seconds, cancel.cancel)
        timer.daemon = True
        timer.start()
        try:
            for attempt in range(TRANSPORT_ATTEMPTS):
                if attempt:
                    self._check_stopped()
                    self.sleep(RETRY_BASE_SECONDS * 2 ** (attempt - 1))
                try:
                    # Greedy decoding: the same stretch of conversation gives the same summary.
                    answer = complete(self.provider, prompt, max_tokens=output_tokens, temperature=0.0,
                                      json_schema=self.reply_schema, cancel=cancel)
                except Cancelled:
                    break
                except ModelProcessDied as exc:
                    # A crashed model process would likely crash again on the same request: the rules, now.
                    last_error = exc
                    break
                except ProviderError as exc:
                    last_error = exc
                    continue
                # Counted where the server reports no usage (llama_cpp.server's streams do not).
                used = answer.usage or Usage(counter.prompt_tokens(prompt), counter.count_text(answer.text))
                self.tokens_used += used.prompt_tokens + used.completion_tokens
                reply = answer.text
                break
        finally:
            timer.cancel()
            self._asking = None
        if reply is None:
            self._check_stopped()
        if reply is None and cancel.cancelled:
            self.attempts.append("deadline")
            raise SummaryFallback(f"the model took longer than {self.deadline_seconds:g} s, the summary's time limit")
        if reply is None:
            self.attempts.append("transport")
            raise SummaryFallback(f"summarizer unavailable: {last_error}")
        out = self._parse(reply)
        source = "\n".join(m.content + "".join(json.dumps(c.arguments) for c in m.tool_calls)
                            for m in request.messages).lower()
        out, dropped = ground(out, source)
        if dropped:
            log.info("dropped %d pieces of the model's summary that named things not in the transcript", dropped)
        if not out.narrative:
            self.attempts.append("ungrounded")
            raise SummaryFallback("the model's narrative named things that are not in the transcript")
        out = without_noise(out)
        if not says_something(out.narrative):
            self.attempts.append("empty")
            raise SummaryFallback("the model's narrative was punctuation, numbering or markup only")
        self.attempts.append("ok")
        return out

    def _prompt(self, request: SummaryRequest, window: int, output_tokens: int,
                counter: TokenCounter) -> list[Message]:
        return build_request(request, window, output_tokens, counter)

    def _parse(self, reply: str) -> LLMSummaryOut:
        try:
            # strict=False: a raw newline inside a string is still the JSON the model meant.
            return LLMSummaryOut.model_validate(json.loads(reply, strict=False))
        except (ValueError, ValidationError) as exc:
            self.attempts.append("invalid")
            preview = redact(reply[:200])[0]
            errors = exc.error_count() if isinstance(exc, ValidationError) else 0
            problem = counted(errors, 'schema error') if errors else "not JSON"
            log.warning("summarizer returned invalid JSON (%s); first 200 chars: %r", problem, preview)
            raise SummaryFallback(f"summarizer returned invalid JSON ({problem})") from None

    def _draft(self, request: SummaryRequest, out: LLMSummaryOut) -> SummaryDraft:
        facets = Facets(decisions=out.decisions, action_items=action_items(out),
                        unresolved_questions=out.unresolved_questions, entities=out.entities,
                        participants=sorted({m.role for m in request.messages}))
        text = fit_text(render_llm_text(out), request.max_tokens, request.counter)
        return SummaryDraft(text=text, key_points=out.key_points[:MAX_KEY_POINTS], facets=facets, mode=self.mode)

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        self.tokens_used = 0
        try:
            out = self._ask(request)
        except SummaryFallback as exc:
            if request.abort_on_failure:
                raise SummarizationFailed(str(exc)) from None
            draft = RuleSummarizer().summarize(request)
            draft.fallback_used, draft.fallback_reason = True, str(exc)
        else:
            draft = self._draft(request, out)
            if not draft.fallback_used:
                draft.written_by = f"{self.provider.name}: {self.provider.model}"
        draft.summarizer_tokens = self.tokens_used  # spent even when the answer was not used
        return draft


class SummaryFallback(Exception):
    pass


NARRATIVE_SYSTEM = "You write a short summary of a conversation between a user and an AI assistant."
NARRATIVE_ASK = "Summarize the conversation above in two or three sentences."
NARRATIVE_LINE_CHARS = 160  # of each message, the start
NARRATIVE_OUTPUT_TOKENS = 80
NARRATIVE_CHARS = 600  # LLMSummaryOut's narrative


def narrative_request(request: SummaryRequest, window: int, output_tokens: int,
                      counter: TokenCounter) -> list[Message]:
    """What the people said, for a narrative: the start of each user and assistant message (with the tool calls
    it made; the tools' results are in the rules' trail). Capped to fit `window`: the opening message and as many
    of the newest as fit, in order."""
    system = with_instructions(NARRATIVE_SYSTEM, request)
    lines = [redact(clip(" ".join(block.split()), NARRATIVE_LINE_CHARS))[0]
             for block in render_transcript(request.messages, request.preserve_error_details)
             if not block.startswith("TOOL RESULT")]
    room = window - output_tokens - counter.count_text(system) - counter.count_text(NARRATIVE_ASK) - 32
    opening, newest = lines[:1], list[str]()
    used = sum(counter.count_text(line) + 1 for line in opening)
    if used > room:
        opening, used = [], 0
    for line in reversed(lines[1:]):
        used += counter.count_text(line) + 1
        if used > room:
            break
        newest.insert(0, line)
    text = "\n".join([*opening, *newest])
    return [Message(role="system", content=system), Message(role="user", content=f"{text}\n\n{NARRATIVE_ASK}")]


# Below this many tokens left beside the rules' trail, a narrative would not fit: the model is not asked.
MIN_NARRATIVE_TOKENS = 40
NO_ROOM = "no room for the model's narrative beside the rules' trail"


@dataclass
class HybridSummarizer(LLMSummarizer):
    """The rules' summary (requests, key points, files, commands, errors, decisions) plus the model's narrative,
    which only takes room the trail does not need: a hybrid summary of tool traffic keeps at least what the rules'
    keeps. Of talk, the rules' digest takes six tenths of the cap and the narrative what the digest leaves."""

    mode: SummaryMode = "hybrid"
    # The model writes only the story, in plain text, from the start of each message: a short request and reply
    # with no grammar, so the embedded model finishes within the summary's time limit on two cores
    # (benchmarks/bench_local_model.py); in JSON it wrote worse and slower.
    output_tokens: ClassVar[int] = NARRATIVE_OUTPUT_TOKENS
    reply_schema: ClassVar[dict | None] = None
    max_request_tokens: int = 512

    def _prompt(self, request: SummaryRequest, window: int, output_tokens: int,
                counter: TokenCounter) -> list[Message]:
        return narrative_request(request, window, output_tokens, counter)

    def _parse(self, reply: str) -> LLMSummaryOut:
        text = clip(whole_sentences(" ".join(reply.split())), NARRATIVE_CHARS)
        if not text:
            self.attempts.append("empty")
            raise SummaryFallback("the model's narrative was empty")
        return LLMSummaryOut(narrative=text)

    def summarize(self, request: SummaryRequest) -> SummaryDraft:
        if not is_conversation(request.messages) and self._narrative_room(request) < MIN_NARRATIVE_TOKENS:
            draft = RuleSummarizer().summarize(request)
            draft.fallback_used, draft.fallback_reason = True, NO_ROOM
            return draft
        return super().summarize(request)

    @staticmethod
    def _narrative_room(request: SummaryRequest) -> int:
        """Tokens the cap leaves beside the trail (the rules' key points give way to a narrative)."""
        facets = extract_facets(request.messages)
        return request.max_tokens - request.counter.count_text(render_artifact_trail(facets)) - 16

    def _draft(self, request: SummaryRequest, out: LLMSummaryOut) -> SummaryDraft:
        count = request.counter.count_text
        if is_conversation(request.messages):
            # The dated digest of both speakers takes the trail's place, the narrative the rest.
            facets = conversation_facets(request.messages)
            digest, key_points = conversation_digest(request.messages, request.max_tokens * 6 // 10, request.counter,
                                                    request.date)
            narrative = fit_text(out.narrative.strip(), max(request.max_tokens - count(digest) - 8, 16),
                                 request.counter)
            text = fit_text("\n\n".join(p for p in (digest, narrative) if p), request.max_tokens, request.counter)
            return SummaryDraft(text=text, key_points=key_points[:MAX_KEY_POINTS], facets=facets, mode="hybrid")
        sentences = [s.strip() for s in SENTENCE_END.split(out.narrative) if s.strip()]
        text, key_points, facets = rule_summary(request.messages, max_tokens=request.max_tokens, count_tokens=count,
                                                narrative=sentences)
        if not sentences or sentences[0] not in text:  # the trail needed all the room after all
            draft = RuleSummarizer().summarize(request)
            draft.fallback_used, draft.fallback_reason = True, NO_ROOM
            return draft
        return SummaryDraft(text=text, key_points=key_points, facets=facets, mode="hybrid")


def make_summarizer(mode: SummaryMode, provider: Provider | None = None,
                    deadline_seconds: float = SUMMARY_SECONDS) -> Summarizer:
    if mode == "rule":
        return RuleSummarizer()
    if provider is None:
        raise ValueError(f"summary mode {mode!r} needs a model provider")
    if deadline_seconds <= 0:
        raise ValueError(f"a summary's time limit must be positive, got {deadline_seconds:g} s")
    kind = LLMSummarizer if mode == "llm" else HybridSummarizer
    return kind(provider, deadline_seconds=deadline_seconds)
