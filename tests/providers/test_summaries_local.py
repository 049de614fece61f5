"""End to end on the embedded model: LLM and hybrid summaries are schema-valid records, and calibration works."""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest
from precis.core.cli.main import main
from precis.core.context.engine import Budget, ContextEngine
from precis.core.model.messages import Message
from precis.core.model.tokens import TokenCounter
from precis.core.providers.base import complete
from precis.core.providers.local import LocalProvider
from precis.core.settings import SummarizationPolicy
from precis.core.storage.interchange import read_transcript
from precis.core.summary.summarizers import LLMSummarizer

from tests.conftest import TRANSCRIPTS_DIR

pytestmark = pytest.mark.model  # every test here runs the embedded model


@pytest.mark.slow
def test_compact_hybrid_on_a_shared_transcript_writes_records_from_the_model(capsys, local_provider):
    # A generous time limit: this checks what the model writes, on a machine that may be busy with other work.
    code = main(["compact", str(TRANSCRIPTS_DIR / "sweagent_3.jsonl"), "--mode", "hybrid",
                 "--context-tokens", "4096", "--summary-seconds", "600", "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    made = [s for s in result["summaries"] if not s["merged_ids"]]
    assert made, "a 4k window must force summaries on this transcript"
    # The grammar makes every answer schema-valid; the only fallbacks left are a narrative that named things the
    # transcript does not (the grounding check) or said nothing (markup, numbering), and the record says which.
    assert any(s["mode"] == "hybrid" and not s["fallback_used"] for s in made)
    assert all(s["mode"] == "hybrid" or "not in the transcript" in s["fallback_reason"]
               or "punctuation, numbering or markup" in s["fallback_reason"] for s in made), \
        [s["fallback_reason"] for s in made]
    # The files the agent touched (written out by hand from the transcript) survive in what the model sees.
    seen = "\n".join([*(s["text"] for s in result["summaries"]), *(json.dumps(m) for m in result["context"])])
    assert all(name in seen for name in ("reproduce.py", "fields.py"))
    assert result["stats"]["context_tokens"] <= result["stats"]["budget"]


@pytest.mark.slow
def test_llm_summary_from_the_local_model_is_schema_valid(local_provider):
    summarizer = LLMSummarizer(local_provider, deadline_seconds=600)  # the model's answer, however busy the machine
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="llm"),
                           TokenCounter(), summarizer)
    for message in read_transcript(TRANSCRIPTS_DIR / "sweagent_2.jsonl"):
        engine.append(message, auto=False)
    record = engine.summarize_now()
    # Greedy decoding makes this deterministic: the model's summary is the one used, not the rules' fallback.
    assert summarizer.attempts == ["ok"], "the grammar must make the JSON schema-valid"
    assert record.mode == "llm" and not record.fallback_used and record.text.strip()
    assert record.summarizer_tokens > 0  # the call's cost is on the record
    assert record.tokens_after < record.tokens_before


@pytest.mark.slow
def test_calibration_from_real_usage_brings_the_estimate_within_five_percent(local_provider):
    """As in a chat: the usage reported for one reply corrects the estimate of the next, longer prompt."""
    counter = TokenCounter()
    chat = [m for m in read_transcript(TRANSCRIPTS_DIR / "sweagent_3.jsonl") if m.role != "tool"][:8]
    first = chat[:3]
    usage = complete(local_provider, first, max_tokens=1).usage
    before = abs(counter.prompt_raw_tokens(chat) - len(local_provider.prompt_tokens(chat)))
    counter.calibrate(counter.prompt_raw_tokens(first), usage.prompt_tokens)
    actual = complete(local_provider, chat, max_tokens=1).usage.prompt_tokens
    after = abs(counter.prompt_tokens(chat) - actual)
    assert after / actual <= 0.05
    assert after < before, "calibration should have moved the estimate toward the model's count"


@pytest.mark.slow
def test_a_summary_past_its_deadline_is_cancelled_and_the_rules_write_it_saying_why(local_provider):
    """The documents' target is under 10 s a summary: at the deadline generation stops and the rules take over."""
    messages = read_transcript(TRANSCRIPTS_DIR / "sweagent_2.jsonl")[:30]
    summarizer = LLMSummarizer(local_provider, deadline_seconds=0.3)
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="llm"),
                           TokenCounter(), summarizer)
    for message in messages:
        engine.append(message, auto=False)
    record = engine.summarize_now()
    assert summarizer.attempts == ["deadline"]
    assert record.fallback_used and "took longer than 0.3 s" in record.fallback_reason
    assert record.text.strip() and record.tokens_after < record.tokens_before
    # The model is free again: the next request is answered, not refused as busy.
    assert complete(local_provider, messages[:2], max_tokens=1).usage.prompt_tokens > 0


def summarize_first_messages(summarizer: LLMSummarizer):
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="llm"),
                           TokenCounter(), summarizer)
    for message in read_transcript(TRANSCRIPTS_DIR / "sweagent_2.jsonl")[:30]:
        engine.append(message, auto=False)
    return engine.summarize_now()


@pytest.mark.slow
def test_loading_the_model_is_awaited_apart_from_the_time_limit_and_a_long_load_is_named(local_provider):
    """A busy machine, made on demand: the model process is stopped (SIGSTOP) while it loads, then resumed."""
    provider = LocalProvider(n_ctx=2048)  # its own model process, loading now
    provider.launch()
    process_id = provider.process.pid
    os.kill(process_id, signal.SIGSTOP)
    resume = threading.Timer(3.0, os.kill, (process_id, signal.SIGCONT))
    resume.start()
    try:
        summarizer = LLMSummarizer(provider, deadline_seconds=600, load_seconds=1)
        record = summarize_first_messages(summarizer)
        assert summarizer.attempts == ["loading"]
        assert record.fallback_used and "the local model was still loading after 1 s" in record.fallback_reason
        resume.join()
        # It went on loading: the next request is answered.
        assert complete(provider, [Message(role="user", content="Hi")], max_tokens=1).usage.prompt_tokens > 0
        # Loaded, the next summary's time limit counts the model's work alone (the load is not waited on again).
        assert provider.process.loaded
    finally:
        resume.cancel()
        os.kill(process_id, signal.SIGCONT)
        provider.close()


def test_a_model_that_does_not_load_gives_the_rules_summary_saying_why(tmp_path):
    not_a_model = tmp_path / "notes.gguf"
    not_a_model.write_text("these are notes, not a model")
    summarizer = LLMSummarizer(LocalProvider(model_path=not_a_model))
    record = summarize_first_messages(summarizer)
    assert summarizer.attempts == ["loading"]
    assert record.fallback_used and "the local model did not load" in record.fallback_reason
    assert str(not_a_model) in record.fallback_reason
    assert record.text.strip()
