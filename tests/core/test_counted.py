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


def test_what_the_model_reads_of_a_summary_of_one_message_is_in_the_singular():
    """The header of a summary the model reads said "[Summary 1 of earlier conversation: 1 messages, rule mode]",
    and the digest's own heading "Conversation digest of 1 messages (user)"."""
    from precis.core.context.engine import Budget, ContextEngine
    from precis.core.model.messages import Message
    from precis.core.model.tokens import TokenCounter
    from precis.core.settings import SummarizationPolicy

    first = Message(role="user", content=" ".join(
        f"Table {n} of the invoices database is copied by worker {n % 7} after the export ends, checked against "
        f"its {n * 13} rows, and kept for {n + 3} days." for n in range(40)))
    rest = [Message(role="assistant" if n % 2 == 0 else "user", content=f"Step {n} of the move is done.")
            for n in range(12)]
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="rule"), TokenCounter())
    for message in [first, *rest]:
        engine.append(message, auto=False)
    engine.summarize_now(up_to=first.id)
    [summary] = [m for m in engine.assemble().messages if m.content.startswith("[Summary")]
    header, text = summary.content.split("\n", 1)
    assert header == "[Summary 1 of earlier conversation: 1 message, rule mode]"
    assert text.startswith("Conversation digest of 1 message (user)\n")  # a conversation's (no tools) own heading


def test_the_marker_where_a_summary_had_no_room_counts_in_the_singular_and_is_known_in_every_form():
    """"[1 earlier messages archived; no room for a summary]" is now said in the singular; the markers stored before
    (and one of over a thousand messages, its count with a thousands separator) are still known as no summary."""
    from precis.core.context.summarizing import is_marker, no_room_marker

    assert no_room_marker(1) == "[1 earlier message archived; no room for a summary]"
    assert no_room_marker(1024) == "[1,024 earlier messages archived; no room for a summary]"
    for text in (no_room_marker(1), no_room_marker(1024), "[1 earlier messages archived; no room for a summary]",
                 "[2 earlier messages archived; no room for a summary]"):
        assert is_marker(text), text
    assert not is_marker("Summary of 1 earlier message (1 user, 0 assistant, 0 tool results)")
