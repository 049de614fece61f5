"""The real window against the real local model (SmolLM2) and a real SQLite file."""

from __future__ import annotations

import pytest
from precis.core.storage.store import Versions
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QStyleOptionViewItem

from tests.gui.held_replies import HeldReplies
from tests.gui.test_message_actions import click_chip
from tests.gui.test_window import idle
from tests.timing import WAIT_MS

pytestmark = pytest.mark.model

REPLY_TOKENS = 16


def new_chat(window, store, **settings):
    chat_id = store.create_chat("test chat", settings={"reserve_output": REPLY_TOKENS, **settings})
    window.refresh_chats()
    window.open_chat(chat_id)
    return chat_id


def switcher(view, number: int) -> list:
    """Where the row paints "‹ n/m ›": the rects of the left arrow, the count and the right arrow."""
    option = QStyleOptionViewItem()
    option.rect = view.visualRect(view.conversation.index(number))
    return [rect for rect, _text, _target in view.delegate.version_rects(view.delegate.card_rect(option),
                                                                          view.conversation.index(number))]


def test_sending_a_message_streams_the_reply_into_the_chat_and_saves_it(qtbot, make_window, store, local_provider):
    window = make_window(local_provider)
    chat_id = new_chat(window, store)
    qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=WAIT_MS)
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


@pytest.mark.slow
def test_closing_the_window_mid_reply_stops_it_and_keeps_what_arrived(qtbot, make_window, store, local_provider,
                                                                     isolated_home):
    window = make_window(HeldReplies(local_provider, after_pieces=1))  # the close comes before a short reply ends
    chat_id = new_chat(window, store, reserve_output=400)
    qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=WAIT_MS)
    window.submit("Write a long story about a lighthouse keeper.")
    model = window.conversation.conversation
    def streaming():

        return len(model.rows()) == 2 and model.row_at(1).streaming and len(model.row_at(1).message.content) > 0

    qtbot.waitUntil(streaming, timeout=WAIT_MS)
    window.close()  # instant: the cancelled reply saves what arrived on its worker, moments later
    assert window.chat.finish_background_work()

    stored = store.load_messages(chat_id)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[1].incomplete and stored[1].content


@pytest.mark.slow
def test_regenerate_keeps_the_first_reply_as_a_version_to_switch_back_to(qtbot, make_window, store,
                                                                         local_provider):
    window = make_window(local_provider)
    chat_id = new_chat(window, store)
    qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=WAIT_MS)
    with qtbot.waitSignal(window.reply_finished, timeout=300_000):
        window.submit("Name a colour.")
    question, old_reply = store.load_messages(chat_id)
    view = window.conversation

    with qtbot.waitSignal(window.reply_finished, timeout=300_000) as second:
        click_chip(qtbot, view, 1, "regenerate")  # the reply's hover action
    new_reply = second.args[0].message
    assert new_reply.id == old_reply.id and new_reply.content.strip()  # written again in its place
    assert store.versions(chat_id) == {old_reply.id: Versions((old_reply.content, new_reply.content), 1)}
    assert view.conversation.versions_of(old_reply.id) == Versions((old_reply.content, new_reply.content), 1)
    assert "switches back" in window.statusBar().currentMessage() and not window.status.undo.isVisible()
    assert [m.content for m in window.chat.session.engine.assemble().messages][-1] == new_reply.content

    # "‹ 2/2 ›" in the reply's header: its left arrow shows the first reply again, and sends it from now on.
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    arrow = switcher(view, 1)[0]
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=arrow.center())
    qtbot.waitUntil(lambda: idle(window) and view.conversation.versions_of(old_reply.id).shown == 0, timeout=WAIT_MS)
    assert [m.content for m in store.load_messages(chat_id)] == [question.content, old_reply.content]
    assert view.conversation.row_at(1).message.content == old_reply.content
    assert [m.content for m in window.chat.session.engine.assemble().messages][-1] == old_reply.content

    # Reopened (a new window on the same file), the chat shows the version chosen, with its alternative.
    window.close()
    assert window.chat.finish_background_work()
    reopened = make_window(local_provider)
    qtbot.waitUntil(lambda: reopened.chat.snapshot is not None and reopened.chat.snapshot.chat_id == chat_id,
                    timeout=WAIT_MS)
    model = reopened.conversation.conversation
    assert model.versions_of(old_reply.id) == Versions((old_reply.content, new_reply.content), 0)
    assert model.row_at(1).message.content == old_reply.content


@pytest.mark.slow
def test_edit_and_resend_replaces_the_last_exchange(qtbot, make_window, store, local_provider):
    window = make_window(local_provider)
    chat_id = new_chat(window, store)
    qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=WAIT_MS)
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
                    timeout=WAIT_MS)
    assert store.load_messages(chat_id) == [old_question, old_reply]
