"""A summary that would not make the prompt smaller is not kept, made by hand or automatically, and the user is told
(issue 22: "Summarize now" turned 2 messages into a summary 82 tokens larger and kept it). Rule mode, real store."""

from __future__ import annotations

import pytest
from precis.core.chat.session import ChatSession
from precis.core.cli.chat import describe_event
from precis.core.cli.main import main
from precis.core.context.engine import Budget, ContextEngine
from precis.core.context.events import SummaryNotSmaller
from precis.core.model.messages import Message, ToolCall
from precis.core.model.tokens import TokenCounter
from precis.core.settings import SUMMARIZATION_KEY, SummarizationPolicy
from precis.core.storage.store import open_store

from tests.fakes import ScriptedProvider

SHORT = ["hello world", "hi", "how are you?", "fine, thanks"] * 3


def short_chat(store) -> str:
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    chat_id = store.create_chat("greetings")
    store.add_messages(chat_id, [Message(role="user" if n % 2 == 0 else "assistant", content=text)
                                 for n, text in enumerate(SHORT)])
    return chat_id


def test_summarize_now_that_saves_nothing_is_refused_and_changes_nothing(tmp_path):
    with open_store(tmp_path) as store:
        chat_id = short_chat(store)
        session = ChatSession(store, chat_id, ScriptedProvider())
        session.build_engine(estimate=False)
        before = session.engine.usage(False)
        prompt = [m.content for m in session.engine.assemble().messages]
        with pytest.raises(SummaryNotSmaller, match=r"^not summarized: a summary of \d+ messages would leave the "
                                                    r"prompt at [\d,]+ tokens, not fewer than the [\d,]+"):
            session.summarize_now()
        assert session.engine.usage(False) == before and not session.engine.records
        assert [m.content for m in session.engine.assemble().messages] == prompt
        assert store.load_records(chat_id) == [] and not store.archived_by(chat_id)
        # Nothing half-done is left behind: the next summary that does save is kept as the first of the chain.
        store.add_messages(chat_id, [Message(role="user", content=f"Note {n}: the nightly import on the staging "
                                             f"box writes /var/log/import-{n}.log, which the morning report reads "
                                             f"before anyone is in, and mails its errors to the on-call list.")
                                     for n in range(8)])
        session.build_engine(estimate=False)
        record = session.engine.summarize_now()
        assert record.depth == 1 and record.tokens_after < record.tokens_before
        assert [r.id for r in store.load_records(chat_id)] == [record.id]


def test_the_command_line_refuses_it_as_bad_input(tmp_path, capsys):
    data = tmp_path / "data"
    with open_store(data) as store:
        short_chat(store)
    assert main(["--data-dir", str(data), "summarize", "greetings"]) == 2
    assert "not summarized: a summary of" in capsys.readouterr().err
    with open_store(data) as store:
        [chat] = store.list_chats()
        assert store.load_records(chat.id) == []


def migration_pairs(count: int) -> list[Message]:
    """Distinct commands with one-line outputs: a summary keeps each command, so it is as large as they are."""
    messages = []
    for n in range(count):
        call = ToolCall(id=f"c{n}", name="execute_bash", arguments={
            "command": f"python scripts/migrate_table_{n}.py --source db_{n}.sqlite --target warehouse_{n}"})
        messages += [Message(role="assistant", content="", tool_calls=(call,)),
                     Message(role="tool", name="execute_bash", tool_call_id=call.id, content=f"migrated {n}")]
    return messages


# Where they cross the trigger of a 2,100-token window (38 pairs: 82% of the budget).
MIGRATION_WINDOW = {"context_window": 2100, "reserve_output": 100}
MIGRATION_POLICY = {"mode": "rule", "target_ratio": 0.7, "chain_share": 0.6, "min_messages": 2, "cooldown_messages": 0,
                    "rearm_messages": 6}


def migrations(engine: ContextEngine) -> list:
    """Migration pairs until the engine does something: its events."""
    events = []
    engine.subscribe(events.append)
    for message in migration_pairs(40):
        engine.append(message)
        if events:
            break
    return events


def test_an_automatic_summary_that_saves_nothing_is_not_kept_and_is_told():
    engine = ContextEngine(Budget(window=MIGRATION_WINDOW["context_window"],
                                  reserve_output=MIGRATION_WINDOW["reserve_output"]),
                           SummarizationPolicy(**MIGRATION_POLICY), TokenCounter())
    events = migrations(engine)
    [event] = events
    assert event.kind == "declined" and event.reason == "threshold" and event.tokens_after >= event.tokens_before
    assert not engine.records and not engine.chain()
    assert event.tokens_before == engine.usage(False).total
    told = describe_event(event)
    assert told.startswith("[precis: an automatic summary (threshold) was not kept: it would have left ")
    # It counts as the summary that fired: the next messages do not ask for another at once (each would be
    # declined the same way, an LLM summary costing seconds every time).
    for n in range(2):
        engine.append(Message(role="user", content=f"and table {n}?"))
    assert len(events) == 1 and not engine.records
