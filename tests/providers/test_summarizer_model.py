"""A separate summarizer model (the documents' lighter model for summaries): the chat's model by default, the
embedded local model, or another provider and model, as the summarization settings say. Real peers: the embedded
model and llama.cpp's OpenAI-compatible server over loopback."""

from __future__ import annotations

import logging

import pytest
from precis.core.providers.local import LocalProvider
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.settings import SUMMARIZATION_KEY, SummarizationPolicy, policy_errors
from precis.core.storage.chats import restore_engine, summarizer_for
from precis.core.storage.interchange import read_transcript
from precis.core.storage.store import open_store

from tests.conftest import TRANSCRIPTS_DIR

pytestmark = pytest.mark.model


def _summarize_stored_chat(tmp_path, policy: dict, chat_provider, messages: int = 24):
    """A stored chat summarized as the window does it: the engine and its summarizer built from the settings."""
    with open_store(tmp_path / "data") as store:
        store.set_setting(SUMMARIZATION_KEY, policy)
        chat = store.create_chat("agent run")
        store.add_messages(chat, read_transcript(TRANSCRIPTS_DIR / "sweagent_2.jsonl")[:messages])
        summarizer = summarizer_for(SummarizationPolicy(**policy), chat_provider)
        summarizer.deadline_seconds = 600  # this checks who wrote the summary, on a machine that may be busy
        engine, _ = restore_engine(store, chat, default_window=8192, summarizer=summarizer)
        return summarizer, engine.summarize_now()


@pytest.mark.slow
def test_the_local_model_summarizes_a_chat_served_by_llama_cpp_server(tmp_path, llama_server, local_provider):
    chat_provider = OpenAICompatProvider(llama_server, model="smollm2")
    # The first 12 messages: of the first 24 (the window cuts the older ones) the 135M model's narrative was "[*]",
    # copied from a tool's output, on some machines (rightly refused as markup only); of these it is a sentence.
    summarizer, record = _summarize_stored_chat(tmp_path, {"mode": "llm", "summarizer": "local"}, chat_provider,
                                                messages=12)
    assert isinstance(summarizer.provider, LocalProvider)
    assert summarizer.attempts == ["ok"] and record.mode == "llm" and not record.fallback_used
    assert record.written_by == "local: SmolLM2-135M-Instruct"
    # The summary call's cost is on the record (shown in the inspector and `precis history`).
    assert record.summarizer_tokens > 0


@pytest.mark.slow
def test_another_provider_summarizes_a_chat_on_the_local_model(tmp_path, llama_server, local_provider):
    policy = {"mode": "llm", "summarizer": "other", "summarizer_provider": "openai",
              "summarizer_base_url": llama_server, "summarizer_model": "smollm2"}
    summarizer, record = _summarize_stored_chat(tmp_path, policy, local_provider)
    assert isinstance(summarizer.provider, OpenAICompatProvider) and summarizer.provider.model == "smollm2"
    # Answered over HTTP by the server: a summary that did not reach it would be the rules' with the reason.
    assert summarizer.attempts == ["ok"] and not record.fallback_used and record.summarizer_tokens > 0
    assert record.written_by == "openai: smollm2"


def test_the_chats_model_summarizes_by_default(local_provider):
    summarizer = summarizer_for(SummarizationPolicy(mode="hybrid"), local_provider)
    assert summarizer.provider is local_provider


def test_another_summarizer_needs_a_provider_kind():
    errors = policy_errors({"summarizer": "other", "summarizer_provider": "ollama"})
    assert "summarizer_provider ('ollama') must be one of local, openai, anthropic" in errors[""]


def test_a_summarizer_that_cannot_be_used_leaves_the_chats_model_and_says_why(local_provider, caplog, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    policy = SummarizationPolicy(summarizer="other", summarizer_provider="anthropic")
    with caplog.at_level(logging.WARNING, logger="precis.chats"):
        summarizer = summarizer_for(policy, local_provider)
    assert summarizer.provider is local_provider
    assert "the summarizer model cannot be used (no API key for anthropic" in caplog.text


def test_the_summary_time_limit_is_the_policys_for_every_summarizer(local_provider):
    # A hosted model may need longer than the embedded one: the limit is a setting, not a constant.
    for choice in ("chat", "local"):
        summarizer = summarizer_for(SummarizationPolicy(mode="hybrid", summarizer=choice, summary_seconds=42),
                                    local_provider)
        assert summarizer.deadline_seconds == 42
    assert "summary_seconds" in policy_errors({"summary_seconds": 0})


@pytest.mark.slow
def test_precis_summarize_writes_with_the_summarizer_and_time_limit_the_settings_name(tmp_path, llama_server,
                                                                                      monkeypatch):
    """`precis summarize --mode llm` used the embedded model with a 6 s limit whatever Settings → Summarization
    said ('Summaries written by' another server, a longer time limit): on a busy machine its summary was the rules'."""
    from precis.core.cli.main import main

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = tmp_path / "data"
    with open_store(data) as store:
        store.set_setting(SUMMARIZATION_KEY, {"summarizer": "other", "summarizer_provider": "openai",
                                              "summarizer_base_url": llama_server, "summarizer_model": "smollm2",
                                              "summary_seconds": 600})
        chat = store.create_chat("agent run")
        store.add_messages(chat, read_transcript(TRANSCRIPTS_DIR / "sweagent_2.jsonl")[:24])
    assert main(["--data-dir", str(data), "summarize", chat, "--mode", "llm"]) == 0
    with open_store(data) as store:
        [record] = store.load_records(chat)
    assert not record.fallback_used, record.fallback_reason
    assert record.mode == "llm" and record.written_by == "openai: smollm2"
