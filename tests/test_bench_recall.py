"""benchmarks/bench_recall.py measures the search it names: `precis compact --probes` recalls through it."""

import pytest

from benchmarks.bench_recall import VARIANTS, recalled_answers
from benchmarks.fidelity import CONVERSATIONS_DIR


def finds_nothing(index, query, limit):
    return []


@pytest.mark.slow
def test_the_candidate_search_is_the_one_the_probes_recall_through():
    conversation = [CONVERSATIONS_DIR / "locomo_2.jsonl"]
    kept, asked = recalled_answers(VARIANTS["shipped"], conversation)
    kept_without, asked_without = recalled_answers(finds_nothing, conversation)
    # A search that finds nothing leaves the prompts only their summaries: fewer answers, the same questions.
    assert asked_without == asked > 0
    assert kept_without < kept
