"""The store on real SQLite files: schema versions, faults, chats, messages, summaries, search."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from precis.core.model.messages import Message, ToolCall
from precis.core.model.records import CoveredMessage, SummaryRecord
from precis.core.storage.database import BULK_CACHE_KIB
from precis.core.storage.message_table import FTS5_AUTOMERGE, INSERT_BATCH
from precis.core.storage.opening import is_checked
from precis.core.storage.store import (
    DB_NAME,
    SCHEMA_VERSION,
    ChatNotFound,
    ChatRow,
    MessageNotFound,
    MessageRow,
    SettingRow,
    Store,
    StoreCorrupt,
    StoreTooNew,
    StoreWriteError,
    SummaryRow,
    open_store,
)
from sqlalchemy import event

ROOT = Path(__file__).resolve().parents[2]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def columns(path: Path, table: str) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    finally:
        conn.close()


# Schema version 1 written out by hand, as the first release left it on disk.
V1_SCHEMA = """
CREATE TABLE chat (id TEXT PRIMARY KEY, title TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
                   settings TEXT NOT NULL DEFAULT '{}');
CREATE TABLE message (pk INTEGER PRIMARY KEY, id TEXT NOT NULL,
    chat_id TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE, seq INTEGER NOT NULL, role TEXT NOT NULL,
    content TEXT NOT NULL, tool_calls TEXT, tool_call_id TEXT, name TEXT, pinned INTEGER NOT NULL DEFAULT 0,
    incomplete INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, token_count INTEGER, sha256 TEXT NOT NULL,
    archived_by TEXT, UNIQUE (chat_id, id), UNIQUE (chat_id, seq));
CREATE TABLE summary (pk INTEGER PRIMARY KEY, id TEXT NOT NULL,
    chat_id TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE, record TEXT NOT NULL, status TEXT NOT NULL,
    created_at REAL NOT NULL, parent_id TEXT, depth INTEGER NOT NULL, UNIQUE (chat_id, id));
CREATE TABLE setting (key TEXT PRIMARY KEY, value TEXT NOT NULL);
PRAGMA user_version = 1;
"""


def test_new_store_has_latest_schema_matching_the_models(tmp_path):
    with open_store(tmp_path) as store:
        assert store.path == tmp_path / DB_NAME
    conn = sqlite3.connect(tmp_path / DB_NAME)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    for model in (ChatRow, MessageRow, SummaryRow, SettingRow):
        assert columns(tmp_path / DB_NAME, model.__tablename__) == set(model.__table__.columns.keys())


def test_populated_version_1_database_is_migrated_keeping_everything(tmp_path):
    db = tmp_path / DB_NAME
    conn = sqlite3.connect(db)
    conn.executescript(V1_SCHEMA)
    m1 = Message(role="user", content="the quokka is a small marsupial")
    m2 = Message(role="assistant", content="", tool_calls=(ToolCall("c1", "bash", {"command": "ls"}),))
    record = SummaryRecord(text="talked about quokkas", covered=[CoveredMessage(id=m1.id, sha256=m1.sha256())])
    conn.execute("INSERT INTO chat VALUES ('chat1', 'Old chat', 1.0, 2.0, '{\"model\": \"m\"}')")
    conn.execute("INSERT INTO message (id, chat_id, seq, role, content, created_at, sha256, archived_by) "
                 "VALUES (?, 'chat1', 0, 'user', ?, 1.0, ?, ?)", (m1.id, m1.content, m1.sha256(), record.id))
    conn.execute("INSERT INTO message (id, chat_id, seq, role, content, tool_calls, created_at, sha256) "
                 "VALUES (?, 'chat1', 1, 'assistant', '', ?, 2.0, ?)",
                 (m2.id, '[{"id": "c1", "name": "bash", "arguments": {"command": "ls"}}]', m2.sha256()))
    conn.execute("INSERT INTO summary (id, chat_id, record, status, created_at, depth) VALUES (?, 'chat1', ?, "
                 "'active', 3.0, 1)", (record.id, record.model_dump_json()))
    conn.commit()
    conn.close()
    db.chmod(0o640)  # the user's choice: the backup of the old file is no more readable than the file

    with open_store(tmp_path) as store:
        chat = store.get_chat("chat1")
        assert (chat.title, chat.settings.model, chat.message_count) == ("Old chat", "m", 2)
        loaded = store.load_messages("chat1")
        assert [(m.id, m.content, m.tool_calls) for m in loaded] == [(m1.id, m1.content, ()),
                                                                     (m2.id, "", m2.tool_calls)]
        assert store.load_records("chat1") == [record]
        # Added by version 2: search over messages written before it existed, drafts, soft delete.
        hits = store.search("quokka")
        assert [(h.chat_id, h.message_id, h.archived_by) for h in hits] == [("chat1", m1.id, record.id)]
        # Version 6: the index stems words, so recall meets "marsupial" asked about as "marsupials".
        assert store.search_archived("chat1", "Which marsupials?") == [m1.id]
        store.set_draft("chat1", "half a thought")
        assert store.get_draft("chat1") == "half a thought"
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert (tmp_path / f"{DB_NAME}.v1-backup").stat().st_mode & 0o777 == 0o640


def test_database_from_a_newer_precis_is_refused_and_left_untouched(tmp_path):
    db = tmp_path / DB_NAME
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE future (x)")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    before = digest(db)
    with pytest.raises(StoreTooNew, match="newer Precis"):
        open_store(tmp_path)
    assert digest(db) == before
    # The refusal released the lock: the next attempt gets the same clear error, not "locked".
    with pytest.raises(StoreTooNew):
        open_store(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["garbage", "zeroed page"])
def test_corrupt_database_is_copied_aside_before_the_error(tmp_path, damage):
    db = tmp_path / DB_NAME
    if damage == "garbage":
        db.write_bytes(b"this is not a database\n" * 400)
    else:
        with open_store(tmp_path) as store:
            chat = store.create_chat("x")
            store.add_messages(chat, [Message(role="user", content=f"message {i} " * 50) for i in range(300)])
        sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
        data = bytearray(db.read_bytes())
        data[4096 * 3:4096 * 5] = bytes(8192)
        db.write_bytes(bytes(data))
    before = digest(db)
    with pytest.raises(StoreCorrupt, match="copy was saved") as info:
        open_store(tmp_path)
    copies = list(tmp_path.glob(f"{DB_NAME}.corrupt-*"))
    assert len(copies) == 1 and digest(copies[0]) == before
    assert digest(db) == before
    assert copies[0].name in str(info.value)


def test_the_whole_file_is_read_through_only_when_something_else_may_have_changed_it(tmp_path):
    """Opening checks the whole file (quick_check reads all of it) only when it may have changed since it was found
    sound or Precis last closed it: reopening what Precis left is cheap, but another program's write, a copy put
    in its place or a rewrite with its times set back bring the check back."""
    db = tmp_path / DB_NAME
    with open_store(tmp_path) as store:
        chat = store.create_chat("x")
        store.add_messages(chat, [Message(role="user", content=f"m {i}") for i in range(5)])
    assert is_checked(db)
    open_store(tmp_path).close()
    assert is_checked(db)

    conn = sqlite3.connect(db)  # another program writes
    conn.execute("UPDATE chat SET title = 'y'")
    conn.commit()
    conn.close()
    assert not is_checked(db)
    open_store(tmp_path).close()  # checked, sound
    assert is_checked(db)

    shutil.copy2(db, tmp_path / "copy")
    (tmp_path / "copy").replace(db)
    assert not is_checked(db)
    open_store(tmp_path).close()
    before = db.stat()
    db.write_bytes(db.read_bytes())
    os.utime(db, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert not is_checked(db)

    # A damaged file put in place of a store while it is open is checked on the next opening, not taken as the
    # store's own work when it closes. Its header and schema read well: only reading it through finds the damage.
    store = open_store(tmp_path)
    store.add_messages(chat, [Message(role="user", content=f"message {i} " * 50) for i in range(300)])
    sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    damaged = bytearray(db.read_bytes())
    damaged[4096 * 3:4096 * 5] = bytes(8192)
    (tmp_path / "damaged").write_bytes(bytes(damaged))
    (tmp_path / "damaged").replace(db)
    store.close()
    with pytest.raises(StoreCorrupt, match="copy was saved"):
        open_store(tmp_path)


def test_full_disk_reports_the_failed_write_and_keeps_earlier_data(tmp_path):
    """The disk filling up is injected with SQLite's max_page_count, which fails writes with the same
    SQLITE_FULL error ("database or disk is full") a full disk gives."""
    store = open_store(tmp_path)
    chat = store.create_chat("kept")
    store.add_messages(chat, [Message(role="user", content=f"kept {i}") for i in range(20)])

    @event.listens_for(store.engine, "connect")
    def _cap(dbapi_conn, _record):
        pages = dbapi_conn.execute("PRAGMA page_count").fetchone()[0]
        dbapi_conn.execute(f"PRAGMA max_page_count = {pages + 2}")

    store.engine.dispose()
    huge = [Message(role="user", content="x" * 100_000) for _ in range(5)]
    with pytest.raises(StoreWriteError, match="full.*Nothing was changed") as refused:
        store.import_chat("too big", huge)
    assert str(tmp_path / "precis.db") in str(refused.value)  # which disk filled up: the file's folder says
    with pytest.raises(StoreWriteError):
        store.add_messages(chat, huge)
    assert [c.title for c in store.list_chats()] == ["kept"]
    assert [m.content for m in store.load_messages(chat)] == [f"kept {i}" for i in range(20)]
    store.close()


def test_chats_crud_with_delete_undo_and_purge(tmp_path):
    with open_store(tmp_path) as store:
        a = store.create_chat("first", {"model": "gpt", "system_prompt": "be brief"})
        b = store.create_chat("second")
        store.rename_chat(a, "renamed")
        assert [c.title for c in store.list_chats()] == ["renamed", "second"]
        assert store.find_chat(a[:10]).id == a
        assert store.find_chat("second").id == b
        store.delete_chat(a)
        assert [c.id for c in store.list_chats()] == [b]
        with pytest.raises(ChatNotFound):
            store.get_chat(a)
        store.restore_chat(a)
        assert store.get_chat(a).settings.system_prompt == "be brief"
        store.delete_chat(b)
        assert store.purge_deleted(deleted_before=time.time() + 1) == 1
        assert [c.id for c in store.list_chats(include_deleted=True)] == [a]


def test_a_chat_removed_for_good_leaves_none_of_its_text_in_the_data_folder(tmp_path):
    """Deleted chats stay hidden (Undo brings them back) until Precis next starts; then they go for good. A user who
    deleted a chat with something private in it expects it gone from the disk, not left in free pages or the
    write-ahead log where any tool that reads the file finds it. (Debian's SQLite zeroes deleted content by default;
    Python's own builds for Windows and macOS do not, hence the store's secure_delete.)"""
    private, kept_words = "zanzibarquokka", "marmalade"
    with open_store(tmp_path) as store:
        gone = store.import_chat("private", [Message(role="user", content=f"my diary: {private} {n}")
                                             for n in range(2000)])
        kept = store.import_chat("kept", [Message(role="user", content=f"{kept_words} recipe {n}") for n in range(50)])
        with sqlite3.connect(tmp_path / DB_NAME) as other:  # as days of use do: the chats written into the file
            other.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store.delete_chat(gone)
        cutoff = time.time()
        later = store.import_chat("deleted later", [Message(role="user", content="still undoable")])
        store.delete_chat(later)
        assert any(private.encode() in f.read_bytes() for f in tmp_path.glob(f"{DB_NAME}*"))  # deleted is hidden only

        assert store.purge_deleted(deleted_before=cutoff) == 1

        for file in tmp_path.glob(f"{DB_NAME}*"):
            assert private.encode() not in file.read_bytes(), file.name
        assert not store.search(private)
        assert len(store.load_messages(kept)) == 50 and store.search(kept_words)
        store.restore_chat(later)  # deleted after the cutoff: still there to undo
        assert [m.content for m in store.load_messages(later)] == ["still undoable"]
        with pytest.raises(ChatNotFound):
            store.restore_chat(gone)


def test_a_chat_is_named_by_its_title_before_the_start_of_an_id_and_never_by_a_digit_or_two(tmp_path):
    """`precis history 0` showed the one chat whose id began with 0; a chat titled like the start of another's id
    was taken for that one."""
    with open_store(tmp_path) as store:
        chat = store.create_chat("Garden")
        titled = store.create_chat(chat[:5])  # a title that is also the start of the first chat's id
        assert store.find_chat(chat[:5]).id == titled
        assert store.find_chat(chat[:6]).id == chat
        with pytest.raises(ChatNotFound, match="from 4 characters on"):
            store.find_chat(chat[:2])


def test_only_a_chat_nobody_did_anything_in_is_removed_as_left_empty(tmp_path):
    """What the window's New chat left is removed; a chat someone began to use meanwhile (another Precis: a first
    line in a terminal chat, a draft, a title, a setting) is kept."""
    with open_store(tmp_path) as store:
        untouched = store.create_chat()
        used = {"a message": store.create_chat(), "a draft": store.create_chat(), "a title": store.create_chat(),
                "a setting": store.create_chat()}
        store.add_messages(used["a message"], [Message(role="user", content="the terminal's first line")])
        store.set_draft(used["a draft"], "half a question")
        store.rename_chat(used["a title"], "Kiwis")
        store.update_chat_settings(used["a setting"], {"context_window": 4096})
        assert store.delete_untouched_chat(untouched) is True
        assert {what: store.delete_untouched_chat(chat_id) for what, chat_id in used.items()} == dict.fromkeys(used,
                                                                                                         False)
        assert {c.id for c in store.list_chats()} == set(used.values())


def test_settings_never_hold_secrets_and_policy_overrides_are_validated(tmp_path):
    with open_store(tmp_path) as store:
        chat = store.create_chat("c")
        with pytest.raises(ValueError, match="keyring"):
            store.update_chat_settings(chat, {"model": "x", "api_key": "sk-123"})
        with pytest.raises(ValueError, match="keyring"):
            store.set_setting("openai_api_key", "sk-123")
        with pytest.raises(ValueError, match="trigger_ratio"):
            store.update_chat_settings(chat, {"summarization": {"trigger_ratio": 1.5}})
        saved = store.update_chat_settings(chat, {"provider": "openai", "summarization": {"keep_recent": 8},
                                                  "context_window": 32000})
        store.set_setting("theme", {"dark": True})
    with open_store(tmp_path) as store:
        assert store.get_chat(chat).settings == saved
        assert store.get_setting("theme") == {"dark": True}
        assert store.get_setting("missing", 5) == 5
    assert b"sk-123" not in (tmp_path / DB_NAME).read_bytes()


@pytest.mark.slow
def test_messages_round_trip_with_tools_flags_and_huge_content(tmp_path):
    big = "y" * 10_000_000
    messages = [
        Message(role="system", content="sys"),
        Message(role="assistant", content="", tool_calls=(ToolCall("c1", "read_file", {"path": "a.py"}),
                                                         ToolCall("c2", "bash", {"command": "ls -l"}))),
        Message(role="tool", content="print(1)", tool_call_id="c1", name="read_file"),
        Message(role="tool", content=big, tool_call_id="c2", name="bash", pinned=True),
        Message(role="user", content="naïve 🚀 text"),
    ]
    with open_store(tmp_path) as store:
        chat = store.create_chat("c")
        for m in messages:
            store.add_message(chat, m)
    with open_store(tmp_path) as store:
        assert store.load_messages(chat) == messages


def test_streamed_reply_is_updated_in_place(tmp_path):
    with open_store(tmp_path) as store:
        chat = store.create_chat("c")
        reply = Message(role="assistant", incomplete=True)
        store.add_message(chat, reply)
        for i in range(50):
            reply = reply.with_changes(content=reply.content + f"chunk{i} ")
            store.update_message(chat, reply)
        store.update_message(chat, reply.with_changes(incomplete=False))
        [saved] = store.load_messages(chat)
        assert saved.content.startswith("chunk0 chunk1") and saved.content.endswith("chunk49 ")
        assert not saved.incomplete
        assert [h.message_id for h in store.search("chunk49")] == [reply.id]
        with pytest.raises(MessageNotFound):
            store.update_message(chat, Message(role="assistant", content="never added"))


def test_summary_and_undo_persist_records_and_archive_marks(tmp_path):
    msgs = [Message(role="user", content=f"note about lemurs number {i}") for i in range(6)]
    with open_store(tmp_path) as store:
        chat = store.create_chat("c")
        store.add_messages(chat, msgs)
        first = SummaryRecord(text="s1", covered=[CoveredMessage(id=m.id, sha256=m.sha256()) for m in msgs[:2]])
        store.save_summary_state(chat, [first], {m.id: first.id for m in msgs[:2]})
        second = SummaryRecord(text="s2", depth=2, parent_id=first.id,
                               covered=[CoveredMessage(id=m.id, sha256=m.sha256()) for m in msgs[2:4]])
        store.save_summary_state(chat, [second], {m.id: second.id for m in msgs[2:4]})
        merged = SummaryRecord(text="s1+s2", merged_ids=[first.id, second.id])
        first.status = second.status = "merged"
        store.save_summary_state(chat, [merged, first, second], {m.id: merged.id for m in msgs[:4]})
        assert store.archived_by(chat) == {m.id: merged.id for m in msgs[:4]}
        # Undo the merge: the merged records come back and take their messages again.
        merged.status = "undone"
        first.status = second.status = "active"
        store.save_summary_state(chat, [merged, first, second],
                                 {**{m.id: first.id for m in msgs[:2]}, **{m.id: second.id for m in msgs[2:4]}})
    with open_store(tmp_path) as store:
        assert [(r.id, r.status) for r in store.load_records(chat)] == [
            (first.id, "active"), (second.id, "active"), (merged.id, "undone")]
        assert store.archived_by(chat) == {**{m.id: first.id for m in msgs[:2]},
                                           **{m.id: second.id for m in msgs[2:4]}}
        # Search covers archived messages and says which summary hides them.
        hits = {h.message_id: h.archived_by for h in store.search("lemurs")}
        assert hits[msgs[0].id] == first.id and hits[msgs[5].id] is None and len(hits) == 6


def test_every_imported_and_appended_message_is_found_once(tmp_path):
    count = INSERT_BATCH * 2 + 1  # more than one batch of inserted rows
    imported = [Message(role="user", content=f"crate k{i}z left the dock") for i in range(count)]
    appended = [Message(role="assistant", content=f"crate k{count + i}z arrived") for i in range(3)]
    with open_store(tmp_path) as store:
        chat = store.import_chat("dock", imported)
        other = store.import_chat("other", [Message(role="user", content="an unrelated crate")])
        store.add_messages(chat, appended)
        hits = store.search("crate", limit=2 * count)
        expected = [*imported, *appended, *store.load_messages(other)]
        assert sorted(h.message_id for h in hits) == sorted(m.id for m in expected)
        for message in (imported[0], imported[INSERT_BATCH], imported[-1], appended[-1]):
            word = message.content.split()[1]
            assert [h.message_id for h in store.search(word)] == [message.id]
    # The index holds each message once: FTS5 compares it with the message table (an extra copy would outlive a
    # deletion as a stale hit).
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("INSERT INTO message_fts(message_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()


def test_an_import_is_a_bulk_write_and_leaves_the_usual_settings_behind(tmp_path):
    """An import keeps BULK_CACHE_KIB of the file in SQLite's page cache (a long chat's pages neither spill to the
    WAL mid-import nor are read back) and indexes its messages with FTS5's merging off. Afterwards the connection has
    its usual cache and FTS5 merges again, after a failed import too; an ordinary write never gets either."""
    store = open_store(tmp_path)
    cache_at_commit: list[int] = []
    automerge_when_indexing: list[str | None] = []

    @event.listens_for(store.engine, "commit")
    def _cache(connection):
        cache_at_commit.append(connection.exec_driver_sql("PRAGMA cache_size").scalar())

    @event.listens_for(store.engine, "after_cursor_execute")
    def _automerge(_conn, cursor, statement, *_args):
        if statement.startswith("INSERT INTO message_fts(rowid"):
            automerge_when_indexing.append(automerge(cursor.connection))

    def automerge(connection: sqlite3.Connection) -> str | None:
        row = connection.execute("SELECT v FROM message_fts_config WHERE k = 'automerge'").fetchone()
        return None if row is None else str(row[0])

    def cache_size_in_the_pool() -> int:
        assert store.engine.pool.checkedin() <= 1  # the connection the import used, if any
        with store.engine.connect() as connection:
            return connection.exec_driver_sql("PRAGMA cache_size").scalar()

    usual = cache_size_in_the_pool()
    chat = store.import_chat("long", [Message(role="user", content=f"row {i}") for i in range(50)])
    store.add_messages(chat, [Message(role="user", content="one more")])
    assert cache_at_commit == [-BULK_CACHE_KIB, usual]
    assert automerge_when_indexing == ["0", str(FTS5_AUTOMERGE)]
    assert cache_size_in_the_pool() == usual
    with pytest.raises(StoreWriteError):  # fails within the transaction: the same message twice
        message = Message(role="user", content="twice")
        store.import_chat("twice", [message, message])
    assert cache_size_in_the_pool() == usual
    store.close()
    assert automerge(sqlite3.connect(tmp_path / DB_NAME)) == str(FTS5_AUTOMERGE)
    assert [c.title for c in open_store(tmp_path).list_chats()] == ["long"]


def test_search_handles_punctuation_and_skips_deleted_chats(tmp_path):
    with open_store(tmp_path) as store:
        a = store.create_chat("alpha")
        b = store.create_chat("beta")
        store.add_message(a, Message(role="user", content='error: "AND" NOT (found) in foo.py'))
        store.add_message(b, Message(role="user", content="error in foo.py again"))
        assert {h.chat_title for h in store.search('error: "foo.py')} == {"alpha", "beta"}
        assert store.search("   ") == [] and store.search("*(") == []
        store.delete_chat(b)
        hits = store.search("foo.py")
        assert [h.chat_title for h in hits] == ["alpha"] and "[foo]" in hits[0].snippet


def test_a_snippet_marks_the_words_the_search_matched_around_the_first(tmp_path):
    """Made from the start of the message, not by SQLite's snippet(), whose time grew with the square of a
    message's hits. Marked as the index matches: any case, diacritics or not, each query word a stem's prefix."""
    with open_store(tmp_path) as store:
        chat = store.create_chat("snippets")
        store.add_message(chat, Message(role="user", content="Plans: " + "filler " * 30
                                        + "she went Kickboxing at the Café before running home" + " tail" * 30))
        [hit] = store.search("kickbox cafe")
        assert hit.snippet == "…filler filler filler she went [Kickboxing] at the [Café] before running home…"
        store.add_message(chat, Message(role="user", content="Jogged, jogs, jogging: the jogger's jog. Ran."))
        [hit] = store.search("jogging")
        assert hit.snippet == "[Jogged], [jogs], [jogging]: the [jogger]'s [jog]. Ran"
        # The index holds a message's first 1,000,000 characters: a word after them is not found.
        store.add_message(chat, Message(role="user", content="x " * 500_000 + "farewell"))
        assert store.search("farewell") == []


def test_drafts_survive_a_restart(tmp_path):
    with open_store(tmp_path) as store:
        chat = store.create_chat("c")
        store.set_draft(chat, "I was typing thi")
    with open_store(tmp_path) as store:
        assert store.get_draft(chat) == "I was typing thi"


def test_a_new_chat_that_cannot_be_made_says_create_not_import(tmp_path):
    """A new chat in a read-only store said 'could not import the chat' (New chat in the window, precis chat)."""
    open_store(tmp_path).close()
    read_only = Store(tmp_path / DB_NAME, read_only=True)
    try:
        with pytest.raises(StoreWriteError, match=r"^could not create the chat: .* is read-only"):
            read_only.create_chat("notes")
        with pytest.raises(StoreWriteError, match=r"^could not import the chat: "):
            read_only.import_chat("notes", [Message(role="user", content="kiwis")])
    finally:
        read_only.close()


def test_a_saved_text_is_not_kept_in_memory_once_a_later_one_is_saved(tmp_path):
    """SQLAlchemy's statement cache kept the values written into a statement: the first streamed reply or draft saved
    (a pasted log) stayed in memory for as long as the store was open."""
    import gc

    length = 1_234_567  # no other text of the tests is this long
    with open_store(tmp_path) as store:
        chat = store.create_chat("c")
        message = Message(role="user", content="short")
        store.add_message(chat, message)
        store.update_message(chat, message.with_changes(content="z" * length))
        store.set_draft(chat, "d" * length)
        store.update_message(chat, message.with_changes(content="the reply as it ended"))
        store.set_draft(chat, "")
        assert store.load_messages(chat)[0].content == "the reply as it ended" and store.get_draft(chat) == ""
        gc.collect()
        held = [type(owner).__name__ for owner in gc.get_objects()
                for kept in gc.get_referents(owner) if isinstance(kept, str) and len(kept) == length]
        assert held == []
