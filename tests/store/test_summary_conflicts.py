"""Two Precis (the window, `precis summarize`, `precis undo-summary`) changing one chat's summaries at once: the
second to save, whose engine was restored before the first saved, is refused, so a chat never holds two summaries
of the same messages or an undo counted twice."""

from __future__ import annotations

import pytest
from precis.core.cli.main import main
from precis.core.context.engine import Budget, ContextEngine
from precis.core.settings import SummarizationPolicy
from precis.core.storage.interchange import read_transcript
from precis.core.storage.store import StoreConflict, attach_engine, open_store

from tests.conftest import TRANSCRIPTS

POLICY = SummarizationPolicy(enabled=False, mode="rule")
BUDGET = Budget(window=3000, reserve_output=256)


def imported(tmp_path) -> str:
    messages = read_transcript(next(p for p in TRANSCRIPTS if p.name == "sweagent_1.jsonl"))
    with open_store(tmp_path) as store:
        return store.import_chat("shared", messages)


def restored(store, chat: str) -> tuple[ContextEngine, list]:
    """An engine as a process restores it, saving as it goes; the refused saves are collected."""
    engine = ContextEngine.restore(store.load_messages(chat), store.load_records(chat), BUDGET, POLICY)
    refused: list = []
    attach_engine(store, chat, engine, on_error=refused.append)
    return engine, refused


def stored_state(tmp_path, chat: str):
    with open_store(tmp_path) as store:
        records = store.load_records(chat)
        return [r.status for r in records], store.archived_by(chat), records


def test_a_second_summary_of_the_same_messages_made_meanwhile_is_refused(tmp_path):
    chat = imported(tmp_path)
    with open_store(tmp_path) as first, open_store(tmp_path) as second:
        engine_1, refused_1 = restored(first, chat)
        engine_2, refused_2 = restored(second, chat)
        made = engine_1.summarize_now()
        engine_2.summarize_now()

    assert refused_1 == []
    assert len(refused_2) == 1 and isinstance(refused_2[0], StoreConflict)
    assert "another Precis" in str(refused_2[0]) and "Nothing was changed" in str(refused_2[0])
    statuses, archived_by, records = stored_state(tmp_path, chat)
    assert statuses == ["active"] and records[0].id == made.id
    assert set(archived_by.values()) == {made.id}
    # What the next opening sends: one copy of the summary, the messages it covers hidden once.
    with open_store(tmp_path) as store:
        again, _ = restored(store, chat)
    assert [r.id for r in again.chain()] == [made.id]


@pytest.mark.slow
def test_an_undo_made_twice_at_once_is_saved_once_and_the_second_is_refused(tmp_path):
    chat = imported(tmp_path)
    with open_store(tmp_path) as store:
        engine, _ = restored(store, chat)
        made = engine.summarize_now()
    with open_store(tmp_path) as first, open_store(tmp_path) as second:
        engine_1, refused_1 = restored(first, chat)
        engine_2, refused_2 = restored(second, chat)
        engine_1.undo_last()
        engine_2.undo_last()

    assert refused_1 == [] and len(refused_2) == 1 and isinstance(refused_2[0], StoreConflict)
    statuses, archived_by, _ = stored_state(tmp_path, chat)
    assert statuses == ["undone"] and archived_by == {}
    assert stored_state(tmp_path, chat)[2][0].id == made.id


def test_the_command_line_says_its_summary_was_not_saved_when_another_process_summarized_first(tmp_path, capsys):
    """The window has the chat open (its engine restored); `precis summarize` summarizes it; the window's own
    summary of the same messages is then refused, not stacked on the command's."""
    chat = imported(tmp_path)
    with open_store(tmp_path) as window_store:
        window_engine, refused = restored(window_store, chat)
        assert main(["--data-dir", str(tmp_path), "summarize", chat[:8], "--mode", "rule"]) == 0
        window_engine.summarize_now()
    assert len(refused) == 1 and isinstance(refused[0], StoreConflict)
    statuses, _, _ = stored_state(tmp_path, chat)
    assert statuses == ["active"]
    assert "1 summary" in capsys.readouterr().out
