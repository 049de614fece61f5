"""A regenerated reply keeps its earlier versions in the SQLite file; the message row holds the one shown."""

from __future__ import annotations

import sqlite3

import pytest
from precis.core.model.messages import Message
from precis.core.model.records import CoveredMessage, SummaryRecord
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
        [shown] = store.show_version(chat_id, second, 0)  # nothing followed it
        assert shown.content == "An apple." and shown.id == first.id
        with pytest.raises(MessageNotFound, match="no version 3"):
            store.show_version(chat_id, second, 2)
    with open_store(tmp_path) as store:
        assert store.versions(chat_id) == {first.id: Versions(("An apple.", "A pear."), 0)}
        assert store.load_messages(chat_id)[-1].content == "An apple."  # what the prompt is built from
        assert [hit.message_id for hit in store.search("apple")] == [first.id]


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


def test_an_edited_message_keeps_the_branch_it_began_and_switching_moves_branches_whole(tmp_path):
    question = Message(role="user", content="Name a colour.")
    answer = Message(role="assistant", content="Red.")
    with open_store(tmp_path) as store:
        chat_id = store.import_chat("Colours", [Message(role="system", content="Be brief."), question, answer])
        store.save_version(chat_id, answer)  # the answer regenerated: two versions, the second cut at its limit
        store.save_version(chat_id, answer.with_changes(content="Blue, green and", cut_at=16))
        store.save_version(chat_id, question)  # an edit: the text it had, then the new one
        assert store.save_version(chat_id, question.with_changes(content="Name a fruit.")) == Versions(
            ("Name a colour.", "Name a fruit."), 1)
        assert [m.content for m in store.load_messages(chat_id)] == ["Be brief.", "Name a fruit."]
        assert store.search("green") == []  # what the model and search read is the branch shown
        new_answer = Message(role="assistant", content="A pear.")
        store.add_message(chat_id, new_answer)

    with open_store(tmp_path) as store:  # reopened: the earlier branch is still there, whole
        shown = store.show_version(chat_id, question, 0)
        assert [(m.id, m.content, m.cut_at) for m in shown] == [(question.id, "Name a colour.", None),
                                                                 (answer.id, "Blue, green and", 16)]
        assert store.load_messages(chat_id)[1:] == shown
        assert store.versions(chat_id) == {question.id: Versions(("Name a colour.", "Name a fruit."), 0),
                                           answer.id: Versions(("Red.", "Blue, green and"), 1)}
        assert [hit.message_id for hit in store.search("green")] == [answer.id]
        back = store.show_version(chat_id, question, 1)
        assert [m.content for m in back] == ["Name a fruit.", "A pear."]
        assert store.versions(chat_id) == {question.id: Versions(("Name a colour.", "Name a fruit."), 1)}


def test_showing_the_version_already_shown_keeps_what_follows_it(tmp_path):
    """As when another window switched first: the messages after it were lost (moved into the version's own
    branch, which showing it clears)."""
    question, answer = Message(role="user", content="Name a colour."), Message(role="assistant", content="Red.")
    with open_store(tmp_path) as store:
        chat_id = store.import_chat("Colours", [question, answer])
        store.save_version(chat_id, question)
        assert store.show_version(chat_id, question, 0) == [question, answer]
        assert store.load_messages(chat_id) == [question, answer]
        store.save_version(chat_id, question.with_changes(content="Name a fruit."))
        assert [m.content for m in store.show_version(chat_id, question, 0)] == ["Name a colour.", "Red."]

def test_a_message_a_summary_archived_never_moves_to_a_branch(tmp_path):
    question, answer = Message(role="user", content="old question"), Message(role="assistant", content="old news")
    with open_store(tmp_path) as store:
        chat_id = store.import_chat("c", [question, answer])
        record = SummaryRecord(text="s", covered=[CoveredMessage(id=answer.id, sha256=answer.sha256())])
        store.save_summary_state(chat_id, [record], {answer.id: record.id})
        store.save_version(chat_id, question)
        with pytest.raises(MessageNotFound, match="archived"):
            store.save_version(chat_id, question.with_changes(content="new question"))
        assert store.load_messages(chat_id) == [question, answer]
        assert store.versions(chat_id) == {question.id: Versions(("old question",), 0)}
