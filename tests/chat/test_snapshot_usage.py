"""A snapshot (what the inspector and the composer show after every change) measures the context once: its headline,
its over-budget note and the draft's room are read off one engine.usage(), which with recall searches the archive."""

from __future__ import annotations

from precis.core.chat.session import ChatSession
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.settings import SUMMARIZATION_KEY
from precis.core.storage.store import open_store

from tests.gui.test_window import dialogue


def test_a_snapshot_over_its_budget_measures_the_context_once_and_its_parts_agree(tmp_path, server):
    with open_store(tmp_path) as store:
        measured_once(store, server)


def measured_once(store, server) -> None:
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "enabled": False})
    chat_id = store.import_chat("moving", dialogue(120, "The movers listed the boxes for the study, box"))
    # No reply is asked for: the provider only gives the chat's window (set here, so the server is never asked).
    session = ChatSession(store, chat_id, OpenAICompatProvider(server.base_url, "m", "sk-test", window=2048))
    session.build_engine(estimate=False)
    engine = session.built_engine
    measured: list[bool] = []
    usage = engine.usage

    def counted_usage(recall: bool = True):
        measured.append(recall)
        return usage(recall)

    engine.usage = counted_usage
    snapshot = session.snapshot()

    assert measured.count(True) == 1
    assert snapshot.over_budget is not None  # the note was made, from the same measure
    assert snapshot.usage == usage()
    assert snapshot.draft_room.available == snapshot.usage.available
    assert f"{snapshot.usage.total:,} tokens for {snapshot.usage.available:,}" in snapshot.over_budget.sent
    session.close()
