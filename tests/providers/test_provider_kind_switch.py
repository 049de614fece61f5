"""Settings → Provider switched from a server back to the local model: what was typed in the server's boxes (its
base URL, its model name) is no part of a local choice. It kept the dialog's OK disabled ("the local model has no
base URL or model name to set") until both boxes were emptied by hand."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from precis.core.settings import ProviderChoice

typed = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(base_url=typed, model=typed, model_path=st.sampled_from(["", "/models/qwen.gguf"]))
def test_a_local_choice_is_made_whatever_the_server_boxes_hold(base_url, model, model_path):
    values = {"kind": "local", "base_url": base_url, "model": model, "model_path": model_path}
    choice = ProviderChoice.model_validate(ProviderChoice.as_used(values))
    assert (choice.kind, choice.base_url, choice.model, choice.model_path) == ("local", "", "", model_path)


@given(kind=st.sampled_from(["openai", "anthropic"]), model=typed)
def test_a_server_keeps_what_was_typed(kind, model):
    values = {"kind": kind, "base_url": "http://localhost:11434/v1", "model": model}
    assert ProviderChoice.as_used(values) == values
