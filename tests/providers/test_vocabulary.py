"""The app's token counts are llama.cpp's own: the vocabulary loaded without the weights tokenizes every message of
the shared transcripts and conversations as the model server (the same llama.cpp, weights loaded) does, and the
prompt's framing (the GGUF's chat template, rendered with Jinja2 here) is the one llama.cpp's own template engine
writes."""

from __future__ import annotations

import httpx
import pytest
from precis.core.providers import vocabulary
from precis.core.providers.local import find_model_path, load_vocabulary, to_template_messages
from precis.core.storage.interchange import read_transcript

from tests.conftest import CONVERSATIONS_DIR, TRANSCRIPTS


def shared_messages():
    paths = [*TRANSCRIPTS, *sorted(p for p in CONVERSATIONS_DIR.glob("*.jsonl") if p.name.count(".") == 1)]
    return [message for path in paths for message in read_transcript(path)]


@pytest.mark.slow
def test_the_vocabulary_loads_without_the_weights():
    lib = vocabulary.llama_library()
    lines: list[str] = []

    @vocabulary._LogCallback
    def keep(level, text, user_data):
        lines.append(text.decode("utf-8", "replace"))

    lib.llama_log_set(keep, None)
    try:
        vocab = vocabulary.Vocabulary(find_model_path())
    finally:
        lib.llama_log_set(vocabulary._quiet, None)
    try:
        assert any("vocab only - skipping tensors" in line for line in lines)
        assert vocab.eos == "<|im_end|>" and vocab.template.bos == "<|im_start|>"
    finally:
        vocab.close()


def test_a_special_token_spelled_in_a_message_counts_as_text_but_frames_the_prompt_as_the_token():
    vocab = load_vocabulary(find_model_path())
    assert vocab.count("<|im_end|>") == len(vocab.tokenize("<|im_end|>", special=False)) > 1
    assert vocab.tokenize("<|im_end|>", special=True) == [2]


@pytest.mark.slow
@pytest.mark.model
def test_shared_messages_count_as_the_model_server_tokenizes_them(llama_server):
    vocab = load_vocabulary(find_model_path())
    server = llama_server.removesuffix("/v1")
    every = shared_messages()
    assert len(every) > 1000
    # A spread of 200 and the 20 longest: a thousand requests take minutes on a loaded 2-core machine.
    messages = [*every[::len(every) // 200], *sorted(every, key=lambda message: len(message.content))[-20:]]
    # A connection per request: llama.cpp's server closes an idle kept-alive one after 5 s, racing the next request
    # on a loaded machine.
    with httpx.Client(base_url=server, timeout=60, limits=httpx.Limits(max_keepalive_connections=0)) as client:
        differing = []
        for message in messages:
            served = client.post("/tokenize", json={"content": message.content, "add_special": False,
                                                    "parse_special": False}).json()["tokens"]
            if vocab.count(message.content) != len(served) or vocab.tokenize(message.content, special=False) != served:
                differing.append(message.id)
    assert differing == []


@pytest.mark.slow
@pytest.mark.model
def test_the_prompt_is_framed_as_llama_cpps_own_template_engine_frames_it(llama_server):
    vocab = load_vocabulary(find_model_path())
    server = llama_server.removesuffix("/v1")
    messages = shared_messages()
    # A connection per request: llama.cpp's server closes an idle kept-alive one after 5 s, racing the next request
    # on a loaded machine.
    with httpx.Client(base_url=server, timeout=60, limits=httpx.Limits(max_keepalive_connections=0)) as client:
        for start in range(0, 60, 6):
            # Ending on the user's turn as Precis's prompts do (llama.cpp takes a final assistant turn as a prefill).
            chat = [*to_template_messages(messages[start:start + 6]), {"role": "user", "content": "Go on."}]
            prompt = client.post("/apply-template", json={"messages": chat}).json()["prompt"]
            served = client.post("/tokenize", json={"content": prompt, "add_special": False,
                                                    "parse_special": True}).json()["tokens"]
            assert vocab.template.render(chat) == prompt
            assert vocab.prompt_tokens(chat) == served
