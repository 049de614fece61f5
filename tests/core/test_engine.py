"""The context engine's rules: budget, trimming, policy, the summary chain, undo, events, LLM fallbacks."""

from __future__ import annotations

import json
import logging
import re

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from precis.core.context.budget import over_budget
from precis.core.context.engine import (
    Budget,
    ContextEngine,
    IntegrityError,
    NothingToSummarize,
    NothingToUndo,
    ToolsTooLarge,
    recalled_parts,
)
from precis.core.context.events import SummaryNotSmaller
from precis.core.context.recalling import asked_starts, relevant_part
from precis.core.model.messages import Message, ToolCall
from precis.core.model.tokens import REPLY_PRIMING, TokenCounter
from precis.core.model.tools import ToolSpec, specs_json
from precis.core.providers.base import ServerError
from precis.core.settings import SummarizationPolicy, policy_errors
from precis.core.storage.interchange import read_transcript
from precis.core.summary.summarizers import (
    NARRATIVE_ASK,
    HybridSummarizer,
    LLMSummarizer,
    RuleSummarizer,
    SummarizationFailed,
    SummaryRequest,
)

from tests.conftest import TRANSCRIPTS, TRANSCRIPTS_DIR
from tests.fakes import ScriptedProvider

COUNTER = TokenCounter()


def user(text: str, **kw) -> Message:
    return Message(role="user", content=text, **kw)


def assistant(text: str, **kw) -> Message:
    return Message(role="assistant", content=text, **kw)


def tool_pair(name: str, args: dict, output: str) -> tuple[Message, Message]:
    call = ToolCall(id=f"call-{abs(hash((name, json.dumps(args), output)))}", name=name, arguments=args)
    return (Message(role="assistant", content="", tool_calls=(call,)),
            Message(role="tool", content=output, name=name, tool_call_id=call.id))


def long_text(words: int, seed: str = "alpha") -> str:
    return " ".join(f"{seed}{i}" for i in range(words))


def engine_with(window=2048, reserve=256, **policy) -> ContextEngine:
    return ContextEngine(Budget(window=window, reserve_output=reserve), SummarizationPolicy(**policy), TokenCounter())


def fill(engine: ContextEngine, turns: int, words: int = 60, auto: bool = True) -> list[Message]:
    added = []
    for i in range(turns):
        for message in (user(f"question {i}: " + long_text(words, f"q{i}x")),
                        assistant(f"answer {i}: " + long_text(words, f"a{i}x"))):
            engine.append(message, auto=auto)
            added.append(message)
    return added


def prompt_is_consistent(engine: ContextEngine) -> None:
    prompt = engine.assemble()
    assert prompt.tokens <= engine.budget.available
    # The reported count is the real count of what is sent, the tool definitions with it.
    counter = engine.counter
    assert prompt.tokens == counter.calibrated(counter.prompt_raw_tokens(prompt.messages) + engine.setup.tool_tokens)
    calls = {c.id for m in prompt.messages for c in m.tool_calls}
    for m in prompt.messages:
        if m.role == "tool" and m.tool_call_id:
            assert m.tool_call_id in calls, "a tool result was sent without its call"


# ----- budget and tokens -------------------------------------------------------------------------------------

def test_budget_is_window_minus_reserves():
    assert Budget(window=8192, reserve_output=512, summarizer_reserve=200).available == 7480
    with pytest.raises(ValueError, match="leaves"):
        Budget(window=500, reserve_output=480)


def test_token_counts_are_offline_cached_and_include_tool_arguments(monkeypatch):
    counter = TokenCounter()
    plain = Message(role="assistant", content="hello world")
    call = Message(role="assistant", content="hello world",
                   tool_calls=(ToolCall(id="c1", name="Bash", arguments={"command": "pytest -x tests/"}),))
    assert counter.raw_message_tokens(call) > counter.raw_message_tokens(plain) + 5
    calls = []
    original = counter.count_text
    monkeypatch.setattr(counter, "count_text", lambda text: calls.append(text) or original(text))
    counter.raw_message_tokens(plain)
    counter.raw_message_tokens(plain)
    assert calls == [], "a message already counted was tokenized again"
    counter.raw_message_tokens(plain.with_changes(content="hello world, again"))
    assert calls == ["hello world, again"]


@pytest.mark.slow
def test_counting_many_messages_on_threads_counts_each_as_one_at_a_time_and_replaces_their_stand_ins():
    """A long chat opened for the first time shows from stand-in counts (estimate_missing) while its messages are
    counted on several threads (count_messages): the counts are the ones counting each alone makes, the stand-ins go
    as they are counted, usage says it is not exact until then, and stand-ins are never handed out for saving."""
    messages = read_transcript(TRANSCRIPTS_DIR / "claudecode_session.jsonl")
    alone = TokenCounter()
    expected = {m.id: alone.raw_message_tokens(m) for m in messages}

    counter = TokenCounter()
    counter.seed(messages[:50], expected)  # saved by an earlier opening
    missing = counter.estimate_missing(messages)
    assert 0 < len(missing) < len(messages) - 50 and counter.estimating == len(missing)  # a sample is counted
    assert counter.known_counts(messages).keys() == {m.id for m in messages if m not in missing}
    engine = ContextEngine.restore(messages, [], Budget(window=1_000_000), SummarizationPolicy(enabled=False),
                                   counter)
    estimated = engine.usage()
    assert not estimated.exact
    exact_total = TokenCounter().prompt_raw_tokens(messages)
    assert abs(estimated.total - exact_total) < 0.25 * exact_total

    engine.count_exactly(missing[: len(missing) // 2])
    assert counter.estimating == len(missing) - len(missing) // 2
    engine.count_exactly(missing[len(missing) // 2:])
    assert counter.estimating == 0 and counter.known_counts(messages) == expected
    assert engine.usage().total == exact_total and engine.usage().total == ContextEngine.restore(
        messages, [], Budget(window=1_000_000), SummarizationPolicy(enabled=False)).usage().total

    threaded = TokenCounter()
    threaded.count_messages(messages, threads=4)
    assert threaded.known_counts(messages) == expected


def test_calibration_brings_estimates_within_five_percent_of_provider_counts():
    counter = TokenCounter()
    # A provider whose tokenizer yields ~27% more tokens than cl100k (as SmolLM2's does on English prose).
    prompts = [[user(long_text(n, "w"))] for n in (50, 120, 300, 80, 200)]
    for prompt in prompts[:3]:
        raw = counter.prompt_raw_tokens(prompt)
        counter.calibrate(raw, round(raw * 1.27))
    for prompt in prompts[3:]:
        actual = round(counter.prompt_raw_tokens(prompt) * 1.27)
        assert abs(counter.prompt_tokens(prompt) - actual) / actual < 0.05


def test_a_short_prompt_does_not_skew_the_calibration():
    # A chat template's fixed tokens (SmolLM2's default system prompt: 23 more on a 19-token prompt) are no ratio:
    # taken as one, every count of the chat read 2.2 times too large.
    counter = TokenCounter()
    assert not counter.calibrate(19, 42)
    assert counter.calibration == (1.0, 0) and counter.prompt_tokens([user(long_text(300))]) == \
        counter.prompt_raw_tokens([user(long_text(300))])


# ----- policy validation ---------------------------------------------------------------------------------------

def test_policy_refuses_bad_values_with_reasons():
    errors = policy_errors({"trigger_ratio": 0.6, "reset_ratio": 0.7})
    assert errors == {"": "“Re-arm below” (70 % of the budget) must be below “Summarize at” (60 % of the budget)"}
    assert policy_errors({"keep_recent": 0}) == {"keep_recent": "must be from 1 to 1000 messages"}
    assert policy_errors({"trigger_ratio": 0.9, "reset_ratio": 0.5}) == {}


# ----- trimming ------------------------------------------------------------------------------------------------

def test_old_tool_outputs_shrink_first_keeping_system_pinned_and_tail():
    engine = engine_with(window=1600, reserve=100, enabled=False)
    system = Message(role="system", content="You are a careful coding assistant.")
    engine.append(system)
    pinned = user("Remember: the deploy key lives in `config/deploy.toml`.", pinned=True)
    engine.append(pinned)
    for i in range(6):
        call, result = tool_pair("Read", {"file_path": f"/src/module_{i}.py"},
                                 "\n".join(f"{n}\tdef function_{i}_{n}(): pass" for n in range(40)))
        engine.append(call)
        engine.append(result)
    tail = [user("now run the tests"), assistant("Running them.")]
    for m in tail:
        engine.append(m)
    prompt = engine.assemble()
    prompt_is_consistent(engine)
    kinds = {item.source_id: item.kind for item in prompt.items}
    assert kinds[system.id] == "system"
    assert kinds[pinned.id] == "message" and prompt.messages[[i.source_id for i in prompt.items].index(pinned.id)] \
        .content == pinned.content
    trimmed = [i for i in prompt.items if i.kind == "trimmed"]
    assert trimmed, "old tool outputs should have been shrunk"
    assert all(i.message.content.startswith("[") and "\n" not in i.message.content for i in trimmed)
    assert "module_0.py" in trimmed[0].message.content
    for m in tail:
        assert kinds[m.id] == "message"


@given(
    window=st.integers(min_value=400, max_value=6000),
    reserve=st.integers(min_value=0, max_value=300),
    steps=st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool", "pinned", "system"]),
                             st.integers(min_value=0, max_value=900)), min_size=1, max_size=60),
    enabled=st.booleans(),
    mode_keep=st.integers(min_value=2, max_value=8),
    recall_ratio=st.sampled_from([0.0, 0.1, 0.5]),
    tools=st.booleans(),
)
def test_prompt_never_exceeds_the_budget(window, reserve, steps, enabled, mode_keep, recall_ratio, tools):
    engine = ContextEngine(Budget(window=window, reserve_output=reserve),
                           SummarizationPolicy(enabled=enabled, keep_recent=mode_keep, min_messages=2,
                                               recall_ratio=recall_ratio), TokenCounter())
    if tools:  # their definitions go with every request: the prompt and they together fit, or none are sent
        try:
            engine.set_tools(TOOL_SPECS)
        except ToolsTooLarge:
            assert engine.setup.tool_tokens == 0 and engine.counter.count_text(specs_json(TOOL_SPECS)) > engine.budget.available / 2
    for n, (kind, words) in enumerate(steps):
        # Shared topic words, so later user messages recall archived ones.
        text = f"{TOPICS[n % 3]} {TOPICS[n % 2]} " + long_text(words, f"s{n}w")
        if kind == "tool":
            for m in tool_pair("Bash", {"command": f"make target{n}"}, text):
                engine.append(m)
        elif kind == "pinned":
            engine.append(user(text, pinned=True))
        elif kind == "system":
            engine.append(Message(role="system", content=text))
        else:
            engine.append(Message(role=kind, content=text))
        prompt_is_consistent(engine)
        for item in engine.assemble().items:
            if item.kind == "recalled":
                assert engine.is_archived(item.source_id)


TOPICS = ("lighthouse keeper", "violin recital", "marathon training")
TOOL_SPECS = [ToolSpec("read_file", "Read a file of the workspace", {"type": "object", "properties": {
    "path": {"type": "string", "description": "the file, relative to the workspace"}}, "required": ["path"]},
    read_only=True), ToolSpec("execute_bash", "Run a shell command", {"type": "object", "properties": {
        "command": {"type": "string"}}, "required": ["command"]})]


@given(steps=st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool", "tools", "pinned", "pinned call",
                                                 "pinned result", "system"]), st.integers(1, 60)),
                      min_size=110, max_size=170),
       window=st.sampled_from([300, 500]), keep=st.integers(2, 8), opening=st.booleans(),
       summarized=st.booleans())
def test_a_chat_far_past_its_window_is_sent_as_trimming_all_of_it_would_send(steps, window, keep, opening,
                                                                              summarized):
    """The prompt of a chat far longer than its budget is assembled without the messages trimming is sure to leave
    out (so opening one of 100,000 messages does not make an item of each): it is the prompt trimming every one of
    them gives, with pinned messages, session markers, tool calls and their results where they are."""
    engine = ContextEngine(Budget(window=window, reserve_output=50),
                           SummarizationPolicy(mode="rule", enabled=False, keep_recent=keep), TokenCounter())
    if opening:
        engine.append(Message(role="system", content="Answer briefly."), auto=False)
    for n, (kind, words) in enumerate(steps):
        text = long_text(words, f"s{n}w")
        if kind in ("tool", "tools", "pinned call", "pinned result"):
            call, result = tool_pair("Bash", {"command": f"make target{n}"}, text)
            results = [result, result.with_changes(id=f"{result.id}b")] if kind == "tools" else [result]
            messages = [call.with_changes(pinned=kind == "pinned call"),
                        *(r.with_changes(pinned=kind == "pinned result") for r in results)]
        elif kind == "system":
            messages = [Message(role="system", content=f"Session {n}")]
        else:
            messages = [Message(role="user" if kind == "pinned" else kind, content=text, pinned=kind == "pinned")]
        for message in messages:
            engine.append(message, auto=False)
    if summarized:
        engine.summarize_now(up_to=engine.messages[len(engine.messages) // 5].id)
    assembler = engine.assembler
    prompt = engine.assemble()
    assume(assembler._items()[1] is not None)  # the newest messages alone are over this budget
    assembler._items = lambda: (engine.meter.items(), None)  # every message an item, as trimming started before
    whole = engine.assemble()
    assert prompt.tokens == whole.tokens
    def sent(p):  # the left-out note is made anew each time (its created_at differs)
        return [(i.kind, i.source_id, i.tokens, i.message.role, i.message.content, i.message.tool_calls)
                for i in p.items]

    assert sent(prompt) == sent(whole)


def archived_fact_engine(**policy) -> tuple[ContextEngine, Message]:
    engine = engine_with(window=2048, reserve=256, **policy)
    fact = user("My sister Caroline adopted a grey greyhound called Biscuit in Lisbon last spring.")
    engine.append(fact)
    fill(engine, 12)
    assert engine.is_archived(fact.id)
    return engine, fact


def test_recall_puts_the_matching_archived_original_into_the_prompt():
    engine, fact = archived_fact_engine()
    engine.append(user("What was the name of Caroline's greyhound?"))
    prompt = engine.assemble()
    recalled = [i for i in prompt.items if i.kind == "recalled"]
    assert recalled and recalled[0].source_id == fact.id
    assert "Biscuit" in recalled[0].message.content and f"message {fact.id[:8]}" in recalled[0].message.content
    kinds = [i.kind for i in prompt.items]
    assert kinds.index("recalled") > kinds.index("summary") and kinds[-1] == "message"
    usage = engine.usage()
    assert 0 < usage.by_kind["recalled"] <= engine.budget.available * engine.policy.recall_ratio
    assert engine.usage(recall=False).by_kind["recalled"] == 0


def test_a_recalled_message_keeps_its_opening_the_sentences_asked_about_and_the_one_after_each():
    text = ("Thanks, Melanie! This is special. It was a long week at work. The weather was grey. "
            "This necklace is a gift from my grandma in Sweden. It stands for love, faith and strength. "
            "We ate pasta. The dog barked all night.")
    assert relevant_part(text, asked_starts(["necklac", "symbol"])) == (
        "Thanks, Melanie! This is special. … This necklace is a gift from my grandma in Sweden. It stands for love, "
        "faith and strength. …")


def test_a_recalled_reply_follows_its_match_without_repeating_the_date():
    engine = engine_with(window=2048, reserve=256)
    engine.append(Message(role="system", content="You are helpful."))
    engine.append(Message(role="system", content="Session 1 - 1:56 pm on 8 May, 2023"))
    asked = user("Caroline: What did you call the greyhound you adopted in Lisbon?")
    engine.append(asked)
    engine.append(Message(role="assistant", content="Melanie: We called her Biscuit, after the colour."))
    fill(engine, 12)
    assert engine.is_archived(asked.id)
    engine.append(user("What was the greyhound called?"))
    recalled = [i.message.content for i in engine.recalled()]
    assert recalled[0].startswith(f"[Recalled: 8 May, 2023, 1:56 pm, message {asked.id[:8]}]\nCaroline: ")
    assert recalled[1].startswith("[Recalled: message ") and "Biscuit" in recalled[1]
    # What the inspector lists: who and when, then the text, without the header the model reads.
    assert recalled_parts(recalled[0]) == ("8 May, 2023, 1:56 pm", recalled[0].partition("\n")[2])
    assert recalled_parts(recalled[1])[0] == "" and recalled_parts(recalled[1])[1].startswith("Melanie: We called")


def test_recall_is_off_with_its_switch_and_after_the_reply():
    engine, _ = archived_fact_engine(recall_enabled=False)
    engine.append(user("What was the name of Caroline's greyhound?"))
    assert not engine.recalled()
    engine.policy = SummarizationPolicy(recall_enabled=True)
    assert engine.recalled()
    engine.append(assistant("I do not remember."))
    assert not engine.recalled()  # recall serves the pending user message only


def test_recall_forgets_what_undo_brings_back():
    engine, fact = archived_fact_engine()
    while engine.chain():
        engine.undo_last()
    engine.append(user("What was the name of Caroline's greyhound?"), auto=False)
    assert not engine.recalled()
    assert "Biscuit" in engine.context_text()


# ----- automatic policy ----------------------------------------------------------------------------------------

def test_summary_triggers_at_the_threshold_and_keeps_recent_tail():
    engine = engine_with(window=3000, reserve=200, max_summary_tokens=200)
    events = []
    engine.subscribe(events.append)
    added = []
    while not engine.records:
        message = user(f"message {len(added)}: " + long_text(25, f"m{len(added)}x"))
        engine.append(message)
        added.append(message)
        assert len(added) < 200
    record = engine.records[0]
    assert record.trigger == "threshold" and record.usage_ratio >= 0.8
    assert events[0].kind == "summarized" and events[0].record is record
    assert events[0].tokens_before > events[0].tokens_after
    prompt = engine.assemble()
    verbatim = [i.source_id for i in prompt.items if i.kind == "message"]
    # Only the oldest stretch needed to reach the target fill (half the budget) is summarized; the rest, more
    # than the last 6 messages, stays verbatim.
    assert len(verbatim) > 6 and verbatim == [m.id for m in added[-len(verbatim):]]
    assert 0.35 < engine.usage().ratio <= 0.55


def test_hysteresis_cooldown_and_min_messages():
    engine = engine_with(window=3000, reserve=200, min_messages=12, cooldown_messages=4)
    fill(engine, 3, words=95)  # 6 messages only: over the trigger but below min_messages
    assert 0.8 <= engine.usage().ratio < 1.0
    assert engine.records == []
    engine = engine_with(window=3000, reserve=200, keep_recent=6, cooldown_messages=50, max_summary_tokens=100)
    fill(engine, 20, words=40)
    first = len(engine.records)
    assert first >= 1
    # Cooldown: more messages below overflow do not summarize again until 50 new ones arrived.
    while engine.usage().ratio < 0.9:
        fill(engine, 1, words=20)
    assert len(engine.records) == first
    # At >= 1.0 the cooldown is ignored.
    fill(engine, 3, words=80)
    assert len(engine.records) > first
    assert engine.records[-1].trigger == "overflow"


def test_tail_shrinks_toward_two_when_still_over_budget():
    engine = engine_with(window=2200, reserve=200, keep_recent=6, min_recent=2, max_summary_tokens=100)
    fill(engine, 4, words=20)
    fill(engine, 3, words=130)  # six big recent messages do not fit beside a summary
    prompt_is_consistent(engine)
    assert engine.records
    verbatim = [i for i in engine.assemble().items if i.kind == "message"]
    assert 2 <= len(verbatim) < 6


def test_pinned_messages_are_never_summarized():
    engine = engine_with(window=2500, reserve=200)
    pinned = user("Pinned: always answer in French. " + long_text(20, "p"), pinned=True)
    engine.append(pinned)
    fill(engine, 30)
    assert engine.records
    assert all(pinned.id not in r.covered_ids for r in engine.records)
    assert pinned.id in {i.source_id for i in engine.assemble().items if i.kind == "message"}


def test_max_depth_merges_oldest_summaries_and_the_chat_never_stops():
    engine = engine_with(window=2500, reserve=200, max_depth=3, max_summary_tokens=120, cooldown_messages=2)
    kinds = []
    engine.subscribe(lambda e: kinds.append(e.kind))
    fill(engine, 120)
    assert "merged" in kinds
    chain = engine.chain()
    assert len(chain) <= 3
    assert [r.depth for r in chain] == list(range(1, len(chain) + 1))
    merged = next(r for r in engine.records if r.merged_ids)
    assert all(engine.archive.by_record[c].status == "merged" for c in merged.merged_ids)
    prompt_is_consistent(engine)


def test_a_merge_of_merges_stands_for_exactly_the_messages_its_summaries_covered():
    """Merged records keep no copy of what they cover: the coverage, its count in the summary's header and which
    record hides each message come from the leaves, through merges of merges, and undo gives each back."""
    engine = engine_with(window=8000, reserve=200, max_depth=2)
    leaves = []
    for _ in range(4):
        fill(engine, 4)
        leaves.append(engine.summarize_now())
    top = engine.chain()[0]
    assert top.merged_ids and any(engine.archive.by_record[c].merged_ids for c in top.merged_ids)  # a merge of merges
    under = [r for r in leaves if engine.archived_by(r.covered_ids[0]) == top.id]
    covered = [mid for r in under for mid in r.covered_ids]
    assert sorted(engine.archive.covered(top)) == sorted(covered)
    assert engine.archive.covered_count(top) == len(covered)
    assert f"{len(covered)} messages" in engine.assemble().messages[engine.chain().index(top)].content
    assert sorted(m.id for m in engine.archived_messages(top.id)) == sorted(covered)
    assert {mid for mid in covered if engine.archived_by(mid) != top.id} == set()
    engine.undo_last()  # the newest summary
    engine.undo_last()  # the merge: its children hide their own messages again
    for record in engine.chain():
        assert all(engine.archived_by(mid) == record.id for mid in engine.archive.covered(record))
    assert sum(engine.archive.covered_count(r) for r in engine.chain()) == sum(
        engine.is_archived(m.id) for m in engine.messages)


# ----- manual summaries and undo ---------------------------------------------------------------------------------

def test_summarize_now_up_to_a_message_and_undo_restores_exactly():
    engine = engine_with(window=8000, reserve=200)
    added = fill(engine, 8)
    before = [m.content for m in engine.assemble().messages]
    record = engine.summarize_now(up_to=added[5].id)
    assert record.covered_ids == [m.id for m in added[:6]]
    assert all(engine.archived_by(m.id) == record.id for m in added[:6])
    assert engine.archived_messages(record.id) == added[:6]
    events = []
    engine.subscribe(events.append)
    undone = engine.undo_last()
    assert undone.id == record.id and undone.status == "undone"
    assert events[-1].kind == "undone"
    assert [m.content for m in engine.assemble().messages] == before
    assert engine.chain() == []
    with pytest.raises(NothingToUndo):
        engine.undo_last()


def test_undo_returns_the_chain_to_its_parent_and_undoes_merges():
    engine = engine_with(window=8000, reserve=200, max_depth=2)
    fill(engine, 4)
    first = engine.summarize_now()
    fill(engine, 4)
    second = engine.summarize_now()
    assert second.parent_id == first.id
    fill(engine, 4)
    third = engine.summarize_now()  # depth 2 reached: the two oldest merge first
    merged = next(r for r in engine.records if r.merged_ids)
    assert set(merged.merged_ids) == {first.id, second.id}
    assert merged.written_by == "rules"  # a merge's text is rebuilt by the rules
    assert [r.id for r in engine.chain()] == [merged.id, third.id]
    engine.undo_last()
    assert [r.id for r in engine.chain()] == [merged.id]
    engine.undo_last()
    assert [r.id for r in engine.chain()] == [first.id, second.id]


def test_the_terminal_chat_says_a_fold_is_a_fold_and_an_undo_is_an_undo():
    """It said a fold's newest summary's mode, undoing one 'undid the summary of 0 messages', and an undo was
    announced as '[precis: summarized older messages (undo): 3736 -> 33071 tokens ...]'."""
    from precis.core.chat.history import history_lines
    from precis.core.cli.chat import describe_event

    engine = engine_with(window=8000, reserve=200, max_depth=2)
    events = []
    engine.subscribe(events.append)
    for _ in range(3):
        fill(engine, 4)
        engine.summarize_now()
    [merged] = [e for e in events if e.kind == "merged"]
    assert describe_event(merged).startswith("[precis: merged older summaries (merge at maximum depth): ")
    assert describe_event(merged).endswith(", depth 1, fold]")
    [fold_line] = [line for line in history_lines(engine.messages, engine.records) if "fold of 2 summaries" in line]
    assert "merge at maximum depth" in fold_line and fold_line.startswith("1. ")
    engine.undo_last()  # the summary written after the fold
    assert describe_event(events[-1]).startswith("[precis: undid the summary: 8 messages are back in the context (")
    engine.undo_last()  # the fold
    assert describe_event(events[-1]).startswith(
        "[precis: undid the summary: the 2 summaries it folded are back in the chain (")


def test_undo_refuses_when_an_original_no_longer_matches_its_fingerprint():
    engine = engine_with(window=8000, reserve=200)
    added = fill(engine, 6)
    engine.summarize_now()
    # Simulate a corrupted archive behind the engine's back.
    engine.messages[0] = added[0].with_changes(content="tampered")
    with pytest.raises(IntegrityError):
        engine.undo_last()


def test_a_chat_reusing_tool_call_ids_is_summarized_without_splitting_a_call_from_its_result():
    """Some servers number calls per reply ("call_0" every time): a result belongs to the nearest call of its id
    before it, so the older turns can still be summarized (matching any earlier call left nothing to take)."""
    engine = engine_with(window=8000, reserve=200, keep_recent=4)
    for i in range(12):
        call = ToolCall(id="call_0", name="Bash", arguments={"command": f"ls dir{i}"})
        for message in (user(f"list dir{i}"), Message(role="assistant", content="", tool_calls=(call,)),
                        Message(role="tool", content="\n".join(f"file{i}_{k}.txt" for k in range(30)), name="Bash",
                                tool_call_id="call_0"),
                        assistant(f"dir{i} holds file{i}.txt")):
            engine.append(message, auto=False)
    assert engine.can_summarize()
    engine.summarize_now()
    messages = engine.messages
    hidden = [engine.is_archived(m.id) for m in messages]
    assert not all(hidden) and sum(hidden) >= len(messages) - 8, "all but the recent turns are summarized"
    for n, message in enumerate(messages):
        if message.role == "tool":  # its call, the message before it here, is on the same side
            assert hidden[n - 1] == hidden[n]


def test_nothing_to_summarize_when_only_the_tail_remains():
    engine = engine_with(window=8000, reserve=200)
    fill(engine, 2)
    with pytest.raises(NothingToSummarize):
        engine.summarize_now()


def test_restore_rebuilds_the_same_prompt():
    engine = engine_with(window=2500, reserve=200, max_depth=2, cooldown_messages=2)
    fill(engine, 60)
    engine.undo_last()
    restored = ContextEngine.restore(engine.messages, engine.records, engine.budget, engine.policy)
    assert [m.content for m in restored.assemble().messages] == [m.content for m in engine.assemble().messages]


# ----- secrets -------------------------------------------------------------------------------------------------

def test_summaries_never_carry_secrets():
    engine = engine_with(window=8000, reserve=200)
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    engine.append(user(f"use OPENAI_API_KEY={secret} for the deploy, and password: hunter2hunter2"))
    call, result = tool_pair("Bash", {"command": f"curl -H 'Authorization: Bearer {secret}' https://api/x"},
                             f"error: token {secret} rejected")
    for m in (call, result):
        engine.append(m)
    fill(engine, 4)
    record = engine.summarize_now()
    dumped = record.model_dump_json()
    assert secret not in dumped and "hunter2hunter2" not in dumped
    assert record.redactions > 0


# ----- LLM and hybrid summaries ------------------------------------------------------------------------------------

VALID = json.dumps({"narrative": "The user asked about `parse_config`; we fixed the loader.",
                    "action_items": [{"owner": "user", "task": "review the loader", "due": ""}],
                    "key_points": ["parse_config fixed"], "decisions": ["use TOML"]})


def llm_engine(provider, mode="llm", **policy):
    summarizer = (LLMSummarizer if mode == "llm" else HybridSummarizer)(provider, sleep=lambda s: sleeps.append(s))
    engine = ContextEngine(Budget(window=8000, reserve_output=200),
                           SummarizationPolicy(mode=mode, **policy), TokenCounter(), summarizer)
    # What the scripted summaries talk about, so that they are grounded in the transcript.
    engine.append(user("Please fix `parse_config` in the loader, and use TOML."), auto=False)
    return engine, summarizer


sleeps: list[float] = []


def test_llm_summary_uses_the_model_json_and_adds_user_instructions():
    provider = ScriptedProvider([VALID])
    engine, _ = llm_engine(provider, extra_instructions="Mention ticket numbers.")
    fill(engine, 5)
    record = engine.summarize_now(instructions="Focus on the config loader.")
    assert record.mode == "llm" and not record.fallback_used
    assert "parse_config" in record.text and "use TOML" in record.text
    # The structured fields are the model's (hybrid asks it for the story only; the rules give its decisions).
    assert record.facets.decisions == ["use TOML"] and record.facets.action_items[0].task == "review the loader"
    system = provider.calls[0][0].content
    assert "Do not invent" in system  # the default prompt is kept ...
    assert "Focus on the config loader." in system and "Mention ticket numbers." in system  # ... and extended


def test_invalid_json_falls_back_to_rules_without_retry(caplog):
    secret = "sk-ant-" + "x9Y8z7W6v5U4t3S2r1Q0" * 2
    provider = ScriptedProvider([f"not json at all, key {secret}", VALID])
    engine, summarizer = llm_engine(provider)
    fill(engine, 5)
    with caplog.at_level(logging.WARNING, logger="precis.summarize"):
        record = engine.summarize_now()
    assert len(provider.calls) == 1, "invalid JSON must not be retried"
    assert record.fallback_used and record.mode == "rule" and "invalid JSON" in record.fallback_reason
    assert "not json at all" in caplog.text and secret not in caplog.text
    assert summarizer.attempts == ["invalid"]


def test_transport_error_is_retried_once_with_backoff_then_falls_back():
    sleeps.clear()
    provider = ScriptedProvider([ServerError("502 from server"), ServerError("502 again"), VALID])
    engine, _ = llm_engine(provider)
    fill(engine, 5)
    record = engine.summarize_now()
    assert len(provider.calls) == 2 and sleeps == [0.25]
    assert record.fallback_used and "unavailable" in record.fallback_reason
    provider = ScriptedProvider([ServerError("blip"), VALID])
    engine, _ = llm_engine(provider)
    fill(engine, 5)
    assert not engine.summarize_now().fallback_used


def test_abort_on_failure_raises_and_loses_nothing():
    provider = ScriptedProvider(["{broken"])
    engine, _ = llm_engine(provider, abort_on_failure=True)
    added = [*engine.messages, *fill(engine, 5)]
    before = engine.assemble().messages
    with pytest.raises(SummarizationFailed):
        engine.summarize_now()
    assert engine.records == [] and engine.messages == added
    assert engine.assemble().messages == before


def test_summary_request_always_fits_the_summarizers_window():
    provider = ScriptedProvider([VALID], window=700)
    engine, _ = llm_engine(provider)
    fill(engine, 30, words=80, auto=False)
    engine.summarize_now()
    request = provider.calls[0]
    assert COUNTER.prompt_tokens(request) + 64 <= 700
    assert "older messages cut" in request[1].content
    # The newest side is kept: the last summarized answer is in the request.
    assert "a26x" in request[1].content


def test_hybrid_takes_facts_from_rules_and_narrative_from_the_model():
    provider = ScriptedProvider(["The user asked about `parse_config`; we fixed the loader. Then"])
    engine, _ = llm_engine(provider, mode="hybrid")
    engine.append(user("please fix the failing import in `app/loader.py`"))
    for m in tool_pair("Read", {"file_path": "/repo/app/loader.py"}, "1\timport tomllib\n2\tdef load(): ..."):
        engine.append(m)
    for m in tool_pair("Bash", {"command": "pytest tests/test_loader.py"}, "Exit code 1\nE   ModuleNotFoundError"):
        engine.append(m)
    fill(engine, 4)
    record = engine.summarize_now()
    assert record.mode == "hybrid"
    assert "/repo/app/loader.py" in record.facets.files_read
    assert any(c.command.startswith("pytest tests/test_loader.py") for c in record.facets.commands)
    assert "/repo/app/loader.py" in record.text and "ModuleNotFoundError" in record.text
    # The rules' sections, then the model's story (plain text, cut at its last full sentence), as document 002 has it.
    assert record.text.endswith("What happened:\n- The user asked about `parse_config`; we fixed the loader.")
    # The model is sent what the people said (the tools' results are in the trail), and asked for a story only.
    request = provider.calls[0][1].content
    assert "please fix the failing import" in request and "TOOL RESULT" not in request
    assert request.endswith(NARRATIVE_ASK)
    assert record.written_by == "scripted: scripted"  # provider and model, on the record


# A scripted narrative: the embedded model cannot answer on demand for every case hypothesis draws.
NARRATIVE = "The agent read the challenge files. It then ran the scripts to get the flag."


def trail_lines(text: str) -> list[str]:
    """The lines of a rule summary other than its header and its key points (the part a narrative gives way to)."""
    lines, section = [], ""
    for line in text.splitlines()[1:]:
        if not line.startswith("- "):
            section = line
        if section != "Key points:":
            lines.append(line)
    return lines


@given(cap=st.integers(min_value=60, max_value=1200), start=st.integers(min_value=0, max_value=20))
def test_a_hybrid_summary_keeps_every_line_of_the_rules_trail(cap, start):
    messages = read_transcript(TRANSCRIPTS[0])[start:start + 24]
    request = SummaryRequest(messages=messages, max_tokens=cap, counter=COUNTER)
    rule = RuleSummarizer().summarize(request)
    hybrid = HybridSummarizer(ScriptedProvider([NARRATIVE])).summarize(request)
    assert COUNTER.count_text(hybrid.text) <= cap
    assert set(trail_lines(rule.text)) <= set(hybrid.text.splitlines())
    if hybrid.mode == "hybrid":
        assert "The agent read the challenge files." in hybrid.text and hybrid.written_by == "scripted: scripted"
    else:  # no room beside the trail: the rules' summary, saying why
        assert hybrid.fallback_used and hybrid.text == rule.text and hybrid.written_by == "rules"


# ----- drift and real transcripts ----------------------------------------------------------------------------------

def test_an_early_identifier_survives_two_successive_summarizations():
    engine = engine_with(window=8000, reserve=200, max_depth=2)
    engine.append(user("The bug is in `resolve_widget_registry`; keep that name in mind."))
    for _ in range(3):
        fill(engine, 6, auto=False)
        engine.summarize_now()
    assert any(r.merged_ids for r in engine.chain()), "the third summary should have merged the first two"
    assert "resolve_widget_registry" in engine.context_text()


@pytest.mark.slow
@pytest.mark.parametrize("window", [4096, 8192, 32768])
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.stem)
def test_shared_transcripts_replay_within_budget(path, window):
    messages = read_transcript(path)
    engine = ContextEngine(Budget(window=window, reserve_output=512), SummarizationPolicy(), TokenCounter())
    for message in messages:
        engine.append(message)
        prompt = engine.assemble()
        assert prompt.tokens <= engine.budget.available
    prompt_is_consistent(engine)
    for record in engine.records:
        assert record.trail_coverage is not None


def test_the_chat_system_prompt_comes_first_and_is_never_summarized():
    engine = engine_with(window=2500, reserve=200)
    engine.system_prompt = "You are terse. Answer in French."
    fill(engine, 30)
    assert engine.records
    prompt = engine.assemble()
    assert prompt.items[0].kind == "system" and prompt.messages[0].content == engine.system_prompt
    covered = engine.records[0].covered_ids[0]
    assert engine.is_archived(covered) and not engine.is_archived(engine.messages[-1].id)
    prompt_is_consistent(engine)
    usage = engine.usage()
    assert usage.by_kind["system"] >= engine.counter.count_text(engine.system_prompt)


def test_can_summarize_says_whether_summarize_now_has_anything_to_take():
    engine = engine_with(window=8000, reserve=200)
    fill(engine, 3, auto=False)
    assert not engine.can_summarize()  # 6 messages: all in the recent tail kept verbatim
    fill(engine, 1, auto=False)
    assert engine.can_summarize()
    engine.summarize_now()
    assert not engine.can_summarize()
    with pytest.raises(NothingToSummarize):
        engine.summarize_now()


@pytest.mark.slow
def test_summarizing_after_one_summary_that_took_the_chains_whole_share_folds_it_rather_than_writing_a_marker():
    """The Claude Code session at 8k: opening it summarizes 627 messages into one summary that takes the chain's
    whole share (its cap is all the room there is). Summarize now then wrote '[15 earlier messages archived; no room
    for a summary]': the commands and replies of those 15 messages were gone from what the model sees. (The chain's
    share is 25% here, below the rules' summary of those 627 messages, so that it is cut to its cap whatever its
    length: at 30% it now leaves 123 tokens.)"""
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="rule", chain_share=0.25),
                           TokenCounter())
    for message in read_transcript(TRANSCRIPTS[0].parent / "claudecode_session.jsonl"):
        engine.append(message, auto=False)
    first = engine.maybe_summarize()
    assert first is not None and engine.summarization.summary_cap() < 50, "the first summary took the chain's share"
    stretch = engine.summarization.candidates(engine.summarization._tail_keep())
    record = engine.summarize_now()
    assert "no room for a summary" not in record.text
    assert {m.id for m in stretch} == set(record.covered_ids)
    assert "mix format --check-formatted" in record.text  # a command run in the stretch
    assert engine.chain()[0].merged_ids == [first.id]  # the first summary, folded to leave room
    prompt_is_consistent(engine)
    engine.undo_last()
    engine.undo_last()  # the fold of the first summary
    assert [r.id for r in engine.chain()] == [first.id]


def test_overflow_with_few_huge_messages_still_summarizes_down_to_the_minimum_tail():
    engine = engine_with(window=3000, reserve=200, keep_recent=6, min_recent=2)
    for i in range(4):
        engine.append(user(f"paste {i}: " + long_text(250, f"h{i}x")))
    assert engine.records and engine.records[-1].trigger == "overflow"
    assert [i.source_id for i in engine.assemble().items if i.kind == "message"] == \
        [m.id for m in engine.messages[-2:]]


def test_model_claims_not_in_the_transcript_are_dropped():
    reply = json.dumps({
        "narrative": "The user asked to fix `parse_config`. Then we cloned https://github.com/made/up.git "
                     "into /opt/invented/dir.",
        "key_points": ["parse_config fixed", "deployed to staging2 cluster"],
        "entities": ["parse_config", "GitLabRunner"]})
    engine, summarizer = llm_engine(ScriptedProvider([reply]))
    fill(engine, 5, auto=False)
    record = engine.summarize_now()
    assert not record.fallback_used and summarizer.attempts == ["ok"]
    assert "parse_config" in record.text
    for invented in ("github.com/made", "/opt/invented", "staging2", "GitLabRunner"):
        assert invented not in record.model_dump_json()


def test_a_wholly_invented_narrative_falls_back_to_the_rules():
    reply = json.dumps({"narrative": "[40 older messages cut to fit] ASSISTANT: see http://example.org/x"})
    engine, summarizer = llm_engine(ScriptedProvider([reply]))
    fill(engine, 5, auto=False)
    record = engine.summarize_now()
    assert record.fallback_used and record.mode == "rule" and "not in the transcript" in record.fallback_reason
    assert summarizer.attempts == ["ungrounded"]


def test_merging_facets_keeps_every_fact_once_and_adds_command_counts():
    from precis.core.model.records import CommandRun, Facets
    from precis.core.summary.facets import merge_facets

    older = Facets(files_read=["a.py"], commands=[CommandRun(command="pytest", exit_code=1, count=2)])
    newer = Facets(files_read=["a.py", "b.py"], commands=[CommandRun(command="pytest", exit_code=1, count=3),
                                                          CommandRun(command="make", exit_code=None)])
    merged = merge_facets([older, newer])
    assert merged.files_read == ["a.py", "b.py"]
    assert [(c.command, c.count) for c in merged.commands] == [("pytest", 5), ("make", 1)]


def test_a_merge_keeps_a_bounded_trail_saying_how_much_it_left_out():
    """However long the chat, a merged record keeps at most MERGED_ENTRIES of each kind (the first request and the
    newest), says how many it dropped, and its trail-coverage check counts the dropped facts as not kept."""
    from precis.core.model.records import Facets
    from precis.core.summary.facets import merge_facets
    from precis.core.summary.trail_coverage import MERGED_ENTRIES, InstructionFact, TrailFacts, check_facts, union_facts

    stretches = [Facets(user_requests=[f"request {n}" for n in range(start, start + 700)], files_read=["a.py"])
                 for start in (0, 700, 1400)]
    merged = merge_facets(stretches[:2])
    assert len(merged.user_requests) == MERGED_ENTRIES and merged.dropped == {"user_requests": 400}
    again = merge_facets([merged, stretches[2]])
    assert again.user_requests[0] == "request 0" and again.user_requests[-1] == "request 2099"
    assert len(again.user_requests) == MERGED_ENTRIES and again.dropped == {"user_requests": 1100}
    assert again.files_read == ["a.py"]

    facts = union_facts([TrailFacts(instructions=[InstructionFact(f"deploy bay {n}", (f"bay{n}",))
                                                  for n in range(start, start + 700)]) for start in (0, 700)])
    assert len(facts.instructions) == MERGED_ENTRIES and facts.dropped == {"instructions": 400}
    coverage = check_facts(facts, "bay0 bay1399")
    assert coverage.total["instructions"] == 1400 and coverage.kept["instructions"] == 2


# ----- one policy: target fill, re-arm, second pass, the chain's share, the floor -------------------------------

def test_rearms_after_enough_new_messages_even_above_the_reset_ratio():
    # The target fill sits above the reset ratio, so only the new-message count can re-arm the policy.
    engine = engine_with(window=3000, reserve=200, trigger_ratio=0.8, reset_ratio=0.3, target_ratio=0.6,
                         cooldown_messages=2, rearm_messages=6, min_messages=4)
    fill(engine, 12, words=40)
    assert engine.records and engine.usage().ratio >= 0.3
    summaries = len(engine.records)
    fill(engine, 6, words=40)
    assert any(r.trigger == "threshold" for r in engine.records[summaries:]), "re-armed by new messages"


def test_a_small_window_with_a_large_system_prompt_summarizes_a_handful_of_times():
    """sweagent_1 at 4k: the system prompt takes 41% of the budget. Each summary takes the stretch needed for the
    target fill and old tool outputs shrink first, so the policy no longer fires every two messages (was 25)."""
    engine = ContextEngine(Budget(window=4000, reserve_output=512), SummarizationPolicy(mode="rule"), TokenCounter())
    for message in read_transcript(TRANSCRIPTS[0].parent / "sweagent_1.jsonl"):
        engine.append(message)
        chain = sum(engine.counter.raw_message_tokens(engine.archive.summary_message(r)) for r in engine.chain())
        assert chain <= engine.budget.available * engine.policy.chain_share + 60, "the chain keeps to its share"
    summaries = [r for r in engine.records if not r.merged_ids]
    assert len(summaries) <= 5 and len(engine.records) <= 8  # was 6 summaries and 4 merges
    assert engine.usage().floor_ratio > 0.4  # the system prompt and the chain, shown by the gauge


def test_no_summary_while_a_tool_call_awaits_its_result():
    """The result comes before the model is asked anything; summarizing at the call could only take what precedes
    it (a call is never parted from its result), so a small window would summarize two messages at a time."""
    engine = engine_with(window=2048, reserve=256, min_messages=2, cooldown_messages=0)
    fill(engine, 4, words=40)
    call, result = tool_pair("write_file", {"path": "notes.md", "content": long_text(60, "note")}, "written")
    assert engine.append(call) is None
    assert engine.usage().ratio >= engine.policy.trigger_ratio
    record = engine.append(result)
    assert record is not None and record.trigger in ("threshold", "overflow")
    assert call.id not in record.covered_ids and result.id not in record.covered_ids


def test_over_the_budget_after_a_call_awaiting_its_result_the_next_message_summarizes_and_says_so():
    """A call being run at 219% (sweagent_1 at 8k, its last call appended live): nothing is summarized until its
    result comes, and the inspector said 'No summary can make room: the next message is sent cut like this' beside
    'Summarize now to make room yourself'; the next message does summarize."""
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="rule"), TokenCounter())
    *history, call = read_transcript(TRANSCRIPTS[0].parent / "sweagent_1.jsonl")
    for message in history:
        engine.append(message, auto=False)
    engine.append(call)
    assert engine.messages[-1].tool_calls and engine.usage().ratio > 1
    assert engine.maybe_summarize() is None  # not while the call waits for its result
    note = over_budget(engine, engine.usage())
    assert note.next_message == "The next message first summarizes older messages to make room (this can take a while)."
    record = engine.append(user("Did the flag get accepted?"))
    assert record is not None and engine.usage().ratio <= 1


def test_the_over_budget_note_names_a_few_messages_cut_short_and_counts_the_rest():
    """A long LoCoMo-like chat (a session marker every few messages) at a small window, its messages pinned (so
    neither they nor the markers dating them are left out), cuts every one short: the note named each one, 70 kB in
    one line of `precis context` and in the inspector's label."""
    engine = ContextEngine(Budget(window=1024, reserve_output=64), SummarizationPolicy(mode="rule"), TokenCounter())
    for n in range(40):
        engine.append(Message("system", f"Session {n} - 1:14 pm on {n} May, 2023. " + "the weather was mild and " * 10),
                      auto=False)
        engine.append(user(f"hello {n} " + "words " * 20, pinned=True), auto=False)
    note = over_budget(engine, engine.usage())
    assert note is not None
    named = re.findall(r"message \d+ \((?:system|user)\) cut from", note.cut)
    unnamed = int(re.search(r"; (\d+) more messages cut short\.$", note.cut).group(1))
    assert len(named) == 3 and unnamed > 10
    assert len(note.cut) < 300


def test_target_fill_must_be_below_the_trigger():
    assert "“Summarize down to” (85 % of the budget)" in policy_errors({"target_ratio": 0.85})[""]


def test_long_unbroken_text_is_tokenized_in_bounded_pieces(monkeypatch):
    """BPE time grows with the square of an unbroken run: one 20 MB letter took 26 s and 1.1 GB. The encoder is
    only ever given bounded pieces, and the count stays that of the whole text for ordinary words."""
    counter = TokenCounter()
    encoding = counter._encoding
    words = " ".join(f"word{i} the parcel leaves\nat noon" for i in range(3000))
    whole = len(encoding.encode_ordinary(words))
    longest: list[int] = []
    original = encoding.encode_ordinary
    monkeypatch.setattr(encoding, "encode_ordinary", lambda text: longest.append(len(text)) or original(text))
    assert counter.count_text(words) == whole
    run = "a" * 200_000
    assert abs(counter.count_text(run) - len(original(run))) <= len(run) // 64
    assert max(longest) <= 4096


@given(steps=st.lists(st.sampled_from(["turn", "turn", "turn", "pin", "summarize", "undo"]), min_size=1, max_size=40),
       max_depth=st.integers(2, 4))
@example(steps=["turn"] * 6 + ["pin", "undo"], max_depth=2)  # a message pinned while archived came back twice
def test_the_visible_set_kept_step_by_step_is_the_one_a_fresh_restore_derives(steps, max_depth):
    """Summaries hide, and undos bring back, their own range without rescanning the chat; whatever the order of
    summaries, merges, pins and undos, the prompt is the one an engine restored from the same records sends."""
    engine = engine_with(window=1024, reserve=128, max_depth=max_depth, keep_recent=2, min_messages=2)
    for n, step in enumerate(steps):
        if step == "turn":
            fill(engine, 1, words=25)
        elif step == "pin" and engine.messages:
            engine.set_pinned(engine.messages[n % len(engine.messages)].id, True)
        elif step == "summarize" and engine.can_summarize():
            before = engine.usage(False)
            merges: list = []
            stop = engine.subscribe(lambda event, merges=merges: event.kind == "merged" and merges.append(event))
            try:
                engine.summarize_now()
            except SummaryNotSmaller:  # one that saves nothing is taken back whole...
                # ...but a fold at the chain's depth made on its way is an event of its own, kept and shown
                assert engine.usage(False).total == (merges[-1].tokens_after if merges else before.total)
                assert merges or engine.usage(False) == before
            stop()
        elif step == "undo" and engine.chain():
            engine.undo_last()
        fresh = ContextEngine.restore(list(engine.messages), [r.model_copy(deep=True) for r in engine.records],
                                      engine.budget, engine.policy, TokenCounter())
        assert [m.id for m in engine.assemble(recall=False).messages] == [
            m.id for m in fresh.assemble(recall=False).messages]
        assert [engine.is_archived(m.id) for m in engine.messages] == [fresh.is_archived(m.id) for m in fresh.messages]


def restored_afresh(engine: ContextEngine) -> ContextEngine:
    """An engine restored from the same messages and records: nothing kept step by step is reused."""
    fresh = ContextEngine.restore(list(engine.messages), [r.model_copy(deep=True) for r in engine.records],
                                  engine.budget, engine.policy, engine.counter, system_prompt=engine.system_prompt)
    fresh.set_tools(TOOL_SPECS if engine.setup.tool_tokens else [])
    return fresh


def recounted_usage(engine: ContextEngine, recall: bool) -> tuple[dict[str, int], int, float]:
    """Usage by kind, total and floor ratio counted afresh: every item of the prompt before trimming of an engine
    restored afresh."""
    engine = restored_afresh(engine)
    names = {"system": "system", "summary": "summaries", "recalled": "recalled", "message": "messages",
             "tool_output": "tool_outputs"}
    items = engine.meter.items()
    if recall:
        items = engine.recaller.with_recall(items)
    by_kind = {"system": 0, "tools": 0, **dict.fromkeys(list(names.values())[1:], 0)}
    by_kind["messages"] = REPLY_PRIMING  # the header the reply starts with: sent after the messages
    by_kind["tools"] = engine.counter.count_text(specs_json(TOOL_SPECS)) if engine.setup.tool_tokens else 0
    raw = floor = REPLY_PRIMING + by_kind["tools"]
    for item in items:
        by_kind[names[item.kind]] += item.tokens
        raw += item.tokens
        if item.kind in ("system", "summary") or item.message.pinned:
            floor += item.tokens
    calibrated = engine.counter.calibrated
    # Calibrated as running sums, so that the kinds shown add up to the total shown.
    shown, running = {}, 0
    for kind, tokens in by_kind.items():
        shown[kind] = calibrated(running + tokens) - calibrated(running)
        running += tokens
    return shown, calibrated(raw), calibrated(floor) / engine.budget.available


@given(steps=st.lists(st.sampled_from(["user", "assistant", "tool", "system", "pinned", "pin", "unpin", "pin archived",
                                       "summarize", "undo", "remove", "calibrate", "ask", "tools"]), min_size=1,
                      max_size=50),
       max_depth=st.integers(2, 4), system_prompt=st.sampled_from(["", "Answer briefly."]))
@example(steps=["user", "assistant"] * 3 + ["summarize", "pin archived", "undo"], max_depth=4, system_prompt="")
@example(steps=["user"] * 4 + ["summarize", "pin"], max_depth=2, system_prompt="")  # recalled a message pinned since
def test_usage_kept_as_messages_come_and_go_is_a_full_recount(steps, max_depth, system_prompt):
    """Usage is read from a running tally (so the policy can ask after every message of a long chat); after any
    order of messages of every kind, pins, summaries, merges, undos, removals and calibration it equals counting
    every item of the prompt afresh, with and without recall."""
    engine = engine_with(window=1024, reserve=128, max_depth=max_depth, keep_recent=2, min_messages=2,
                         recall_enabled=True, recall_ratio=0.3)
    engine.system_prompt = system_prompt
    for n, step in enumerate(steps):
        text = f"{TOPICS[n % 3]} " + long_text(20 + n % 7, f"u{n}")
        if step in ("user", "assistant", "system"):
            engine.append(Message(role=step, content=text))
        elif step == "ask":  # a question about an archived topic: recall fills free room
            engine.append(Message(role="user", content=f"what about the {TOPICS[n % 3]}?"), auto=False)
        elif step == "tool":
            for message in tool_pair("Bash", {"command": f"make t{n}"}, text):
                engine.append(message)
        elif step == "pinned":
            engine.append(user(text, pinned=True))
        elif step in ("pin", "unpin") and engine.messages:
            engine.set_pinned(engine.messages[n % len(engine.messages)].id, step == "pin")
        elif step == "pin archived" and any(engine.is_archived(m.id) for m in engine.messages):
            # Visible again while its summary stays: undoing that summary must not count it twice.
            engine.set_pinned(next(m.id for m in engine.messages if engine.is_archived(m.id)), True)
        elif step == "summarize" and engine.can_summarize():
            before = engine.usage(False)
            merges: list = []
            stop = engine.subscribe(lambda event, merges=merges: event.kind == "merged" and merges.append(event))
            try:
                engine.summarize_now()
            except SummaryNotSmaller:  # one that saves nothing is taken back whole...
                # ...but a fold at the chain's depth made on its way is an event of its own, kept and shown
                assert engine.usage(False).total == (merges[-1].tokens_after if merges else before.total)
                assert merges or engine.usage(False) == before
            stop()
        elif step == "undo" and engine.chain():
            engine.undo_last()
        elif step == "remove" and engine.messages and not engine.archived_by(engine.messages[-1].id):
            engine.remove_last(engine.messages[-1].id)
        elif step == "calibrate":
            engine.counter.calibrate(1000, 1100 + 10 * n)
        elif step == "tools":  # sent with each request from now on, or no longer
            engine.set_tools([] if engine.setup.tool_tokens else TOOL_SPECS)
        for recall in (False, True):
            usage = engine.usage(recall)
            assert (usage.by_kind, usage.total, usage.floor_ratio) == recounted_usage(engine, recall)
            assert sum(usage.by_kind.values()) == usage.total  # the inspector's and `precis context`'s lines add up
        # Merges fold the chain in place: which summary hides each message is what a restore derives.
        fresh = restored_afresh(engine)
        assert [r.id for r in engine.chain()] == [r.id for r in fresh.chain()]
        assert [engine.archived_by(m.id) for m in engine.messages] == [fresh.archived_by(m.id) for m in fresh.messages]


def test_opening_a_chat_again_cuts_and_counts_none_of_its_old_tool_outputs_again():
    """Opening a chat builds a new engine. Its old tool outputs, shrunk to one line each to fit the prompt, are not cut
    and counted with the model's tokenizer again (that was most of reopening a long chat): the lines and their counts
    made for the first engine are reused, and the prompt is the same. Another tokenizer counts them itself."""
    counted: list[str] = []

    def counting(text: str) -> int:  # the offline tokenizer, recording what it is asked to count
        counted.append(text)
        return COUNTER.count_text(text)

    messages = []
    for i in range(40):
        messages += [user(f"run step {i}"),
                     *tool_pair("Bash", {"command": f"make step{i}"}, long_text(300, f"out{i}x") + "\nexit code 0")]
    messages.append(user("and now?"))

    def opened(counter: TokenCounter) -> ContextEngine:
        return ContextEngine.restore(messages, [], Budget(window=4096, reserve_output=256),
                                     SummarizationPolicy(enabled=False), counter)

    first = opened(TokenCounter(exact=counting, exact_name="counting"))
    prompt = first.assemble()
    lines = {item.message.content for item in prompt.items if item.message.id.endswith("~trimmed")}
    assert len(lines) > 20 and lines <= set(counted)  # shrunk, each line counted

    counted.clear()
    again = TokenCounter(exact=counting, exact_name="counting")
    again.seed(messages, first.counter.known_counts(messages))  # the counts the store keeps for the messages
    reopened = opened(again).assemble()
    assert not lines & set(counted)
    assert [(i.kind, i.message.content, i.tokens) for i in reopened.items] == \
        [(i.kind, i.message.content, i.tokens) for i in prompt.items]

    other = opened(TokenCounter(exact=lambda text: counting(text) + 1, exact_name="another"))
    counted.clear()
    other.assemble()
    assert lines <= set(counted)


def test_over_the_budget_by_tool_outputs_that_shrink_to_fit_nothing_is_said_left_out():
    """A chat over the budget by old tool outputs, which shrink to their one line to fit: the inspector said "2 oldest
    messages left out; 2 old tool outputs shrunk to one line" of the same outputs (sent shrunk, under ids of their
    own), and "No summary can make room" beside "Summarize now to make room yourself"."""
    engine = engine_with(window=2048, reserve=256)
    engine.append(user("Read the two modules."), auto=False)
    for n in (1, 2):
        for message in tool_pair("Read", {"file_path": f"/src/module_{n}.py"},
                                 "\n".join(f"{i}\tdef function_{n}_{i}(): return {i}" for i in range(80))):
            engine.append(message, auto=False)
    for message in (assistant("Both modules define plain functions."), user("Thanks. What next?")):
        engine.append(message, auto=False)
    assert engine.usage().ratio > 1 and engine.summary_due(next_message=True) is None
    prompt = engine.assemble()
    assert prompt.tokens <= engine.budget.available
    assert {i.source_id for i in prompt.items} >= {m.id for m in engine.messages}  # every message is sent
    note = over_budget(engine, engine.usage())
    # One thing is said, and nothing is asked of the user: not "Start a new chat" beside "it fits".
    assert note.sent_tokens == prompt.tokens and note.lines() == [
        f"{prompt.tokens:,} of {engine.budget.available:,} tokens are sent: the chat's full text is "
        f"{engine.usage().total:,}, and 1 old tool output goes shrunk to one line to fit (the full text stays in "
        f"the chat)."]
