"""A chat's context engine wired to the store: summaries, merges and undos survive a restart exactly."""

from __future__ import annotations

import pytest
from precis.core.context.engine import Budget, ContextEngine
from precis.core.model.messages import Message
from precis.core.settings import SummarizationPolicy
from precis.core.storage.interchange import read_transcript
from precis.core.storage.store import StoreWriteError, attach_engine, open_store
from sqlalchemy import event

from tests.conftest import TRANSCRIPTS

POLICY = SummarizationPolicy(min_messages=6, cooldown_messages=2, keep_recent=4, max_depth=2)
BUDGET = Budget(window=3000, reserve_output=256)


def restore(store, chat):
    return ContextEngine.restore(store.load_messages(chat), store.load_records(chat), BUDGET, POLICY)


def state(engine):
    return ([(r.id, r.status, r.depth) for r in engine.records], [r.id for r in engine.chain()],
            [m.id for m in engine.assemble().messages], {m.id: engine.archived_by(m.id) for m in engine.messages})


def play(tmp_path):
    """Feed a real transcript through an engine attached to the store; return the chat id and live engine."""
    messages = read_transcript(next(p for p in TRANSCRIPTS if p.name == "sweagent_1.jsonl"))
    store = open_store(tmp_path)
    chat = store.create_chat("live")
    engine = restore(store, chat)
    attach_engine(store, chat, engine)
    events = []
    engine.subscribe(lambda e: events.append(e.kind))
    for message in messages:
        store.add_message(chat, message)
        engine.append(message)
    return store, chat, engine, events


@pytest.mark.slow
def test_summaries_and_merges_made_live_are_restored_identically(tmp_path):
    store, chat, engine, events = play(tmp_path)
    assert "summarized" in events and "merged" in events
    live = state(engine)
    store.close()
    with open_store(tmp_path) as store:
        again = restore(store, chat)
        assert state(again) == live
        assert store.archived_by(chat) == {mid: rid for mid, rid in live[3].items() if rid}


def test_undo_is_persisted(tmp_path):
    store, chat, engine, _ = play(tmp_path)
    undone = engine.undo_last()
    live = state(engine)
    store.close()
    with open_store(tmp_path) as store:
        again = restore(store, chat)
        assert state(again) == live
        assert {r.id: r.status for r in again.records}[undone.id] == "undone"


def attached(tmp_path):
    """A store holding a real transcript as a chat, and its engine attached (save errors collected, not raised)."""
    store = open_store(tmp_path)
    chat = store.create_chat("live")
    store.add_messages(chat, read_transcript(next(p for p in TRANSCRIPTS if p.name == "sweagent_1.jsonl")))
    engine = restore(store, chat)
    errors = []
    attach_engine(store, chat, engine, on_error=errors.append)
    return store, chat, engine, errors


def disk_full_now(dbapi_conn, _record):
    """A connection whose database cannot grow: SQLite's max_page_count gives the same SQLITE_FULL as a full disk."""
    dbapi_conn.execute(f"PRAGMA max_page_count = {dbapi_conn.execute('PRAGMA page_count').fetchone()[0]}")


@pytest.mark.slow
def test_a_failed_save_is_reported_not_swallowed(tmp_path):
    """A full disk is injected with SQLite's max_page_count (the same SQLITE_FULL error)."""
    store, chat, engine, errors = attached(tmp_path)
    event.listen(store.engine, "connect", disk_full_now)
    store.engine.dispose()
    engine.summarize_now()
    assert len(errors) == 1 and isinstance(errors[0], StoreWriteError)
    assert store.load_records(chat) == [] and store.archived_by(chat) == {}
    store.close()


def test_what_a_failed_save_left_out_is_written_with_the_next_one(tmp_path):
    """Each event writes only the archive marks of the range it changed: the range of one that failed to save is
    written with the next event, so the store ends up as the engine is (a full disk injected as above)."""
    store, chat, engine, errors = attached(tmp_path)
    event.listen(store.engine, "connect", disk_full_now)
    store.engine.dispose()
    first = engine.summarize_now()
    assert len(errors) == 1
    event.remove(store.engine, "connect", disk_full_now)
    store.engine.dispose()
    more = [Message(role="user" if n % 2 == 0 else "assistant", content=f"then step {n} of the fix") for n in range(8)]
    store.add_messages(chat, more)
    for message in more:
        engine.append(message, auto=False)
    engine.summarize_now()
    assert len(errors) == 1
    live = state(engine)
    assert all(live[3][mid] for mid in first.covered_ids)  # still hidden: by it, or by the merge that folded it
    assert store.archived_by(chat) == {mid: rid for mid, rid in live[3].items() if rid}
    store.close()
    with open_store(tmp_path) as store:
        assert state(restore(store, chat)) == live
