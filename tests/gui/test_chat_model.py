"""The real window against the real local model (SmolLM2) and a real SQLite file."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.model

REPLY_TOKENS = 16


def new_chat(window, store, **settings):
    chat_id = store.create_chat("test chat", settings={"reserve_output": REPLY_TOKENS, **settings})
    window.refresh_chats()
    window.open_chat(chat_id)
    return chat_id


def test_sending_a_message_streams_the_reply_into_the_chat_and_saves_it(qtbot, make_window, store, local_provider):
    window = make_window(local_provider)
    chat_id = new_chat(window, store)
    qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=20_000)
    model = window.conversation.conversation
    partial_texts = []

    def seen(number):
        row = model.row_at(number)
        if row.streaming and row.message.content:
            partial_texts.append(row.message.content)

    model.row_streamed.connect(seen)
    window.composer.edit.setFocus()
    qtbot.keyClicks(window.composer.edit, "Name three colours.")
    with qtbot.waitSignal(window.reply_finished, timeout=300_000) as reply:
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    result = reply.args[0]

    assert window.composer.text() == ""
    assert result.problem is None and result.message.content.strip()
    rows = model.rows()
    assert [r.message.role for r in rows] == ["user", "assistant"]
    assert rows[1].message.content == result.message.content and not rows[1].streaming
    # The text arrived in pieces, each a prefix of the final reply, before the reply finished.
    assert partial_texts and all(result.message.content.startswith(t) for t in partial_texts)
    stored = store.load_messages(chat_id)
    assert [(m.role, m.content, m.incomplete) for m in stored] == [
        ("user", "Name three colours.", False), ("assistant", result.message.content, False)]
    assert window.chat.snapshot.usage.by_kind["messages"] > 0


def test_closing_the_window_mid_reply_stops_it_and_keeps_what_arrived(qtbot, make_window, store, local_provider,
                                                                     isolated_home):
    window = make_window(local_provider)
    chat_id = new_chat(window, store, reserve_output=400)
    qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=20_000)
    window.submit("Write a long story about a lighthouse keeper.")
    model = window.conversation.conversation
    def streaming():

        return len(model.rows()) == 2 and model.row_at(1).streaming and len(model.row_at(1).message.content) > 0

    qtbot.waitUntil(streaming, timeout=60_000)
    window.close()  # instant: the cancelled reply saves what arrived on its worker, moments later
    assert window.chat.finish_background_work()

    stored = store.load_messages(chat_id)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[1].incomplete and stored[1].content


def test_regenerate_replaces_the_reply_and_undo_brings_the_first_one_back(qtbot, make_window, store, local_provider):
    window = make_window(local_provider)
    chat_id = new_chat(window, store)
    qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=20_000)
    with qtbot.waitSignal(window.reply_finished, timeout=300_000) as first:
        window.submit("Name a colour.")
    question, old_reply = store.load_messages(chat_id)
    assert old_reply.id == first.args[0].message.id

    with qtbot.waitSignal(window.reply_finished, timeout=300_000) as second:
        window.actions["regenerate"].trigger()
    new_reply = second.args[0].message
    assert new_reply.id != old_reply.id and new_reply.content.strip()
    assert [m.id for m in store.load_messages(chat_id)] == [question.id, new_reply.id]
    assert [r.message.id for r in window.conversation.conversation.rows()] == [question.id, new_reply.id]
    assert [m.id for m in window.chat.session.engine.messages] == [question.id, new_reply.id]
    # Nothing is lost silently: the replaced reply comes back with Undo.
    assert window.status.undo.isVisible()
    qtbot.mouseClick(window.status.undo, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: [m.id for m in window.chat.snapshot.messages] == [question.id, old_reply.id], timeout=20_000)
    assert store.load_messages(chat_id) == [question, old_reply]
    assert [r.message.id for r in window.conversation.conversation.rows()] == [question.id, old_reply.id]


def test_edit_and_resend_replaces_the_last_exchange(qtbot, make_window, store, local_provider):
    window = make_window(local_provider)
    chat_id = new_chat(window, store)
    qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=20_000)
    with qtbot.waitSignal(window.reply_finished, timeout=300_000):
        window.submit("Name a colour.")
    old_question, old_reply = store.load_messages(chat_id)

    # Escape gives up editing and leaves the chat as it was.
    window.actions["edit-last"].trigger()
    assert window.composer.text() == "Name a colour." and "Editing" in window.composer.hint.text()
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Escape)
    assert window.sending.editing is None and window.composer.text() == ""

    window.actions["edit-last"].trigger()
    window.composer.edit.selectAll()
    qtbot.keyClicks(window.composer.edit, "Name a fruit.")
    with qtbot.waitSignal(window.reply_finished, timeout=300_000) as reply:
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    stored = store.load_messages(chat_id)
    assert [(m.role, m.content) for m in stored] == [("user", "Name a fruit."),
                                                      ("assistant", reply.args[0].message.content)]
    assert store.search("colour") == []
    assert [r.message.id for r in window.conversation.conversation.rows()] == [m.id for m in stored]
    qtbot.mouseClick(window.status.undo, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: [m.id for m in window.chat.snapshot.messages] == [old_question.id, old_reply.id],
                    timeout=20_000)
    assert store.load_messages(chat_id) == [old_question, old_reply]
