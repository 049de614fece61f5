"""Each reply's record rebuilds the prompt it was written from (issue 26), whatever happened before and after it:
summaries, merges at the chain's depth, undo, pins and unpins, recall, shrunk tool outputs, tools, a calibrated
count. No model: the engine's own prompts are the reference (the model's token ids: tests/chat/test_sent_prompts.py)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from precis.core.chat.sent_prompts import kept_before
from precis.core.context.engine import Budget, ContextEngine
from precis.core.context.sent_record import (
    PromptSettings,
    PromptSetup,
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


@settings(deadline=None)
@example(steps=MERGES, tools=False, max_depth=3)
@example(steps=PINS, tools=True, max_depth=5)
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
            record, setup, prompt_settings = sent_record(engine, prompt)
            kept |= {setup.key: setup.as_json(), prompt_settings.key: prompt_settings.as_json()}
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
        setup = PromptSetup.from_json(kept[record.setup])
        _, prompt = rebuild(record, setup, PromptSettings.from_json(kept[setup.settings]),
                            engine.messages[:position], list(engine.records), engine.counter)
        assert fingerprint(prompt.messages) == fingerprint(sent[message.id])
        assert [(m.role, m.content) for m in prompt.messages] == [(m.role, m.content) for m in sent[message.id]]


def test_a_record_keeps_only_what_changed_since_the_reply_before():
    first = SentRecord("a1b2", 1.25, (40, 41, 42, 7), 0xBEEF)
    second = SentRecord("a1b2", 1.25, (), 0xCAFE)
    assert first.encode(None) == "c=beef;s=a1b2;f=1.25;r=14+2,7"
    assert second.encode(first) == "c=cafe"
    assert SentRecord.decode("c=cafe", [first.encode(None)]) == second
