"""Design document 004 (the token-ratio policy and the summary record): the configuration defaults, the
validation of their relations, the record's fields, and the result a summarization reports (003's result card).
The policy's transitions (hysteresis, cooldown, emergency) belong to the engine's tests, the second pass is
checked here; see tests/spec/README.md for where each is checked."""

from __future__ import annotations

import pytest
from precis.core.model.records import MAX_KEY_POINTS, SummaryRecord, SummaryResult
from precis.core.settings import SummarizationPolicy, policy_errors
from pydantic import ValidationError


def test_004_defaults_are_the_documents():
    # "enabled:true, triggerTokenRatio:0.8, resetTokenRatio:0.7, minMessages:12, preserveRecent:6,
    #  maxSummaryChainDepth:3, cooldownMessages:4, abortOnFailure:false"; preserveRecent "never below 2".
    policy = SummarizationPolicy()
    assert (policy.enabled, policy.trigger_ratio, policy.reset_ratio, policy.min_messages, policy.keep_recent,
            policy.max_depth, policy.cooldown_messages, policy.abort_on_failure, policy.min_recent) == (
        True, 0.8, 0.7, 12, 6, 3, 4, False, 2)
    # 000: preserveErrors, "Always keep full error output".
    assert policy.preserve_error_details is True


def test_004_reset_ratio_must_be_below_the_trigger():
    assert policy_errors({"trigger_ratio": 0.7, "reset_ratio": 0.7}) == {
        "": "“Re-arm below” (70 % of the budget) must be below “Summarize at” (70 % of the budget)"}
    with pytest.raises(ValidationError):
        SummarizationPolicy(trigger_ratio=1.2)


def test_004_record_has_the_documents_fields():
    # id, timestamp, depth, parentId, summary, keyPoints (<= 30), context, originalMessageIds (+ sha256).
    fields = set(SummaryRecord.model_fields)
    assert {"id", "created_at", "depth", "parent_id", "text", "key_points", "facets", "covered"} <= fields
    with pytest.raises(ValidationError):
        SummaryRecord(key_points=["x"] * (MAX_KEY_POINTS + 1))
    assert MAX_KEY_POINTS == 30


def test_003_result_reports_messages_tokens_and_reduction():
    result = SummaryResult(messages_before=12, messages_after=1, tokens_before=4210, tokens_after=380)
    assert (result.saved, round(result.reduction_percent, 1), result.saves_nothing) == (3830, 91.0, False)
    assert result.describe() == "12 messages → 1 summary · 4,210 → 380 tokens (3,830 saved, −91%)"


def test_003_a_summary_that_saves_nothing_is_reported_as_such():
    worse = SummaryResult(messages_before=2, messages_after=1, tokens_before=900, tokens_after=915)
    assert worse.saves_nothing and worse.describe() == (
        "2 messages → 1 summary · 900 → 915 tokens (saves nothing: 15 tokens more)")
    even = SummaryResult(messages_before=2, messages_after=1, tokens_before=900, tokens_after=900)
    assert even.saves_nothing and even.describe().endswith("(saves nothing)")


def test_004_record_names_its_range_size_and_parent_never_a_newer_one():
    from precis.core.context.engine import Budget, ContextEngine
    from precis.core.model.messages import Message
    from precis.core.model.tokens import TokenCounter

    counter = TokenCounter()
    engine = ContextEngine(Budget(window=100_000, reserve_output=512), SummarizationPolicy(mode="rule", max_depth=2),
                           counter)
    made = []
    for round_ in range(4):
        for i in range(10):
            engine.append(Message(role="user" if i % 2 == 0 else "assistant",
                                  content=f"round {round_} message {i}: about cache_{round_}_{i}.py, which keeps "
                                          f"entries for ten minutes and reads an expired one again from the "
                                          f"database rather than serving it stale. Its tests start a real server, "
                                          f"fill the cache, move the clock past the limit and check that the "
                                          f"next read goes to the database and that the caller never sees the "
                                          f"old row."), auto=False)
        made.append(engine.summarize_now())
    first = made[0]
    assert first.first_message_id == engine.messages[0].id and first.last_message_id == first.covered[-1].id
    assert first.tokens == counter.count_text(first.text) and first.summarizer_tokens == 0  # rules call no model
    position = {m.id: n for n, m in enumerate(engine.messages)}
    by_id = {r.id: r for r in engine.records}
    assert any(r.merged_ids for r in engine.records), "max_depth 2 must have merged"
    for record in engine.records:
        # The parent's range ends before the record's begins: it follows an older summary, never a newer one.
        if record.parent_id is not None and record.status != "merged":
            parent = by_id[record.parent_id]
            assert position[parent.last_message_id] < position[record.first_message_id]


def test_004_a_second_pass_when_the_first_summary_leaves_usage_over_the_trigger():
    # "If after replacement the active context STILL exceeds threshold: attempt second pass (depth+1)". Precis
    # chooses how much to take so that one pass reaches the target fill, expecting a summary of a quarter of what it
    # replaces; a stretch of distinct commands summarizes to far more (each command is kept), and with a target
    # close to the trigger and a large share for the summaries, the first pass leaves usage over the trigger.
    from precis.core.context.engine import Budget, ContextEngine
    from precis.core.model.messages import Message, ToolCall
    from precis.core.model.tokens import TokenCounter

    policy = SummarizationPolicy(mode="rule", target_ratio=0.7, chain_share=0.6, min_messages=2, cooldown_messages=0)
    engine = ContextEngine(Budget(window=2100, reserve_output=100), policy, TokenCounter())
    position = {}
    for n in range(40):
        call = ToolCall(id=f"c{n}", name="execute_bash", arguments={
            "command": f"python scripts/migrate_table_{n}.py --source db_{n}.sqlite --target warehouse_{n}"})
        for message in (Message(role="assistant", content="", tool_calls=(call,)),
                        Message(role="tool", name="execute_bash", tool_call_id=call.id,
                                content=f"migrated {n}\ncopied rows 0-499 of table_{n}")):
            position[message.id] = len(position)
            if engine.append(message) is not None:
                break
        if engine.records:
            break
    # The first summary took the chain's room: it is folded into one shorter summary before the second pass.
    first, fold, second = engine.records
    assert (first.trigger, second.trigger) == ("threshold", "second pass") and fold.merged_ids == [first.id]
    assert first.tokens_after >= 0.8 * 2000 > second.tokens_after
    assert second.depth == 2 and second.parent_id == fold.id
    assert position[first.last_message_id] < position[second.first_message_id]


# ----- the policy's transitions: 004's Hysteresis & Cooldown and its integration and edge-case tests ------------

def _engine(window: int, **policy):
    from precis.core.context.engine import Budget, ContextEngine
    from precis.core.model.tokens import TokenCounter

    return ContextEngine(Budget(window=window, reserve_output=200), SummarizationPolicy(mode="rule", **policy),
                         TokenCounter())


def _said(n: int, words: int):
    from precis.core.model.messages import Message

    return Message(role="user" if n % 2 == 0 else "assistant",
                   content=f"message {n}: " + " ".join(f"w{n}x{k}" for k in range(words)))


def test_004_hysteresis_rearms_only_below_the_reset_ratio():
    # "suppress retriggers until usage drops below resetTokenRatio (e.g. 0.70) or enough new messages accumulate".
    # Summarizing down to 75% leaves usage above the 70% reset: over the trigger again, nothing happens until usage
    # has been seen below 70% (the last, large message taken back); then the next crossing summarizes.
    engine = _engine(3000, target_ratio=0.75, rearm_messages=1000, cooldown_messages=1)
    n = 0
    while not engine.records:
        engine.append(_said(n, 30))
        n += 1
    assert 0.7 <= engine.usage().ratio < 0.8 and not engine.summarization.armed
    while engine.usage().ratio < 0.9:
        engine.append(_said(n, 30))
        n += 1
    assert len(engine.records) == 1, "disarmed above the reset ratio"
    big = engine.messages[-1]
    while engine.usage().ratio >= 0.7:
        engine.remove_last(engine.messages[-1].id)
    engine.append(_said(n, 2))  # seen below the reset ratio: armed again
    assert engine.summarization.armed and len(engine.records) == 1
    engine.append(big.with_changes(id=f"{big.id}-again"))
    while len(engine.records) == 1:
        engine.append(_said(n := n + 1, 30))
    assert engine.records[1].trigger == "threshold"


def test_004_emergency_at_the_window_ignores_the_cooldown():
    # "ratio >= 1.0 (emergency) ignoring cooldown". With a cooldown of 50 messages, a few large ones after a summary
    # fill the budget: summarized at once, as an overflow.
    engine = _engine(3000, cooldown_messages=50, rearm_messages=50)
    n = 0
    while not engine.records:
        engine.append(_said(n, 40))
        n += 1
    # The cooldown counts from the conversation's start as well: the first summary too waits for the window.
    assert engine.records[-1].trigger == "overflow"
    before = len(engine.records)
    while engine.usage(recall=False).ratio < 0.9:
        engine.append(_said(n := n + 1, 20))
    assert len(engine.records) == before, "the cooldown holds below the window"
    for _ in range(3):
        engine.append(_said(n := n + 1, 200))
    assert len(engine.records) > before and engine.records[before].trigger == "overflow"
    assert engine.summarization.since_summary < 50


def test_004_a_five_message_burst_crossing_the_threshold_summarizes_once():
    # Edge case 2 and integration test 2: "Rapid 5-message burst crossing threshold (only one summarization)".
    engine = _engine(3000)
    n = 0
    while engine.usage().ratio < 0.7:
        engine.append(_said(n, 30))
        n += 1
    assert not engine.records
    for _ in range(5):
        engine.append(_said(n := n + 1, 40))
    assert [r.trigger for r in engine.records] == ["threshold"]


@pytest.mark.slow
def test_004_a_2k_window_compresses_up_to_the_depth_cap_and_goes_on():
    # Edge case 3: "Model with small context (2K) triggers multiple compressions up to depth cap". At the cap Precis
    # folds the oldest summaries into one rather than stopping (004.9's deviation): the chain never holds more than
    # 3, and every prompt fits.
    engine = _engine(2048)
    deepest = 0
    for n in range(200):
        engine.append(_said(n, 25))
        deepest = max(deepest, len(engine.chain()))
        assert engine.assemble().tokens <= engine.budget.available
    assert deepest == 3 and len(engine.chain()) <= 3
    assert any(r.merged_ids for r in engine.records), "compressed past the cap by folding"


def test_004_one_message_larger_than_the_budget():
    # Edge case 1: "Extremely long single user message". A 10,000-word paste into a 4K window: everything before it
    # is summarized, the prompt still fits its budget, the paste is sent (cut to fit, its newest end kept) and
    # nothing is lost: the original stays whole in the store.
    engine = _engine(4096)
    for n in range(20):
        engine.append(_said(n, 20))
    paste = _said(21, 10_000)
    engine.append(paste)
    prompt = engine.assemble()
    assert prompt.tokens <= engine.budget.available
    assert engine.records and engine.records[-1].trigger == "overflow"
    assert engine.messages[-1] == paste


# ----- the summarizer service: unit tests 2 and edge case 4; Performance and Observability ----------------------

def _llm_engine(replies, window: int = 3000, **policy):
    from precis.core.context.engine import Budget, ContextEngine
    from precis.core.model.tokens import TokenCounter
    from precis.core.summary.summarizers import LLMSummarizer

    from tests.fakes import ScriptedProvider

    provider = ScriptedProvider(list(replies))
    engine = ContextEngine(Budget(window=window, reserve_output=200), SummarizationPolicy(mode="llm", **policy),
                           TokenCounter(), LLMSummarizer(provider))
    return engine, provider


def test_004_no_decisions_gives_empty_arrays_not_invented_ones():
    # Unit test 2: "Handles empty arrays gracefully when no decisions"; the prompt: "If an element is absent, use an
    # empty array instead of fabricating."
    import json

    reply = json.dumps({"narrative": "message 0 and message 1 list words.", "key_points": [], "decisions": [],
                        "action_items": [], "unresolved_questions": [], "entities": []})
    engine, _ = _llm_engine([reply])
    for n in range(8):
        engine.append(_said(n, 10), auto=False)
    record = engine.summarize_now()
    assert not record.fallback_used
    assert (record.facets.decisions, record.facets.action_items, record.facets.unresolved_questions) == ([], [], [])
    # The rules, on messages that decide nothing, record none either.
    engine = _engine(3000)
    for n in range(8):
        engine.append(_said(n, 10), auto=False)
    assert engine.summarize_now().facets.decisions == []


def test_004_a_large_tool_output_does_not_bloat_the_summary():
    # Edge case 4: "Tool output messages (optionally filtered) not bloating summary". A 6,000-line log (about 60,000
    # tokens) reaches the summarizer as its one line, and the rules' summary of it is a few dozen tokens.
    from precis.core.model.messages import Message, ToolCall
    from precis.core.model.tokens import TokenCounter

    call = ToolCall(id="c1", name="bash", arguments={"command": "make test"})
    log = "\n".join(f"test_{k} ... ok" for k in range(6000)) + "\nFAILED test_6000: AssertionError\n[exit code: 2]"
    stretch = [Message(role="user", content="run the tests"), Message(role="assistant", tool_calls=(call,)),
               Message(role="tool", name="bash", tool_call_id="c1", content=log),
               Message(role="assistant", content="One test fails: test_6000.")]
    engine, provider = _llm_engine(["{broken"])  # invalid JSON: the rules write it, after one request
    for message in stretch + [_said(n, 5) for n in range(8)]:
        engine.append(message, auto=False)
    record = engine.summarize_now(up_to=stretch[-1].id)
    request = provider.calls[0][1].content
    assert "test_5999 ... ok" not in request and "[❌ bash: Command: make test | Exit: 2 |" in request
    counter = TokenCounter()
    assert counter.count_text(request) < 400 and record.tokens < 200
    assert "make test" in record.text and "test_5999" not in record.text


def test_004_a_failed_summary_with_abort_off_is_the_rules_and_loses_nothing():
    # Failure Handling: "If final failure and abortOnFailure=false: proceed with original messages (no mutation)".
    # Precis deviates (README 004.23): the rules write the summary in the model's place, because the trigger fired
    # for the window's sake and the originals alone would soon overflow it; nothing is lost, the originals stay in
    # the archive and undo gives them back exactly. (abortOnFailure=true raises and changes nothing:
    # core/test_engine.py::test_abort_on_failure_raises_and_loses_nothing.)
    from precis.core.providers.base import ProviderError

    engine, provider = _llm_engine([ProviderError("connection refused")] * 2)
    assert engine.summarization.setup.policy.abort_on_failure is False
    n = 0
    while not engine.records:
        engine.append(_said(n, 30))
        n += 1
    originals = list(engine.messages)
    record = engine.records[0]
    assert len(provider.calls) == 2  # the first try and the one retry
    assert (record.fallback_used, record.written_by, record.mode) == (True, "rules", "rule")
    assert record.fallback_reason == "summarizer unavailable: connection refused"
    assert record.trigger == "threshold" and engine.usage().ratio < 0.8
    engine.undo_last()
    assert engine.messages == originals and [m.id for m in engine.assemble().messages] == [m.id for m in originals]


def test_004_one_model_call_per_trigger():
    # Performance: "Only 1 summarization model call per trigger." The first pass takes enough to reach the target
    # fill, so each automatic summary here is one request.
    import json

    reply = json.dumps({"narrative": "Messages about words.", "key_points": [], "decisions": []})
    engine, provider = _llm_engine([reply] * 10)
    n = 0
    while len(engine.records) < 2:
        engine.append(_said(n, 30))
        n += 1
    assert [r.trigger for r in engine.records] == ["threshold", "threshold"]
    assert len(provider.calls) == 2


def test_004_a_second_pass_asks_the_model_nothing():
    # The same where one pass is not enough (Depth Strategy's second pass): with a target fill close to the trigger,
    # the model's summary, larger than the quarter of what it replaces that the first pass expects, leaves usage
    # over the trigger. The rules write the second pass, so the trigger costs one model call (it made two, and with
    # the embedded model up to twice the summary's time limit).
    import json

    from precis.core.summary.summarizers import RULES

    reply = json.dumps({"narrative": "The user listed the words " + " ".join(f"w0x{k}" for k in range(30)) + ".",
                        "key_points": [f"message {n} listed " + " ".join(f"w{n}x{k}" for k in range(12))
                                       for n in range(6)]})
    engine, provider = _llm_engine([reply] * 3, window=2200, target_ratio=0.75, chain_share=0.6, min_messages=2,
                                   cooldown_messages=0)
    n = 0
    while not engine.records:
        engine.append(_said(n, 60))
        n += 1
    first, second = engine.records
    assert (first.trigger, first.written_by) == ("threshold", "scripted: scripted")
    assert (second.trigger, second.written_by, second.mode) == ("second pass", RULES, "rule")
    assert len(provider.calls) == 1


def test_004_the_summarizer_request_opens_with_the_meta_header():
    # Prompt Engineering: "User content (fed to model) includes: 1. Optional meta header: `<meta total_messages=###
    # total_tokens=### depth=# />`". A second summary of 8 messages of 12 words: its depth is 2.
    import json

    from precis.core.model.tokens import TokenCounter

    reply = json.dumps({"narrative": "Messages about words."})
    engine, provider = _llm_engine([reply] * 2)
    for n in range(16):
        engine.append(_said(n, 12), auto=False)
    engine.summarize_now(up_to=engine.messages[7].id)
    second = engine.summarize_now(up_to=engine.messages[15].id)
    assert len(second.covered) == 8 and second.depth == 2
    tokens = sum(map(TokenCounter().raw_message_tokens, engine.messages[8:16]))
    meta, head, *_ = provider.calls[1][1].content.split("\n")
    assert (meta, head) == (f"<meta total_messages=8 total_tokens={tokens} depth=2 />", "Transcript to summarize:")


def test_004_the_log_says_depth_messages_ratio_and_tokens_after(caplog):
    # Observability: "Debug log with: depth, compressedMessages, ratioBefore, estimateAfter".
    import logging

    engine = _engine(3000)
    with caplog.at_level(logging.INFO, logger="precis.engine"):
        n = 0
        while not engine.records:
            engine.append(_said(n, 30))
            n += 1
    record = engine.records[0]
    assert caplog.messages[-1] == (
        f"summarized {len(record.covered)} messages (threshold) at depth 1: usage {record.usage_ratio:.2f} of the "
        f"budget, {record.tokens_before} -> {record.tokens_after} tokens, mode rule")
