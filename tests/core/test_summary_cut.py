"""Where a summary's stretch ends: the verbatim tail starts at the user message that began its exchange, so a tool
call is never kept without the request that asked for it, unless keeping that exchange would keep far too much."""

from __future__ import annotations

from contextlib import suppress

from hypothesis import assume, event, example, given
from hypothesis import strategies as st
from precis.core.context.cutting import EXCHANGE_SHARE
from precis.core.context.engine import Budget, ContextEngine
from precis.core.context.events import SummaryNotSmaller
from precis.core.model.messages import Message, ToolCall
from precis.core.model.tokens import TokenCounter
from precis.core.settings import SummarizationPolicy


def coding_chat(exchanges: list[tuple[int, int]], engine: ContextEngine) -> None:
    """Exchanges as the window's tool loop stores them: a user request, (calls, words) `execute_bash` calls each
    with its output, and the assistant's answer."""
    for n, (calls, words) in enumerate(exchanges):
        engine.append(Message("user", f"Request {n}: fix the failing test in module_{n}.py, please."), auto=False)
        for k in range(calls):
            call = ToolCall(id=f"call_{n}_{k}", name="execute_bash", arguments={"command": f"pytest tests/test_{n}.py"})
            engine.append(Message("assistant", "", tool_calls=(call,)), auto=False)
            output = " ".join(f"line{n}x{k}x{i}" for i in range(words))
            engine.append(Message("tool", output, name="execute_bash", tool_call_id=call.id), auto=False)
        engine.append(Message("assistant", f"Fixed module_{n}.py: the test passes now."), auto=False)


def kept_tail(engine: ContextEngine) -> list[Message]:
    """The messages sent verbatim after the summaries (pinned ones and the chat's opening aside)."""
    return [m for m in engine.archive.visible() if not engine.archive.is_opening(m) and not m.pinned]


def test_summarize_now_keeps_the_request_with_the_calls_it_asked_for():
    """A coding chat at 8k: the kept part started at "→ execute_bash" whose asking user message was summarized."""
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="rule"), TokenCounter())
    coding_chat([(4, 60)] * 12, engine)
    assert engine.messages[-engine.policy.keep_recent].role != "user"  # the tail of keep_recent starts mid-exchange
    engine.summarize_now()
    assert kept_tail(engine)[0].role == "user"
    assert kept_tail(engine)[0].content.startswith("Request 11:")


def test_an_exchange_too_long_to_keep_whole_is_cut_inside():
    """Keeping a whole exchange of 30 calls would keep far too much: the cut stays where the budget puts it."""
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="rule"), TokenCounter())
    coding_chat([(1, 10), (30, 120)], engine)
    record = engine.summarize_now()
    assert record.covered_ids and kept_tail(engine)[0].role == "assistant"


@given(exchanges=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 12)), min_size=10, max_size=90),
       window=st.sampled_from([4096, 8192, 32768]))
@example(exchanges=[(4, 60)] * 12, window=8192)
def test_the_kept_part_starts_at_a_request_when_every_exchange_is_short(exchanges, window):
    """Whenever each exchange is small beside the budget, what stays verbatim after Summarize now begins with the
    user's request, never a call or an answer without it (but in the chat's first exchange, whose request is the
    only thing before it). Automatic summaries keep their cut: moved, they lost facts (benchmarks/fidelity)."""
    engine = ContextEngine(Budget(window=window, reserve_output=512), SummarizationPolicy(mode="rule"), TokenCounter())
    coding_chat(exchanges, engine)
    sizes, tokens = [0], engine.counter.raw_message_tokens
    for message in engine.messages:
        sizes[-1:] = [sizes[-1], 0] if message.role == "user" else [sizes[-1] + tokens(message)]
    assume(max(sizes) <= engine.budget.available * EXCHANGE_SHARE)  # each exchange is short beside the budget
    if engine.can_summarize():
        with suppress(SummaryNotSmaller):  # a few short messages: a summary would not be smaller
            engine.summarize_now()
    event("summarized" if engine.chain() else "not summarized")
    if engine.chain():
        first = kept_tail(engine)[0]
        requests = [m for m in engine.messages[:engine.archive.position[first.id]] if m.role == "user"]
        # Or the cut fell in the chat's first exchange: back at its request, nothing would be left to summarize.
        assert first.role == "user" or len(requests) == 1
