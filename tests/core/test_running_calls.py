"""A tool call's results are waited for only while the call runs: a chat opened or imported ending on a call whose
result never came (sweagent_1 ends on `submit`) is summarized like any other."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st
from precis.core.context.budget import over_budget
from precis.core.context.engine import Budget, ContextEngine
from precis.core.model.messages import Message
from precis.core.model.tokens import TokenCounter
from precis.core.settings import SummarizationPolicy
from precis.core.storage.interchange import read_transcript

from tests.conftest import TRANSCRIPTS_DIR

SWEAGENT = [read_transcript(TRANSCRIPTS_DIR / f"sweagent_{n}.jsonl") for n in (1, 2, 3)]


def opened(messages: list[Message], window: int = 8192) -> ContextEngine:
    """The engine of a stored chat as opening it (or importing it) builds it: restored, not appended live."""
    return ContextEngine.restore(messages, [], Budget(window=window, reserve_output=512),
                                 SummarizationPolicy(mode="rule"), TokenCounter())


def test_an_imported_chat_ending_on_a_call_without_result_summarizes_below_its_budget_on_opening():
    """sweagent_1 at 8k: 219% of the budget (183% by tiktoken), and the summary on opening never came (the call's
    result was awaited)."""
    engine = opened(SWEAGENT[0])
    assert engine.messages[-1].tool_calls and engine.usage().ratio > 1.5
    record = engine.maybe_summarize()
    assert record is not None and engine.usage().ratio < 1
    assert engine.messages[-1].id not in record.covered_ids  # the newest message stays in view
    assert over_budget(engine, engine.usage()) is None


def test_a_call_being_run_waits_for_its_result_then_summarizes():
    """Live, the call's result comes next: summarizing at the call could take only what precedes it."""
    history = SWEAGENT[0]
    engine = opened(history[:-3])
    engine.summarization.armed = False  # as a chat that summarized a moment ago, not at its trigger yet
    call = history[-3]
    assert call.tool_calls and engine.append(call, auto=False) is None
    engine.remove_last(call.id)
    assert engine.usage().ratio > 1
    assert engine.append(call) is None  # run now: its result is due
    assert engine.summary_due() is None and engine.summary_due(next_message=True) is not None
    record = engine.append(history[-2])  # the result
    assert record is not None and engine.usage().ratio < 1


def test_a_call_shown_again_as_history_awaits_nothing():
    """A message added without `auto` (a version shown again) is history: it starts no wait."""
    engine = opened(SWEAGENT[1][:-1])
    engine.append(SWEAGENT[1][-1], auto=False)
    assert engine.messages[-1].tool_calls and engine.summary_due() is not None


def sends_everything(engine: ContextEngine) -> bool:
    """Whether the prompt holds every message in view, none left out or cut short (old tool outputs may go as their
    one line, the cheapest way to fit, which needs no summary)."""
    prompt = engine.assemble(recall=False)
    sent = {item.source_id for item in prompt.items if item.tokens_before_cut is None}
    return prompt.tokens <= engine.budget.available and sent >= {m.id for m in engine.archive.visible()}


@given(transcript=st.sampled_from(range(len(SWEAGENT))), end=st.integers(min_value=2),
       window=st.sampled_from([4096, 8192]))
@example(transcript=1, end=len(SWEAGENT[1]), window=8192)  # ends on a call
def test_an_opened_chat_over_its_budget_is_summarized_until_everything_in_view_is_sent(transcript, end, window):
    """The promise that a chat never runs out of context, wherever a stored chat stops (on a call, a result or a
    reply): opened over its budget, the summary due on opening leaves nothing out of the prompt."""
    engine = opened(SWEAGENT[transcript][:end], window)
    engine.maybe_summarize()
    assert sends_everything(engine)
