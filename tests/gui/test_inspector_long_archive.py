"""A summary of very many messages in the inspector: its counts and its Archived tab's rows are made off the window's
thread, and "Before" shows the start of its originals (the Archived tab all of them), not megabytes of text laid out
on the window's thread."""

from __future__ import annotations

import threading

from precis.core.chat.snapshot import Snapshot
from precis.gui import inspector_record

from tests.gui.test_inspector_layout import open_chain_of_three, open_summarized_chat


def test_the_chain_counts_each_summarys_messages_from_the_snapshot_made_on_the_worker(qtbot, make_window, store):
    window = open_summarized_chat(qtbot, make_window, store, 1400, 900)
    snapshot = window.chat.snapshot
    # Made with the snapshot, where the snapshot is made (the chat's worker): the chain only looks them up.
    assert "archived_counts" in vars(snapshot)
    for record in snapshot.chain:
        assert snapshot.archived_counts.get(record.id, 0) == len(snapshot.archived(record.id))
    newest = snapshot.chain[-1]
    assert f"Messages: {snapshot.archived_counts[newest.id]}" in window.inspector.chain.item(0).toolTip()


def test_before_shows_the_start_of_a_long_archive_and_says_how_many_more_the_archived_tab_lists(
        qtbot, make_window, store, monkeypatch):
    monkeypatch.setattr(inspector_record, "BEFORE_CHARS", 600)
    window = open_summarized_chat(qtbot, make_window, store, 1400, 900)
    inspector, snapshot = window.inspector, window.chat.snapshot
    record = max(snapshot.chain, key=lambda r: snapshot.archived_counts.get(r.id, 0))
    archived = snapshot.archived(record.id)
    inspector.select_record(record.id)
    qtbot.waitUntil(lambda: inspector.archived_view.rows_model.rowCount() == len(archived))

    shown = inspector.before_text.toPlainText().split("\n\n")
    last = shown.pop()
    assert shown == [f"[{m.role}] {m.content}" for m in archived[:len(shown)]]
    assert sum(map(len, shown[:-1])) < 600 <= sum(map(len, shown))  # whole messages, up to the limit
    assert last == f"… and {len(archived) - len(shown):,} more messages: the Archived tab lists them all."
    assert [r.key for r in inspector.archived_view.rows_model.rows()] == [m.id for m in archived]

    monkeypatch.setattr(inspector_record, "BEFORE_CHARS", 10**9)  # an archive under the limit: all of it, no note
    inspector.details.show_archive(snapshot.archived_rows(record.id))
    assert inspector.before_text.toPlainText().split("\n\n") == [f"[{m.role}] {m.content}" for m in archived]


def test_the_archived_tabs_rows_are_made_off_the_windows_thread_and_shown_for_the_summary_still_selected(
        qtbot, make_window, store, monkeypatch):
    window = open_chain_of_three(qtbot, make_window, store, 1400, 900)
    inspector, snapshot = window.inspector, window.chat.snapshot
    made_on: list[threading.Thread] = []
    archived_rows = Snapshot.archived_rows

    def recorded(self, record_id):
        made_on.append(threading.current_thread())
        return archived_rows(self, record_id)

    monkeypatch.setattr(Snapshot, "archived_rows", recorded)
    older, newest = snapshot.chain[0], snapshot.chain[-1]
    assert older.id != newest.id
    inspector.select_record(older.id)
    assert inspector.archived_view.rows_model.rowCount() == 0  # nothing made here: the rows follow
    inspector.select_record(newest.id)  # chosen again before the first rows came: those are not shown
    wanted = [m.id for m in snapshot.archived(newest.id)]
    qtbot.waitUntil(lambda: len(made_on) == 2 and not window.chat.busy)
    assert [r.key for r in inspector.archived_view.rows_model.rows()] == wanted
    assert made_on and all(thread is not threading.main_thread() for thread in made_on)


def test_the_archived_tabs_rows_skip_full_collections_and_are_freed_once_another_summary_is_shown(
        qtbot, make_window, store):
    """A 100,000-message summary's rows, made as the collector's young objects, set off a full pass (60-100 ms,
    holding the lock the window waits for) each time it was selected: they are frozen out of the passes when made,
    and reference counting still frees them."""
    import gc
    import weakref

    window = open_chain_of_three(qtbot, make_window, store, 1400, 900)
    inspector, snapshot = window.inspector, window.chat.snapshot
    older, newest = snapshot.chain[0], snapshot.chain[-1]
    inspector.select_record(newest.id)
    wanted = len(snapshot.archived(newest.id))
    qtbot.waitUntil(lambda: inspector.archived_view.rows_model.rowCount() == wanted and not window.chat.busy)
    rows = inspector.archived_view.rows_model.rows()
    walked = {id(o) for o in gc.get_objects()}  # what a full collection walks
    assert not [row for row in rows if id(row) in walked]
    first = weakref.ref(rows[0])
    del rows

    inspector.select_record(older.id)
    qtbot.waitUntil(lambda: inspector.archived_view.rows_model.rowCount() == len(snapshot.archived(older.id))
                    and not window.chat.busy)
    assert first() is None
