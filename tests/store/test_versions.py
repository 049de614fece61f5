"""A regenerated reply keeps its earlier versions in the SQLite file; the message row holds the one shown."""

from __future__ import annotations

import sqlite3

import pytest
from precis.core.model.messages import Message
from precis.core.storage.store import DB_NAME, MessageNotFound, Versions, open_store

from tests.store.test_store import V1_SCHEMA


def test_versions_are_kept_switched_and_survive_reopening(tmp_path):
    question = Message(role="user", content="Name a fruit.")
    first = Message(role="assistant", content="An apple.")
    with open_store(tmp_path) as store:
        chat_id = store.import_chat("Fruit", [question, first])
        assert store.versions(chat_id) == {}
        store.save_version(chat_id, first)  # before it is written again
        second = first.with_changes(content="A pear.")
        assert store.save_version(chat_id, second) == Versions(("An apple.", "A pear."), 1)
        assert store.load_messages(chat_id)[-1].content == "A pear."
        shown = store.show_version(chat_id, second, 0)
        assert shown.content == "An apple." and shown.id == first.id
        with pytest.raises(MessageNotFound, match="no version 3"):
            store.show_version(chat_id, second, 2)
    with open_store(tmp_path) as store:
        assert store.versions(chat_id) == {first.id: Versions(("An apple.", "A pear."), 0)}
        assert store.load_messages(chat_id)[-1].content == "An apple."  # what the prompt is built from
        assert [hit.message_id for hit in store.search("apple")] == [first.id]
        store.remove_last_message(chat_id, first.id)  # edit-and-resend: its versions go with it
        assert store.versions(chat_id) == {}
        count = sqlite3.connect(tmp_path / DB_NAME).execute("SELECT count(*) FROM message_version").fetchone()[0]
        assert count == 0


def test_a_version_1_database_gains_the_version_table(tmp_path):
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.executescript(V1_SCHEMA)
    conn.execute("INSERT INTO chat VALUES ('chat1', 'Old chat', 1.0, 2.0, '{}')")
    reply = Message(role="assistant", content="old text")
    conn.execute("INSERT INTO message (id, chat_id, seq, role, content, created_at, sha256) "
                 "VALUES (?, 'chat1', 0, 'assistant', ?, 1.0, ?)", (reply.id, reply.content, reply.sha256()))
    conn.commit()
    conn.close()
    with open_store(tmp_path) as store:
        store.save_version("chat1", reply)
        assert store.save_version("chat1", reply.with_changes(content="new text")).texts == ("old text", "new text")
