"""A database written by a newer Precis (a newer schema, a column and a table this one does not know) is refused, and
its chats can still be read out: the window's box offers Export chats… (each chat as Markdown into a folder, off the
window's thread), `precis chats` lists them and `precis export` writes one, the file opened read-only and its bytes
unchanged. A real SQLite file, made newer as a newer Precis would."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.storage.schema import SCHEMA_VERSION
from precis.core.storage.store import DB_NAME, StoreTooNew, open_store
from precis.gui import cli_gui, store_trouble

from tests.gui.test_recover_window import BoxAnswerer, threads_running
from tests.store.test_recover import digest

CHATS = {"Lisbon trip": "The tram to Belem leaves at nine.", "Garden plans": "Plant the tomatoes in May."}


@pytest.fixture
def newer(tmp_path):
    """A data folder whose database a newer Precis wrote: its schema one ahead, with what that one added."""
    folder = tmp_path / "data"
    with open_store(folder) as store:
        for title, text in CHATS.items():
            chat = store.create_chat(title)
            store.add_messages(chat, [Message(role="user", content=text), Message(role="assistant", content="Noted.")])
    with sqlite3.connect(folder / DB_NAME) as conn:
        conn.execute("ALTER TABLE message ADD COLUMN reactions TEXT")
        conn.execute("CREATE TABLE bookmark (id TEXT PRIMARY KEY, message_id TEXT)")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with sqlite3.connect(folder / DB_NAME) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every byte in the file itself
    return folder


def test_the_window_offers_to_export_a_newer_precis_chats_and_leaves_the_file_as_it_was(qapp, newer, tmp_path,
                                                                                       monkeypatch):
    before = digest(newer / DB_NAME)
    threads = threads_running(monkeypatch, store_trouble, "export_every_chat")
    target = tmp_path / "exported"
    target.mkdir()
    answerer = BoxAnswerer(store_trouble.EXPORT_LABEL, target)
    assert cli_gui._open_store(str(newer), in_a_box=True) is None  # the window does not open on it
    answerer.timer.stop()
    names = [name for name, _text in answerer.seen if name != "progress"]  # a quick export's may come and go unseen
    assert names == ["newer", "folder", "exported"], answerer.seen
    assert threads and threads[0] is not threading.main_thread()  # never on the window's thread
    assert "written by a newer Precis" in answerer.seen[0][1] and "Export chats" in answerer.seen[0][1]
    assert f"Exported 2 chats to {target}" in answerer.seen[-1][1]
    files = {path.name: path.read_text() for path in target.iterdir()}
    assert sorted(files) == ["Garden-plans.md", "Lisbon-trip.md"]
    for title, text in CHATS.items():
        assert text in files[title.replace(" ", "-") + ".md"]
    assert digest(newer / DB_NAME) == before


def test_the_command_line_lists_and_exports_a_newer_precis_chats_read_only(newer, tmp_path, capsys):
    before = digest(newer / DB_NAME)
    with pytest.raises(StoreTooNew, match="export its chats read-only"):
        open_store(newer)
    assert main(["chats", "--data-dir", str(newer)]) == 0
    listed = capsys.readouterr()
    assert "Lisbon trip" in listed.out and "opened read-only" in listed.err
    out = tmp_path / "lisbon.md"
    assert main(["export", "Lisbon trip", "--format", "md", "-o", str(out), "--data-dir", str(newer)]) == 0
    assert CHATS["Lisbon trip"] in out.read_text()
    assert main(["chat", "--chat", "Lisbon trip", "--data-dir", str(newer), "hello"]) == 1  # still refused to write
    assert digest(newer / DB_NAME) == before
