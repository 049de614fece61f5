"""The composer's count of a draft measures it against the prompt as it is sent, the inspector's headline: a chat
whose old tool output is shrunk to its line to fit is not "31,352 over the window" while 252 tokens are sent."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from precis.core.context.budget import draft_fit, draft_room, over_budget
from precis.core.context.engine import Budget, ContextEngine
from precis.core.model.messages import Message, ToolCall
from precis.core.model.tokens import TokenCounter
from precis.core.settings import SummarizationPolicy

from tests.core.test_prompt_budget import chat_of


def engine_of(window: int, enabled: bool = False) -> ContextEngine:
    return ContextEngine(Budget(window=window, reserve_output=512),
                         SummarizationPolicy(mode="rule", enabled=enabled), TokenCounter())


def sent_with(engine: ContextEngine, draft: str) -> tuple[int, list[Message]]:
    """The prompt's tokens and messages once the draft is sent (recall left out: it only fills free room)."""
    engine.append(Message("user", draft), auto=False)
    prompt = engine.assemble(recall=False)
    return prompt.tokens, prompt.messages


def test_a_draft_in_a_chat_fitting_by_a_shrunk_tool_output_counts_against_what_is_sent():
    engine = engine_of(2048)
    call = ToolCall(id="c1", name="dump", arguments={"lines": 5000})
    engine.append(Message("user", "dump the rows"), auto=False)
    engine.append(Message("assistant", "", tool_calls=(call,)), auto=False)
    engine.append(Message("tool", "\n".join(f"row {n}: " + "x" * 60 for n in range(2000)), name="dump",
                          tool_call_id=call.id), auto=False)
    for n in range(8):  # the output falls out of the recent tail, so it may shrink
        engine.append(Message("user" if n % 2 == 0 else "assistant", f"message {n} about the rows"), auto=False)
    note = over_budget(engine, engine.usage())
    assert note is not None and not note.cut and engine.usage().total > 10 * engine.budget.available

    draft = "What did the dump show?"
    tokens = engine.counter.draft_tokens(draft)
    fit = draft_fit(draft_room(engine, engine.usage(), note), tokens)
    assert not fit.overflows and fit.left == engine.budget.available - note.sent_tokens - tokens
    sent, messages = sent_with(engine, draft)
    assert sent == engine.budget.available - fit.left and messages[-1].content == draft


@settings(max_examples=100, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool", "tool", "marker"]), st.integers(1, 400)),
                      min_size=1, max_size=40),
       window=st.integers(1200, 4000), words=st.integers(1, 200))
def test_a_draft_said_to_fit_is_sent_whole_within_what_the_count_said(steps, window, words):
    """Whatever the chat that fits (old outputs shrunk or not): a draft the count says fits is sent whole, nothing
    left out or cut for it, and the prompt is no larger than the count said (more old outputs may shrink: smaller)."""
    engine = engine_of(window)
    chat_of(steps, engine)
    note = over_budget(engine, engine.usage())
    draft = " ".join(f"d{i}" for i in range(words))
    fit = draft_fit(draft_room(engine, engine.usage(), note), engine.counter.draft_tokens(draft))
    if fit.overflows or (note is not None and note.cut):  # already cut before the draft: not the draft's doing
        return
    sent, messages = sent_with(engine, draft)
    assert sent <= engine.budget.available - fit.left
    assert messages[-1].content == draft
    assert not any(m.id == "left-out-marker" or m.id.endswith("~cut") for m in messages), "the count said it fits"


def test_a_draft_that_takes_the_context_past_the_trigger_warns_and_one_below_does_not():
    engine = engine_of(2048, enabled=True)
    chat_of([("user", 20), ("assistant", 20)] * 3, engine)
    room = draft_room(engine, engine.usage(), over_budget(engine, engine.usage()))
    assert room.trigger is not None and not room.summary_due
    to_trigger = room.trigger - room.used
    assert draft_fit(room, to_trigger).summarizes and not draft_fit(room, to_trigger - 1).summarizes
