"""A recent message larger than the budget is sent cut whatever is summarized: the policy does not archive the
chat to make room it can never make (a 151,000-character final diff at 32k archived 102 of 104 messages)."""

from __future__ import annotations

from precis.core.context.engine import Budget, ContextEngine
from precis.core.model.messages import Message, ToolCall
from precis.core.model.tokens import TokenCounter
from precis.core.settings import SummarizationPolicy


def step(engine: ContextEngine, n: int, output: str) -> None:
    call = ToolCall(id=f"call-{n}", name="Bash", arguments={"command": f"make check MODULE={n}"})
    engine.append(Message(role="user", content=f"Now check module {n}."))
    engine.append(Message(role="assistant", content=f"Checking module {n}.", tool_calls=(call,)))
    engine.append(Message(role="tool", tool_call_id=call.id, name="Bash", content=output))


def test_a_tool_output_larger_than_the_budget_leaves_the_conversation_in_the_prompt():
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="rule"), TokenCounter())
    for n in range(12):
        step(engine, n, "\n".join(f"module {n}: test {k} passed" for k in range(20)))
    assert not engine.records and engine.usage().ratio < 0.8
    diff = "\n".join(f"+    line {k} of the patch: value = compute({k}, 'argument')" for k in range(4000))
    step(engine, 12, diff)
    assert engine.counter.raw_message_tokens(engine.messages[-1]) > engine.budget.available
    prompt = engine.assemble()
    sent = [i.source_id for i in prompt.items if i.kind == "message"]
    # The conversation is still there, verbatim; the diff goes as its one line, as it would after any summary.
    assert not engine.records, [r.trigger for r in engine.records]
    assert all(m.id in sent for m in engine.messages if m.role == "user")
    shown = next(i for i in prompt.items if i.source_id == engine.messages[-1].id)
    assert shown.kind == "trimmed" and prompt.tokens <= engine.budget.available


def test_a_summary_is_still_made_when_the_rest_needs_one():
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="rule"), TokenCounter())
    for n in range(40):
        step(engine, n, "\n".join(f"module {n}: test {k} passed" for k in range(20)))
    made = len(engine.records)
    assert made  # the conversation alone passes the trigger
    step(engine, 40, "\n".join(f"+ line {k}: value = compute({k})" for k in range(6000)))
    # What the conversation itself needs is summarized, not all but the last two messages to fit the diff.
    kept = [m for m in engine.messages if not engine.is_archived(m.id)]
    assert len(kept) > engine.policy.keep_recent, [r.trigger for r in engine.records[made:]]
