"""When the suggestion of a better model is made and what it says: once, at the third reply of the built-in model
or its first answer that needed recalled text; naming the best measured catalogue model against the built-in one, or,
while none is measured, the built-in model's own measured answers, as docs/fidelity.md reports them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from precis.core.models.catalogue import CATALOGUE_FILE, CatalogueError, read_catalogue, read_embedded
from precis.core.models.suggestion import SuggestionRule, suggestion_text

FIDELITY = Path(__file__).parents[2] / "docs" / "fidelity.md"


@given(st.lists(st.booleans(), max_size=12))
def test_it_is_made_once_at_the_third_reply_or_the_first_that_needed_recalled_text(replies):
    rule = SuggestionRule(dismissed=False)
    said = [rule.after_reply(recalled) for recalled in replies]
    due = next((number for number, recalled in enumerate(replies) if recalled or number == 2), None)
    assert [number for number, reason in enumerate(said) if reason is not None] == ([] if due is None else [due])
    if due is not None:
        assert said[due] == ("recall" if replies[due] else "replies")


@given(st.lists(st.booleans(), max_size=12))
def test_once_dismissed_it_is_never_made(replies):
    rule = SuggestionRule(dismissed=True)
    assert [rule.after_reply(recalled) for recalled in replies] == [None] * len(replies)


def test_the_built_in_models_figures_are_the_ones_docs_fidelity_reports():
    """The Answers table's row for all three conversations: asked, answer in Precis's prompt, Precis's answers."""
    row = re.search(r"^\| all three \| (\d+) \| \d+% \((\d+)/(\d+)\) \| (\d+)% \|", FIDELITY.read_text(), re.MULTILINE)
    assert row is not None, "docs/fidelity.md has no 'all three' row in its Answers table"
    asked, in_prompt, of, rate = (int(group) for group in row.groups())
    embedded = read_embedded()
    assert (embedded.asked, embedded.answer_in_prompt) == (asked, in_prompt) and of == asked
    assert round(embedded.answer_rate * 100) == rate


def test_while_nothing_is_measured_it_names_the_built_in_models_answers():
    text = suggestion_text("replies", read_embedded(), read_catalogue())
    assert text.startswith("On Precis's answer test the built-in SmolLM2 135M Instruct answered 0 of 12 questions "
                           "right, though the answer was in its prompt for 11.")
    assert "(not measured here yet)" in text


def measured_catalogue(tmp_path, rates: dict[str, float]) -> Path:
    """The real catalogue with answer rates filled in, as `benchmarks.fidelity --answers` would give them."""
    data = json.loads(CATALOGUE_FILE.read_text(encoding="utf-8"))
    for model in data["models"]:
        model["answer_rate"] = rates.get(model["name"])
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_once_measured_it_names_the_best_models_rate_beside_the_built_in_ones(tmp_path):
    path = measured_catalogue(tmp_path, {"qwen2.5-1.5b": 0.42, "llama3.2-3b": 0.58, "smollm2-360m": 0.08})
    text = suggestion_text("recall", read_embedded(path), read_catalogue(path))
    assert text.startswith("This answer needed earlier messages Precis recalled into the prompt")
    assert "Llama 3.2 3B Instruct answered 58% of the questions right, the built-in SmolLM2 135M Instruct 0%." in text
    assert "not measured" not in text


@pytest.mark.parametrize(("change", "said"), [
    ({"answered": 13}, "catalogue.json embedded: answered (13) and answer_in_prompt (11) must be counts of the 12"),
    ({"asked": "12"}, "catalogue.json embedded.asked: '12' is not a whole number"),
    ({"title": None}, "catalogue.json embedded.title: None is not text"),
])
def test_a_bad_embedded_figure_is_refused_naming_the_field(tmp_path, change, said):
    data = json.loads(CATALOGUE_FILE.read_text(encoding="utf-8"))
    data["embedded"].update(change)
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(CatalogueError, match=re.escape(said)):
        read_embedded(path)
