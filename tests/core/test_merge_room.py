"""How much of the chain's room a merge of rule summaries takes: all but what the next summary needs. The merge is
all that is left of the early work; the next summary lives only until the next merge folds its facts in."""

from __future__ import annotations

from precis.core.context.engine import Budget, ContextEngine
from precis.core.context.summarizing import NEXT_SUMMARY_ROOM, next_room
from precis.core.model.messages import Message, ToolCall
from precis.core.model.tokens import TokenCounter
from precis.core.settings import SummarizationPolicy


def coding_session(engine: ContextEngine, steps: int, first: int = 0) -> list[str]:
    """Each step runs a command of its own (a build of one module) and reads a long log."""
    commands = []
    for n in range(first, first + steps):
        command = f"make -C modules/module_{n:03d} check TARGET=unit_{n:03d}"
        call = ToolCall(id=f"call-{n}", name="Bash", arguments={"command": command})
        engine.append(Message(role="user", content=f"Now check module {n}."))
        engine.append(Message(role="assistant", content=f"Checking module {n}.", tool_calls=(call,)))
        engine.append(Message(role="tool", tool_call_id=call.id, name="Bash",
                              content="\n".join(f"module_{n:03d}: test {k} passed" for k in range(60))))
        commands.append(command)
    return commands


def test_a_merge_takes_the_chains_room_but_what_the_next_summary_needs():
    engine = ContextEngine(Budget(window=8192, reserve_output=512), SummarizationPolicy(mode="rule"), TokenCounter())
    summarization, tokens = engine.summarization, engine.counter.raw_message_tokens
    left_by_merges: list[tuple[int, int]] = []  # (the room the merge had, what it left)

    def on_event(event) -> None:
        if event.kind == "merged":
            left = summarization.chain_room()
            left_by_merges.append((left + tokens(engine.archive.summary_message(event.record)), left))

    engine.subscribe(on_event)
    commands = coding_session(engine, 260)
    assert len(left_by_merges) > 5
    # Once the trail is longer than the room (after the first few merges), each merge leaves the next summary its
    # room and takes the rest (with a quarter left, 511 of 1,933 tokens stayed unused).
    for room, left in left_by_merges[3:]:
        assert 0 <= left <= next_room(room) + 40, (room, left)
    merged = engine.chain()[0]
    # Every command is in the merge's facts, to rebuild from at the next merge; its text keeps the newest.
    assert merged.facets.commands[0].command == commands[0]
    assert merged.facets.commands[-1].command in merged.text


def test_a_merge_leaves_a_quarter_at_most_in_a_small_room():
    assert next_room(4000) == 250  # a sixteenth
    assert next_room(2000) == NEXT_SUMMARY_ROOM
    assert next_room(400) == 100  # a quarter: the merge keeps the rest


def test_coding_summaries_together_keep_to_one_summarys_cap():
    """At 32k a chain of trails took 4,500-7,100 tokens where one summary may take 4,000: the chain as a whole now
    keeps to max_summary_tokens (conversation digests keep their share)."""
    engine = ContextEngine(Budget(window=32768, reserve_output=512),
                           SummarizationPolicy(mode="rule", max_summary_tokens=1200), TokenCounter())
    tokens = engine.counter.raw_message_tokens
    for n in range(0, 400, 40):
        coding_session(engine, 40, first=n)
        assert sum(tokens(engine.archive.summary_message(r)) for r in engine.chain()) <= 1200
    assert len([r for r in engine.records if r.merged_ids]) >= 2
