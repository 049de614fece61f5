"""The prompt sent never exceeds the budget, whatever no summary or trimming stage removes: a chat of many session
markers (LoCoMo's locomo_3 repeated 60 times: 41,700 messages, 1,922 markers) was sent at 7,894 tokens for 7,680,
every marker kept, each cut to its few tokens of overhead."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st
from precis.core.context.engine import Budget, ContextEngine
from precis.core.model.messages import Message, ToolCall
from precis.core.model.tokens import TokenCounter
from precis.core.settings import SummarizationPolicy
from precis.core.storage.interchange import read_transcript

from tests.conftest import CONVERSATIONS_DIR

KINDS = ["marker", "markers", "user", "assistant", "tool", "pinned", "pinned marker"]


def chat_of(steps: list[tuple[str, int]], engine: ContextEngine) -> None:
    """Append the steps as a stored chat holds them: session markers (a few words of date, or a run of them), plain
    messages of `words` words, tool calls with their results, pinned messages."""
    for n, (kind, words) in enumerate(steps):
        text = " ".join(f"w{n}x{i}" for i in range(words))
        if kind == "marker":
            messages = [Message("system", f"Session {n} - 1:14 pm on {n % 28 + 1} May, 2023")]
        elif kind == "markers":
            messages = [Message("system", f"Session {n}.{k}") for k in range(words)]
        elif kind == "pinned marker":
            messages = [Message("system", f"Session {n}: keep this date", pinned=True)]
        elif kind == "tool":
            call = ToolCall(id=f"call_{n % 3}", name="bash", arguments={"command": f"make t{n}"})  # ids repeat
            messages = [Message("assistant", "", tool_calls=(call,)),
                        Message("tool", text, name="bash", tool_call_id=call.id)]
        else:
            messages = [Message("user" if kind == "pinned" else kind, text, pinned=kind == "pinned")]
        for message in messages:
            engine.append(message, auto=False)


def assert_sent_within_budget(engine: ContextEngine) -> None:
    prompt = engine.assemble()
    counter = engine.counter
    counted = counter.calibrated(counter.prompt_raw_tokens(prompt.messages) + engine.setup.tool_tokens)
    assert prompt.tokens == counted, "the prompt's reported size is not what it holds"
    assert counted <= engine.budget.available, f"{counted} tokens sent for a budget of {engine.budget.available}"
    calls = {c.id for m in prompt.messages for c in m.tool_calls}
    assert all(m.tool_call_id in calls for m in prompt.messages if m.role == "tool"), "a result without its call"
    assert prompt.messages[-1].id.startswith(engine.messages[-1].id), "the newest message is not the last sent"


@given(steps=st.lists(st.tuples(st.sampled_from(KINDS), st.integers(1, 40)), min_size=1, max_size=220),
       window=st.integers(300, 3000), reserve=st.integers(0, 200), factor=st.sampled_from([1.0, 0.7, 1.3]),
       system_prompt=st.sampled_from(["", "Answer briefly. " * 20]), enabled=st.booleans())
@example(steps=[("user", 5), ("markers", 40), ("assistant", 5)] * 3, window=500, reserve=100, factor=1.0,
         system_prompt="", enabled=False)  # the markers of messages left out, and a run of them among the newest
@example(steps=[("markers", 40)], window=300, reserve=115, factor=1.3, system_prompt="Answer briefly. " * 20,
         enabled=False)  # a run of markers dating nothing, at the end
def test_a_prompt_of_many_session_markers_never_exceeds_the_budget(steps, window, reserve, factor, system_prompt,
                                                                    enabled):
    """Counted by the engine's own counter, message overheads and calibration included: over chats where session
    markers (and pinned messages) are many, alone or in runs, and their overheads alone may pass the budget."""
    counter = TokenCounter()
    counter.factor = factor
    engine = ContextEngine(Budget(window=window, reserve_output=reserve),
                           SummarizationPolicy(mode="rule", enabled=enabled, min_messages=2), counter,
                           system_prompt=system_prompt)
    chat_of(steps, engine)
    if enabled:
        engine.maybe_summarize()
    assert_sent_within_budget(engine)


def test_a_long_conversation_of_many_sessions_is_sent_within_its_budget_with_its_own_dates():
    """locomo_3 repeated 25 times at 8k (17,375 messages, 800 session markers): the markers of the sessions left out
    go with them, and nothing is cut short."""
    conversation = read_transcript(CONVERSATIONS_DIR / "locomo_3.jsonl")
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="rule", enabled=False),
                           TokenCounter())
    for copy in range(25):
        for message in conversation:
            engine.append(message.with_changes(id=f"{copy}-{message.id}"), auto=False)
    assert sum(m.role == "system" for m in engine.messages) >= 800
    assert_sent_within_budget(engine)
    sent = engine.assemble().messages
    markers = [n for n, m in enumerate(sent[1:], start=1) if m.role == "system" and m.content.startswith("Session")]
    assert 0 < len(markers) < 20, "the markers of the sessions left out were sent"
    assert all(sent[n + 1].role != "system" for n in markers), "a marker was sent without a message it dates"
    assert all(m.content == engine.messages[engine.archive.position[m.id]].content for m in sent
               if m.id in engine.archive.position), "a message was cut short"
