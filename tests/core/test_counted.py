"""counted: every count Precis says before a noun agrees with it ('1 message', never '1 messages')."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from precis.core.model.counted import counted, plural

NOUNS = {"message": "messages", "summary": "summaries", "token": "tokens", "match": "matches", "process": "processes",
         "key": "keys", "entry": "entries", "old tool output": "old tool outputs", "earlier message": "earlier messages",
         "line": "lines", "tool": "tools", "part": "parts", "chat": "chats", "box": "boxes"}


def test_plurals_of_the_nouns_precis_counts():
    assert {noun: plural(noun) for noun in NOUNS} == NOUNS


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from(sorted(NOUNS)))
def test_one_takes_the_singular_and_every_other_count_the_plural(count, noun):
    said = counted(count, noun)
    number, _, words = said.partition(" ")
    assert int(number.replace(",", "")) == count
    assert words == (noun if count == 1 else NOUNS[noun])


def test_a_summary_of_one_message_is_told_in_the_singular():
    """'Summary undone: 1 messages are back in the context', '1 messages → 1 summary': what a summary of a single
    message said (Summarize up to here on the first message)."""
    from precis.core.model.records import CoveredMessage, SummaryRecord, fold_description

    record = SummaryRecord(depth=1, mode="rule", text="t", covered=[CoveredMessage(id="m1", sha256="0")],
                           tokens_before=120, tokens_after=60)
    assert record.undone_description() == "1 message is back in the context"
    assert record.result().describe().startswith("1 message → 1 summary · ")
    assert fold_description(["rule"]) == "fold of 1 summary (rule)"
