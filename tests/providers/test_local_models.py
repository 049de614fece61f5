"""Any local model: GGUF files found in the folders of LM Studio, Jan, GPT4All and llama.cpp's cache (a temporary home
laid out like theirs, holding a copy of the real SmolLM2 GGUF), chosen, chatted with and summarizing; a file that is
not a GGUF refused naming it; and an Ollama server's models, found and chatted with."""

from __future__ import annotations

import re
import shutil
import threading

import pytest
from precis.core.context.engine import Budget, ContextEngine
from precis.core.model.messages import Message
from precis.core.model.tokens import TokenCounter
from precis.core.providers.base import ProviderUnavailable, complete, token_counter
from precis.core.providers.discovery import (
    FoundModel,
    describe_gguf,
    find_gguf_models,
    find_local_models,
    find_ollama_models,
    ollama_server_url,
)
from precis.core.providers.gguf import NotAModel, read_info
from precis.core.providers.local import find_model_path
from precis.core.providers.registry import make_provider
from precis.core.settings import SummarizationPolicy
from precis.core.storage.interchange import read_transcript
from precis.core.summary.summarizers import LLMSummarizer

from tests.conftest import TRANSCRIPTS_DIR, free_port
from tests.model_file import place_model
from tests.stand_in_ollama import MODEL, MODEL_SIZE, StandInOllama


@pytest.fixture(scope="module")
def lmstudio_home(tmp_path_factory):
    """A home folder laid out like LM Studio's (publisher/model/file.gguf), with the real SmolLM2 GGUF copied in."""
    home = tmp_path_factory.mktemp("home")
    folder = home / ".lmstudio" / "models" / "HuggingFaceTB" / "SmolLM2-135M-Instruct-GGUF"
    folder.mkdir(parents=True)
    place_model(folder / "smollm2-135m-instruct-q4_1.gguf")
    (folder / "README.md").write_text("not a model")
    return home


def test_gguf_files_are_found_in_each_apps_folder_once(tmp_path):
    model = find_model_path()
    for folder in (".cache/lm-studio/models/a/b", "jan/models/m", ".local/share/Jan/data/models/x",
                   ".local/share/nomic.ai/GPT4All", ".cache/llama.cpp"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "model.gguf").symlink_to(model)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "ignored.gguf").write_bytes(b"GGUF")
    cache = tmp_path / "llama-cache"
    cache.mkdir()
    shutil.copy(model, cache / "split-00001-of-00002.gguf")  # a file of its own, not a link to the model
    (cache / "split-00002-of-00002.gguf").write_bytes(b"the rest")  # loaded through its first part

    found = find_gguf_models(tmp_path, env={"LLAMA_CACHE": str(cache)})
    # Symlinks to one file are one model, under the first app that holds it.
    assert [(m.source, m.name) for m in found] == [("LM Studio", "model"), ("llama.cpp", "split-00001-of-00002")]
    assert find_gguf_models(tmp_path / "nobody", env={}) == []


def test_the_window_and_template_come_from_the_gguf_metadata():
    info = read_info(find_model_path())
    assert info.architecture == "llama"
    assert info.context_length == 8192  # SmolLM2-135M's trained window, as the file records it
    assert "<|im_start|>" in info.chat_template


@pytest.mark.parametrize("content, reason", [
    (b"not a model at all" * 10, "does not start with 'GGUF'\\); choose a .gguf model file"),
    (b"GGUF\x03\x00\x00\x00", "cut short: its GGUF header ends early .* download or copy it again"),
    (b"", "does not start with 'GGUF'"),
])
def test_a_file_that_is_not_a_gguf_is_refused_naming_it(tmp_path, content, reason):
    junk = tmp_path / "x.gguf"
    junk.write_bytes(content)
    with pytest.raises(NotAModel, match=reason) as refused:
        read_info(junk)
    assert str(junk) in str(refused.value)
    with pytest.raises(ProviderUnavailable, match="x.gguf"):
        make_provider("local", model_path=str(junk)).load()


def test_a_chosen_file_gone_since_is_named_with_why_in_the_list_and_when_loaded(tmp_path):
    """A model file chosen, then moved or deleted: the list of models showed "[Errno 2] No such file or directory:
    '…'", in Python's words, where every other file that is no model is named in the app's."""
    gone = tmp_path / "moved-away.gguf"
    gone.write_bytes(find_model_path().read_bytes()[:4096])
    gone.unlink()
    told = f"cannot read the model file {gone}: No such file or directory"
    assert describe_gguf(gone, "chosen file").problem == told
    with pytest.raises(ProviderUnavailable, match=re.escape(told)):
        make_provider("local", model_path=str(gone)).load()


def test_a_gguf_cut_short_in_its_weights_is_refused_saying_to_fetch_it_again(tmp_path):
    """A download stopped past the header passed the header's check, then failed as 'cannot load the vocabulary of
    the model file …: llama.cpp refused it', which said neither why nor what to do."""
    whole = find_model_path().read_bytes()
    for kept in (2_000_000, len(whole) - 1):  # past the header, into the weights; one byte short
        cut = tmp_path / "cut.gguf"
        cut.write_bytes(whole[:kept])
        told = (rf"{cut} is cut short: it has {kept:,} bytes of the {len(whole):,} its weights take \(an unfinished "
                r"download or copy\); download or copy it again")
        with pytest.raises(NotAModel, match=told):
            read_info(cut)
        with pytest.raises(ProviderUnavailable, match=told):
            make_provider("local", model_path=str(cut)).load()
    assert read_info(find_model_path()).name  # the whole file is not taken for cut short


@pytest.mark.model
@pytest.mark.slow
def test_a_gguf_found_in_lm_studios_folder_is_chosen_chatted_with_and_summarizes(lmstudio_home):
    [found] = find_local_models(lmstudio_home, env={}, ollama_url=f"http://127.0.0.1:{free_port()}")
    assert found.source == "LM Studio" and found.path.name == "smollm2-135m-instruct-q4_1.gguf"
    provider = make_provider("local", model_path=str(found.path))
    try:
        provider.load()
        assert provider.process.path == found.path  # this file, not the built-in model
        assert provider.context_window() == 8192  # from its metadata
        reply = complete(provider, [Message("user", "Name one planet of the solar system.")], max_tokens=16,
                         temperature=0)
        assert reply.text.strip()
        # Counts follow this model's vocabulary: the reply's reported size is its text counted by the same model.
        assert reply.usage.completion_tokens == provider.count_tokens(reply.text)
        assert provider.count_tokens("Jupiter") != provider.count_tokens("Jupiter is the largest planet")

        summarizer = LLMSummarizer(provider, deadline_seconds=600)  # the model's answer, however busy the machine
        engine = ContextEngine(Budget(window=provider.context_window(), reserve_output=512),
                               SummarizationPolicy(mode="llm"), token_counter(provider), summarizer)
        for message in read_transcript(TRANSCRIPTS_DIR / "sweagent_2.jsonl"):
            engine.append(message, auto=False)
        record = engine.summarize_now()
        assert summarizer.attempts == ["ok"] and not record.fallback_used and record.text.strip()
    finally:
        provider.close()


def test_no_ollama_server_shows_no_ollama_models():
    assert find_ollama_models(f"http://127.0.0.1:{free_port()}") == []


@pytest.mark.model
@pytest.mark.slow
def test_an_ollama_model_is_found_and_chatted_with_through_its_openai_endpoint(ollama, tmp_path):
    [found] = find_local_models(tmp_path, env={}, ollama_url=ollama.url)
    assert (found.source, found.name, found.base_url) == ("Ollama", "smollm2:135m", f"{ollama.url}/v1")
    provider = make_provider("openai", base_url=found.base_url, model=found.name)
    reply = complete(provider, [Message("user", "Name one planet of the solar system.")], max_tokens=16,
                     temperature=0)
    assert reply.text.strip()
    summarizer = LLMSummarizer(provider, deadline_seconds=600)  # the model's answer, however busy the machine
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="llm"), TokenCounter(),
                           summarizer)
    for message in read_transcript(TRANSCRIPTS_DIR / "sweagent_2.jsonl"):
        engine.append(message, auto=False)
    record = engine.summarize_now()
    assert summarizer.attempts == ["ok"] and not record.fallback_used and record.text.strip()


def test_found_files_carry_their_size_and_window_and_a_junk_file_its_reason(lmstudio_home, tmp_path):
    junk_folder = tmp_path / "jan" / "models"
    junk_folder.mkdir(parents=True)
    (junk_folder / "x.gguf").write_bytes(b"not a model at all")
    [model] = find_gguf_models(lmstudio_home, env={})
    assert model.size == find_model_path().stat().st_size and model.context_length == 8192 and model.problem is None
    [junk] = find_gguf_models(tmp_path, env={})
    assert junk.source == "Jan" and "x.gguf is not a GGUF model file" in junk.problem


@pytest.mark.parametrize("value, url", [
    ("", "http://localhost:11434"),
    ("127.0.0.1", "http://127.0.0.1:11434"),
    ("0.0.0.0:8080", "http://0.0.0.0:8080"),
    ("https://ollama.example.org/", "https://ollama.example.org"),
    ("http://10.0.0.5:11435", "http://10.0.0.5:11435"),
])
def test_the_ollama_server_is_where_ollama_host_says_as_for_ollamas_own_clients(value, url):
    assert ollama_server_url({"OLLAMA_HOST": value}) == url


def test_an_ollama_listing_gives_each_model_its_name_size_and_openai_endpoint():
    # A loopback stand-in for the Ollama server (none can be installed here), answering /api/tags as Ollama does.
    server = StandInOllama()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        assert find_ollama_models(server.url) == [
            FoundModel(source="Ollama", name=MODEL, base_url=f"{server.url}/v1", size=MODEL_SIZE)]
    finally:
        server.shutdown()
        server.server_close()
