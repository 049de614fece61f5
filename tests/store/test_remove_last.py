"""Removing the newest message (regenerate, edit-and-resend) on a real SQLite file."""

from __future__ import annotations

import pytest
from precis.core.model.messages import Message
from precis.core.model.records import CoveredMessage, SummaryRecord
from precis.core.storage.store import MessageNotFound, open_store


def test_only_the_newest_message_is_removed_and_search_forgets_it(tmp_path):
    question = Message(role="user", content="what do wombats eat")
    reply = Message(role="assistant", content="wombats eat grasses and roots")
    with open_store(tmp_path) as store:
        chat = store.create_chat("c")
        store.add_messages(chat, [question, reply])
        with pytest.raises(MessageNotFound, match="only the newest"):
            store.remove_last_message(chat, question.id)
        store.remove_last_message(chat, reply.id)
        assert store.search("grasses") == []
        # The next message takes the freed place at the end.
        again = Message(role="assistant", content="mostly grasses")
        store.add_message(chat, again)
    with open_store(tmp_path) as store:
        assert store.load_messages(chat) == [question, again]
        assert [h.message_id for h in store.search("grasses")] == [again.id]


def test_an_archived_message_is_never_removed(tmp_path):
    message = Message(role="user", content="old news")
    with open_store(tmp_path) as store:
        chat = store.create_chat("c")
        store.add_message(chat, message)
        record = SummaryRecord(text="s", covered=[CoveredMessage(id=message.id, sha256=message.sha256())])
        store.save_summary_state(chat, [record], {message.id: record.id})
        with pytest.raises(MessageNotFound, match="archived"):
            store.remove_last_message(chat, message.id)
        assert store.load_messages(chat) == [message]
