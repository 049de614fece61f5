"""Opening a long chat paints its last rows first, read straight from the store; the whole chat follows."""

from __future__ import annotations

import pytest
from precis.core.chat.session import FIRST_ROWS
from precis.core.model.messages import Message
from precis.core.settings import SUMMARIZATION_KEY

from tests.gui.test_window import dialogue, idle
from tests.timing import WAIT_MS


def keys(rows) -> tuple[list[str], set[str]]:
    """(message keys in order, summary keys) of conversation rows."""
    return [r.key for r in rows if r.message is not None], {r.key for r in rows if r.record is not None}


@pytest.mark.slow
def test_a_long_chat_paints_its_last_rows_first_then_the_whole_chat(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    history = dialogue(600, "Notes on the kickboxing gym's timetable, item")
    history[-5] = history[-5].with_changes(pinned=True)  # pinned: shown, never archived
    chat_id = store.import_chat("long chat", history, settings={"context_window": 4096})
    other = store.create_chat("other")
    window = make_window()
    window.open_chat(chat_id)  # opened past its trigger: summarized now, so the next opening has summaries
    qtbot.waitUntil(lambda: idle(window) and bool(window.chat.snapshot.chain), timeout=WAIT_MS)
    full_messages, full_summaries = keys(window.conversation.rows_model.rows())
    hidden = window.chat.snapshot.hidden
    assert hidden and history[-5].id not in hidden

    window.open_chat(other)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    first = []
    window.chat.rows_loaded.connect(lambda _snapshot: first.append(window.conversation.rows_model.rows()))
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: bool(first), timeout=WAIT_MS)

    # First: the last rows only, as the whole chat shows them (archived messages inside their summaries).
    tail_messages, tail_summaries = keys(first[0])
    stored = [m.id for m in store.load_messages(chat_id)]
    assert len(first[0]) <= FIRST_ROWS < len(stored)
    assert tail_messages == full_messages[-len(tail_messages):]
    assert tail_summaries <= full_summaries and not set(tail_messages) & set(hidden)
    assert tail_messages[-1] == stored[-1]
    # Then the whole chat, once its engine is built.
    qtbot.waitUntil(lambda: idle(window) and keys(window.conversation.rows_model.rows()) == (
        full_messages, full_summaries), timeout=WAIT_MS)


@pytest.mark.slow
def test_the_windows_copy_of_a_summary_shares_the_list_of_what_it_covers(qtbot, make_window, store):
    """The window holds its own copy of each summary record (the engine goes on changing its status, trail coverage, ...),
    taken on every snapshot; the list of the messages it covers, which never changes and has an entry per message
    of a long chat, is not copied with it."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    chat_id = store.import_chat("long chat", dialogue(600, "Notes on the timetable, item"),
                                settings={"context_window": 4096})
    window = make_window()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window) and bool(window.chat.snapshot.chain), timeout=WAIT_MS)
    for shown in window.chat.snapshot.chain:
        own = window.chat.session.engine.archive.by_record[shown.id]
        assert shown is not own and shown.model_dump() == own.model_dump()
        assert shown.covered is own.covered and len(own.covered) > 100


@pytest.mark.slow
def test_an_open_chats_objects_skip_full_collections_and_a_chat_switched_away_from_leaves_nothing_in_memory(
        qtbot, make_window, store):
    """While a chat is open its messages are out of the cyclic collector's full passes (which walked them all and
    stalled the window), its rows were built on the worker; once switched away from, nothing of it stays in memory
    (each job the chat ran kept its closures, and so the session, alive through Qt's connections and its pool:
    opening a long chat three times held three copies)."""
    import gc
    import weakref

    history = dialogue(300, "Notes on the garden's watering schedule, item")
    chat_id = store.import_chat("long chat", history)
    other = store.create_chat("other")
    window = make_window()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    window.conversation.scroll_to_end()  # rows measured and painted, as a user would see them
    assert window.conversation.rows_model.rows() is window.chat.snapshot.rows  # as the worker built them
    collected = {id(o) for o in gc.get_objects()}
    assert not [m for m in window.chat.session.engine.messages if id(m) in collected]
    engine = weakref.ref(window.chat.session.engine)
    window.open_chat(other)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)

    ids, ours = {m.id for m in history}, {id(m) for m in history}  # the window's are those it read from the store
    qtbot.waitUntil(lambda: gc.collect() >= 0 and engine() is None, timeout=WAIT_MS)
    assert not [o for o in gc.get_objects() if isinstance(o, Message) and o.id in ids and id(o) not in ours]


@pytest.mark.slow
def test_a_chat_never_counted_shows_at_once_from_stand_ins_and_its_gauge_follows_the_counts(qtbot, make_window,
                                                                                             store):
    """Opening a long chat for the first time counted every message before showing more than its last rows (60 s at
    100,000 messages): now the whole chat and its gauge show from stand-in counts, and the gauge follows the counts."""
    from precis.core.chat.session import ESTIMATE_ABOVE

    history = dialogue(ESTIMATE_ABOVE + 600, "Notes on the bicycle repair, step")
    chat_id = store.import_chat("long chat", history)
    other = store.create_chat("other")
    window = make_window()
    window.open_chat(other)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    shown = []
    window.chat.snapshot_changed.connect(lambda snapshot, _rebuild: shown.append(snapshot))
    with qtbot.waitSignal(window.chat.snapshot_changed, timeout=WAIT_MS,
                          check_params_cb=lambda snapshot, _rebuild: not snapshot.partial):
        window.open_chat(chat_id)
    first = shown[-1]
    assert first.counting > 0 and not first.usage.exact  # shown before its counts are made
    assert [r.key for r in window.conversation.rows_model.rows()] == [m.id for m in history]
    assert window.inspector.exact_label.text() == "estimated"
    assert "counting tokens" in window.status.counting.text()

    qtbot.waitUntil(lambda: idle(window) and shown[-1].counting == 0, timeout=120_000)
    counted = window.chat.snapshot
    assert counted.usage.exact and counted.usage.total != first.usage.total
    assert f"{counted.usage.total:,} / " in window.inspector.total_label.text()
    assert window.inspector.exact_label.text() == "exact"
    assert window.status.counting.text() == "exact token counts"
    counter = window.chat.session.engine.counter
    assert store.token_counts(chat_id, counter.name).keys() == {m.id for m in history}  # saved for next time


@pytest.mark.slow
def test_an_opening_cut_short_keeps_the_counts_made_and_the_next_one_counts_only_the_rest(store, monkeypatch):
    """Counts are saved a batch at a time, so switching away from a chat while it is counted does not lose them."""
    from precis.core.chat import session as session_module
    from precis.core.providers.base import CancelToken
    from precis.core.providers.registry import make_provider

    monkeypatch.setattr(session_module, "COUNT_BATCH", 1_000)
    monkeypatch.setattr(session_module, "ESTIMATE_ABOVE", 500)  # the reopening too leaves what is left to counting
    history = dialogue(2_600, "Notes on the bicycle repair, step")
    chat_id = store.import_chat("long chat", history)
    provider = make_provider("local")

    opening = session_module.ChatSession(store, chat_id, provider)
    to_count = opening.build_engine().counting
    closed = CancelToken()  # the chat closed (its counting cancelled) once the first batch was shown
    assert opening.count_exactly(closed, lambda _snapshot: closed.cancel()) is None
    counter_name = opening.engine.counter.name
    saved = store.token_counts(chat_id, counter_name)
    assert len(history) - to_count + 1_000 == len(saved)

    again = session_module.ChatSession(store, chat_id, provider)
    assert again.build_engine().counting == len(history) - len(saved)
    assert again.count_exactly(CancelToken(), lambda _snapshot: None).usage.exact
    assert store.token_counts(chat_id, counter_name).keys() == {m.id for m in history}
    # A change made after an opening cut short acts on exact counts: what was left is counted first.
    assert opening.add_messages([Message(role="user", content="and the brakes?")]).usage.exact


def test_counting_a_long_chat_shows_its_progress_a_few_times_whatever_its_length(store, monkeypatch):
    """Each progress report is a snapshot of the whole chat: one per batch made counting a chat quadratic in its
    length (16 s at 100,000 messages, 13 of them in snapshots). The counts are still saved a batch at a time."""
    from precis.core.chat import session as session_module
    from precis.core.providers.base import CancelToken
    from precis.core.providers.registry import make_provider

    monkeypatch.setattr(session_module, "COUNT_BATCH", 100)
    history = dialogue(session_module.ESTIMATE_ABOVE + 2_400, "Notes on the bicycle repair, step")
    chat_id = store.import_chat("long chat", history)
    opening = session_module.ChatSession(store, chat_id, make_provider("local"))
    to_count = opening.build_engine().counting
    reports = []
    counted = opening.count_exactly(CancelToken(), reports.append)

    assert to_count > 20 * session_module.COUNT_BATCH
    assert 1 <= len(reports) <= session_module.PROGRESS_REPORTS
    assert [r.counting for r in reports] == sorted((r.counting for r in reports), reverse=True)
    assert 0 < reports[-1].counting and counted.counting == 0 and counted.usage.exact
    assert store.token_counts(chat_id, opening.engine.counter.name).keys() == {m.id for m in history}
