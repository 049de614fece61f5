"""A database file of 0 bytes (a failed copy, a full disk): the commands and the window say what they found, once,
and start a new database; when the folder shows the file held chats, what was there is kept aside first (SQLite would
delete a write-ahead log beside an empty file unread). Real files throughout: a real 0-byte file, a real store's
write-ahead log, the mark a real store leaves on closing."""

from __future__ import annotations

from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.storage.store import open_store


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_empty_file_alone_is_said_once_and_becomes_a_database(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "precis.db").write_bytes(b"")
    code, out, err = run(capsys, "--data-dir", str(data), "chats")
    assert code == 0
    assert err.count(f"{data / 'precis.db'} is empty (0 bytes): starting a new database.") == 1, err
    assert not list(data.glob("precis.db.empty-*"))  # nothing was there to keep
    code, out, err = run(capsys, "--data-dir", str(data), "chats")
    assert code == 0 and "empty" not in err  # said once: the file is a database now
    with open_store(data) as store:
        store.create_chat("works")
        assert [chat.title for chat in store.list_chats()] == ["works"]


def test_an_empty_file_whose_log_holds_chats_is_kept_aside(tmp_path, capsys):
    """The chats' write-ahead log beside an emptied file: what a crash mid-copy of a folder in use leaves."""
    source, data = tmp_path / "source", tmp_path / "data"
    data.mkdir()
    store = open_store(source)
    try:
        chat_id = store.create_chat("kept")
        store.add_messages(chat_id, [Message(role="user", content="the plan is in the log")])
        log = (source / "precis.db-wal").read_bytes()  # copied while the store is open: not yet checkpointed
    finally:
        store.close()
    assert log
    (data / "precis.db-wal").write_bytes(log)
    (data / "precis.db").write_bytes(b"")
    code, _, err = run(capsys, "--data-dir", str(data), "chats")
    assert code == 0
    assert err.count("is empty (0 bytes): starting a new database, though the folder shows it held chats") == 1, err
    assert f"precis.db-wal holds {len(log):,} bytes" in err
    [aside_log] = data.glob("precis.db.empty-*-wal")
    assert aside_log.read_bytes() == log and str(aside_log) in err
    assert (data / aside_log.name.removesuffix("-wal")).stat().st_size == 0


def emptied_after_closing(data) -> int:
    """A real store closed (it leaves the mark of a sound file of its size), then its file emptied as a full disk
    would: the size it had."""
    store = open_store(data)
    store.create_chat("before")
    store.close()
    size = (data / "precis.db").stat().st_size
    (data / "precis.db").write_bytes(b"")
    return size


def test_a_file_emptied_after_precis_closed_it_is_kept_aside(tmp_path):
    data = tmp_path / "data"
    size = emptied_after_closing(data)
    store = open_store(data)
    try:
        assert f"Precis last saw it at {size:,} bytes" in store.opening_notice
        [aside] = data.glob("precis.db.empty-*")
        assert aside.stat().st_size == 0 and str(aside) in store.opening_notice
        assert store.list_chats() == []
        store.create_chat("after")
    finally:
        store.close()
    with open_store(data) as again:
        assert again.opening_notice is None and [chat.title for chat in again.list_chats()] == ["after"]
