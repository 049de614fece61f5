"""Each reply's record rebuilds the prompt it was written from (issue 26), whatever happened before and after it:
summaries, merges at the chain's depth, undo, pins and unpins, recall, shrunk tool outputs, tools, a calibrated
count. No model: the engine's own prompts are the reference (the model's token ids: tests/chat/test_sent_prompts.py)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import example, given, settings
from hypothesis import strategies as st
from precis.core.chat.sent_prompts import kept_before
from precis.core.context.engine import Budget, ContextEngine
from precis.core.context.sent_record import (
    CHECK_WIDTH,
    PromptSettings,
    SentRecord,
    fingerprint,
    rebuild,
    sent_record,
)
from precis.core.context.summarizing import SummaryNotSmaller
from precis.core.model.messages import Message
from precis.core.model.tokens import TokenCounter
from precis.core.settings import SummarizationPolicy

from tests.core.test_engine import TOOL_SPECS, TOPICS, long_text, tool_pair

STEPS = ["user", "reply", "tool", "pin", "unpin", "ask", "summarize", "undo", "calibrate"]


# Summaries merged at the chain's depth after replies that were sent them (a merge renumbers every summary), and a
# message pinned, then unpinned, in a chat over its budget (pins decide what is left out).
MERGES = ["user", "reply", "user", "reply", "user", "reply", "summarize"] * 7
PINS = ["user", "reply", "tool", "pin", "reply", "tool", "reply", "tool", "reply", "tool", "reply", "tool", "reply",
        "unpin", "user", "reply"]
# The first message pinned while later ones are summarized, then unpinned and summarized itself: its summary goes
# before theirs in the chain, and every summary's header says its new depth.
UNPINNED_FIRST = ["user", "pin", *["user"] * 11, "calibrate", *["user"] * 4, "unpin", "user", "reply"]


@settings(deadline=None)
@example(steps=MERGES, tools=False, max_depth=3)
@example(steps=PINS, tools=True, max_depth=5)
@example(steps=UNPINNED_FIRST, tools=False, max_depth=2)
@given(steps=st.lists(st.sampled_from(STEPS), min_size=1, max_size=50), tools=st.booleans(),
       max_depth=st.sampled_from([2, 3, 5]))
def test_every_replys_record_rebuilds_what_it_was_sent(steps, tools, max_depth):
    engine = ContextEngine(Budget(window=1400, reserve_output=128),
                           SummarizationPolicy(mode="rule", keep_recent=2, min_messages=2, recall_ratio=0.3,
                                               max_depth=max_depth),
                           TokenCounter(), system_prompt="Answer briefly.")
    if tools:
        engine.set_tools(TOOL_SPECS)
    kept: dict[str, str] = {}  # the store's prompt_setup rows
    sent: dict[str, list[Message]] = {}  # each reply's prompt, as assembled then
    for n, step in enumerate(steps):
        text = f"{TOPICS[n % 3]} " + long_text(25 + n % 9, f"w{n}")
        if step == "user":
            engine.append(Message(role="user", content=text))
        elif step == "ask":  # recall fills free room with archived messages on this topic
            engine.append(Message(role="user", content=f"what about the {TOPICS[n % 3]}?"), auto=False)
        elif step == "reply":
            prompt = engine.assemble()
            record, prompt_settings = sent_record(engine, prompt)
            kept[prompt_settings.key] = prompt_settings.as_json()
            earlier = kept_before(engine.messages, len(engine.messages))
            latest = next(earlier, None)
            before = SentRecord.decode(latest, earlier) if latest else None
            reply = Message(role="assistant", content=text, sent=record.encode(before))
            sent[reply.id] = prompt.messages
            engine.append(reply)
        elif step == "tool":
            for message in tool_pair("Bash", {"command": f"make t{n}"}, "\n".join([text] * 6)):
                engine.append(message)
        elif step == "pin" and engine.messages and not engine.is_archived(engine.messages[-1].id):
            engine.set_pinned(engine.messages[-1].id, True)  # a pinned tool output is never shrunk
        elif step == "unpin" and (pinned := [m for m in engine.messages if m.pinned]):
            engine.set_pinned(pinned[0].id, False)
        elif step == "summarize" and engine.can_summarize():
            try:
                engine.summarize_now()
            except SummaryNotSmaller:  # one that saves nothing is refused: nothing changed
                pass
        elif step == "undo" and engine.chain():
            engine.undo_last()
        elif step == "calibrate":
            engine.counter.calibrate(1000, 1100 + 10 * n)

    for position, message in enumerate(engine.messages):
        if message.id not in sent:
            continue
        record = SentRecord.decode(message.sent, kept_before(engine.messages, position))
        _, prompt = rebuild(record, PromptSettings.from_json(kept[record.settings]), engine.messages[:position],
                            list(engine.records), engine.counter)
        assert fingerprint(prompt.messages) == fingerprint(sent[message.id])
        assert [(m.role, m.content) for m in prompt.messages] == [(m.role, m.content) for m in sent[message.id]]


def test_a_record_keeps_only_what_changed_since_the_reply_before():
    first = SentRecord(0xBEEF, (40, 41, 42, 7), ("0123456789ab",), (3,), "f8527f1256429b32", 1.25)
    second = replace(first, check=0xCAFE, recalled=())
    third = replace(second, chain=("0123456789ab", "ba9876543210"), recalled=(9,))
    assert len(second.encode(first)) == CHECK_WIDTH  # its checksum alone
    assert SentRecord.decode(second.encode(first), [first.encode(None)]) == second
    kept = third.encode(second)
    assert "ba9876543210" in kept and "f8527f1256429b32" not in kept and "1.25" not in kept
    assert SentRecord.decode(kept, [second.encode(first), first.encode(None)]) == third


HEX = "0123456789abcdef"
RECORDS = st.builds(SentRecord, check=st.integers(0, 2**32 - 1),
                    recalled=st.lists(st.integers(0, 10**6), max_size=30).map(tuple),
                    chain=st.lists(st.text(HEX, min_size=12, max_size=12), max_size=6).map(tuple),
                    pinned=st.sets(st.integers(0, 10**6), max_size=8).map(sorted).map(tuple),
                    settings=st.text(HEX, min_size=16, max_size=16), factor=st.floats(0.01, 100))


@given(record=RECORDS, before=st.none() | RECORDS)
def test_a_record_reads_back_as_it_was_kept(record, before):
    kept = record.encode(before)
    assert SentRecord.decode(kept, [before.encode(None)] if before else []) == record
    # An older Precis finds no "=" in it (so it says it cannot read it and states everything in its next record),
    # and a branch of versions, kept as JSON, keeps it as it is.
    assert not set(kept) & set('="\\')


@given(runs=st.lists(st.tuples(st.integers(0, 24_335), st.integers(1, 3)), max_size=12))
def test_recalled_places_cost_at_most_three_characters_a_run_in_a_chat_of_24k_messages(runs):
    places = tuple(place for first, more in runs for place in range(first, first + more))
    record = SentRecord(0, places, (), (), "f8527f1256429b32", 1.0)
    assert len(record.encode(record)) <= CHECK_WIDTH + 3 * len(runs)
