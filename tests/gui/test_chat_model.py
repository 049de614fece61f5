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
    option.rect = view.visualRect(view.rows_model.index(number))
    return [rect for rect, _text, _target in view.delegate.version_rects(view.delegate.card_rect(option),
                                                                          view.rows_model.index(number))]


def test_sending_a_message_streams_the_reply_into_the_chat_and_saves_it(qtbot, make_window, store, local_provider):
    window = make_window(local_provider)
    chat_id = new_chat(window, store)
    qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=WAIT_MS)
    model = window.conversation.rows_model
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
    model = window.conversation.rows_model
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
    assert view.rows_model.versions_of(old_reply.id) == Versions((old_reply.content, new_reply.content), 1)
    assert "switches back" in window.statusBar().currentMessage() and not window.status.undo.isVisible()
    assert [m.content for m in window.chat.session.engine.assemble().messages][-1] == new_reply.content

    # "‹ 2/2 ›" in the reply's header: its left arrow shows the first reply again, and sends it from now on.
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    arrow = switcher(view, 1)[0]
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=arrow.center())
    qtbot.waitUntil(lambda: idle(window) and view.rows_model.versions_of(old_reply.id).shown == 0, timeout=WAIT_MS)
    assert [m.content for m in store.load_messages(chat_id)] == [question.content, old_reply.content]
    assert view.rows_model.row_at(1).message.content == old_reply.content
    assert [m.content for m in window.chat.session.engine.assemble().messages][-1] == old_reply.content

    # Reopened (a new window on the same file), the chat shows the version chosen, with its alternative.
    window.close()
    assert window.chat.finish_background_work()
    reopened = make_window(local_provider)
    qtbot.waitUntil(lambda: reopened.chat.snapshot is not None and reopened.chat.snapshot.chat_id == chat_id,
                    timeout=WAIT_MS)
    model = reopened.conversation.rows_model
    assert model.versions_of(old_reply.id) == Versions((old_reply.content, new_reply.content), 0)
    assert model.row_at(1).message.content == old_reply.content


def test_edit_and_resend_keeps_the_old_exchange_as_a_version_to_page_back_to(qtbot, make_window, store,
                                                                            local_provider):
    window = make_window(local_provider)
    chat_id = new_chat(window, store)
    qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=WAIT_MS)
    with qtbot.waitSignal(window.reply_finished, timeout=300_000):
        window.submit("Name a colour.")
    question, old_reply = store.load_messages(chat_id)
    view, model = window.conversation, window.conversation.rows_model

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
    new_reply = reply.args[0].message
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert [(m.role, m.content) for m in store.load_messages(chat_id)] == [("user", "Name a fruit."),
                                                                            ("assistant", new_reply.content)]
    assert [(r.message.id, r.message.content) for r in model.rows()] == [(question.id, "Name a fruit."),
                                                                         (new_reply.id, new_reply.content)]
    assert model.versions_of(question.id) == Versions(("Name a colour.", "Name a fruit."), 1)  # "‹ 2/2 ›"
    assert "pages back" in window.statusBar().currentMessage() and not window.status.undo.isVisible()

    # Its left arrow shows the earlier message with its reply, and that is what the model is sent from now on.
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=switcher(view, 0)[0].center())
    qtbot.waitUntil(lambda: idle(window) and model.versions_of(question.id).shown == 0, timeout=WAIT_MS)
    assert [r.message.content for r in model.rows()] == ["Name a colour.", old_reply.content]
    assert store.load_messages(chat_id) == [question, old_reply]
    assert [m.content for m in window.chat.session.engine.assemble().messages] == ["Name a colour.",
                                                                                    old_reply.content]

    # Reopened (a new window on the same file), both versions are there, the one chosen shown.
    window.close()
    assert window.chat.finish_background_work()
    reopened = make_window(local_provider)
    qtbot.waitUntil(lambda: reopened.chat.snapshot is not None and reopened.chat.snapshot.chat_id == chat_id,
                    timeout=WAIT_MS)
    model = reopened.conversation.rows_model
    assert model.versions_of(question.id) == Versions(("Name a colour.", "Name a fruit."), 0)
    assert [r.message.content for r in model.rows()] == ["Name a colour.", old_reply.content]
    qtbot.mouseClick(reopened.conversation.viewport(), Qt.MouseButton.LeftButton,
                     pos=switcher(reopened.conversation, 0)[2].center())
    qtbot.waitUntil(lambda: idle(reopened) and model.versions_of(question.id).shown == 1, timeout=WAIT_MS)
    assert [r.message.content for r in model.rows()] == ["Name a fruit.", new_reply.content]


def body(view, number: int) -> str:
    """What the row's card says, as painted (its text and any mark under it)."""
    return view.delegate.body(view.rows_model.row_at(number))[0]


def test_a_stopped_reply_keeps_its_mark_when_paged_away_and_back_and_reopened(qtbot, make_window, store,
                                                                              local_provider):
    held = HeldReplies(local_provider, after_pieces=1)  # the Stop comes before a short reply ends
    window = make_window(held)
    chat_id = new_chat(window, store, reserve_output=200)
    qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=WAIT_MS)
    view, model = window.conversation, window.conversation.rows_model
    with qtbot.waitSignal(window.reply_finished, timeout=300_000):
        window.submit("Write a long story about a lighthouse keeper.")
        qtbot.waitUntil(lambda: model.rowCount() == 2 and bool(model.row_at(1).message.content), timeout=WAIT_MS)
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Escape)  # Stop
    stopped = store.load_messages(chat_id)[1]
    assert stopped.incomplete and stopped.content
    held.release.set()
    with qtbot.waitSignal(window.reply_finished, timeout=300_000):
        window.sending.regenerate()
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    mark = "*Incomplete: the reply stopped before its end.*"  # in italics under the text

    for arrow in (0, 2, 0):  # ‹ to the stopped one, › away, ‹ back
        shown = model.versions_of(stopped.id).shown
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=switcher(view, 1)[arrow].center())
        qtbot.waitUntil(lambda shown=shown: idle(window) and model.versions_of(stopped.id).shown != shown,
                        timeout=WAIT_MS)
    assert model.row_at(1).message.content == stopped.content
    assert body(view, 1).endswith(mark)
    assert "continue" in view.row_actions(1)

    window.close()
    assert window.chat.finish_background_work()
    reopened = make_window(local_provider)
    qtbot.waitUntil(lambda: reopened.chat.snapshot is not None and reopened.chat.snapshot.chat_id == chat_id,
                    timeout=WAIT_MS)
    assert body(reopened.conversation, 1).endswith(mark)


def test_a_reply_cut_at_its_token_limit_is_marked_and_continue_extends_it(qtbot, make_window, store,
                                                                         local_provider):
    window = make_window(local_provider)
    chat_id = new_chat(window, store)  # replies of REPLY_TOKENS tokens
    qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=WAIT_MS)
    view = window.conversation
    with qtbot.waitSignal(window.reply_finished, timeout=300_000) as first:
        window.submit("Write a long story about a lighthouse keeper.")
    cut = first.args[0].message
    assert cut.cut_at == REPLY_TOKENS
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert body(view, 1).endswith(f"*Stopped at the {REPLY_TOKENS}-token limit: Continue goes on from here.*")
    assert "Continue" in window.statusBar().currentMessage()
    tokens = window.chat.snapshot.usage.total

    with qtbot.waitSignal(window.reply_finished, timeout=300_000) as going_on:
        click_chip(qtbot, view, 1, "continue")
    longer = going_on.args[0].message
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert longer.id == cut.id and longer.content.startswith(cut.content) and len(longer.content) > len(cut.content)
    assert [m.content for m in store.load_messages(chat_id)] == ["Write a long story about a lighthouse keeper.",
                                                                 longer.content]
    assert view.rows_model.rowCount() == 2 and view.rows_model.row_at(1).message.content == longer.content
    assert window.chat.snapshot.usage.total > tokens  # counted
