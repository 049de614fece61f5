"""An assistant message with no text and no tool calls (a reply the window began and has not written yet, or one
stopped before its first word) is kept in the chat but never sent: `precis chat --chat ID` sent it as an empty turn,
and `precis prompt` showed it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from precis.core.context.engine import Budget, ContextEngine
from precis.core.model.messages import Message, ToolCall
from precis.core.model.tokens import TokenCounter
from precis.core.settings import SummarizationPolicy

STEPS = ["user", "assistant", "empty reply", "blank reply", "tool call", "pinned empty reply", "take back the last"]


def empty(message: Message) -> bool:
    """What must never be sent, written out here rather than taken from the code under test."""
    return message.role == "assistant" and message.content.strip() == "" and len(message.tool_calls) == 0


def appended(step: str, n: int) -> list[Message]:
    if step == "user":
        return [Message(role="user", content=f"question {n} about the harbour")]
    if step == "assistant":
        return [Message(role="assistant", content=f"answer {n} about the tides")]
    if step in ("empty reply", "pinned empty reply"):
        return [Message(role="assistant", content="", incomplete=True, pinned=step.startswith("pinned"))]
    if step == "blank reply":
        return [Message(role="assistant", content=" \n")]
    call = ToolCall(id=f"call-{n}", name="read_file", arguments={"path": f"notes{n}.md"})
    return [Message(role="assistant", content="", tool_calls=(call,)),
            Message(role="tool", content=f"notes {n}", name="read_file", tool_call_id=call.id)]


@given(steps=st.lists(st.sampled_from(STEPS), min_size=1, max_size=30))
def test_the_prompt_sends_every_message_but_the_empty_replies_and_counts_what_it_sends(steps):
    engine = ContextEngine(Budget(window=8192, reserve_output=256), SummarizationPolicy(enabled=False), TokenCounter())
    kept: list[Message] = []
    for n, step in enumerate(steps):
        if step == "take back the last":  # Regenerate takes the last reply back, empty or not
            if kept and kept[-1].role == "assistant" and not kept[-1].tool_calls:
                engine.remove_last(kept.pop().id)
        else:
            for message in appended(step, n):
                engine.append(message)
                kept.append(message)
        prompt = engine.assemble(recall=False)
        assert [m.id for m in prompt.messages] == [m.id for m in kept if not empty(m)]
        # The gauge counts what is sent: an empty reply adds nothing to it.
        counter = engine.counter
        assert engine.usage(recall=False).total == prompt.tokens == counter.calibrated(
            counter.prompt_raw_tokens(prompt.messages) + engine.setup.tool_tokens)
