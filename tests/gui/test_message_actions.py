"""Actions on a message, as a user reaches them: chips in its header while hovered, and its context menu from the
mouse or the keyboard (Menu key); Ctrl+C copies. Real window, real SQLite file."""

from __future__ import annotations

import pytest
from precis.core.settings import SUMMARIZATION_KEY
from precis.gui.message_header import PAD_X, TITLE_ROOM
from PySide6.QtCore import QPoint, QRect, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QStyleOptionViewItem

from tests.gui.test_window import dialogue, idle, long_dialogue, open_imported_chat
from tests.timing import WAIT_MS


def row_number(view, text_end: str) -> int:
    rows = view.rows_model.rows()
    return next(i for i, r in enumerate(rows) if r.message is not None and r.message.content.endswith(text_end))


def hover(qtbot, view, number: int) -> None:
    view.scrollTo(view.rows_model.index(number))
    qtbot.mouseMove(view.viewport(), view.visualRect(view.rows_model.index(number)).center())
    qtbot.waitUntil(lambda: view.delegate.hovered == number, timeout=WAIT_MS)


def chip(view, number: int, action: str) -> QPoint:
    """Where the hovered row paints the chip of this action."""
    option = QStyleOptionViewItem()
    option.rect = view.visualRect(view.rows_model.index(number))
    rects = dict((name, rect) for rect, name in view.delegate.action_rects(view.delegate.card_rect(option),
                                                                            view.row_actions(number)))
    return rects[action].center()


def click_chip(qtbot, view, number: int, action: str) -> None:
    hover(qtbot, view, number)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=chip(view, number, action))


def choose_from_popup(text: str, seen: list[list[str]]) -> None:
    """Once the context menu is up, note its entries and choose one (as a user would)."""
    menu = QApplication.activePopupWidget()
    if menu is None:
        QTimer.singleShot(20, lambda: choose_from_popup(text, seen))
        return
    seen.append([action.text() for action in menu.actions()])
    chosen = next(action for action in menu.actions() if action.text() == text)
    menu.close()
    chosen.trigger()


# Long enough that a summary of ten of them is smaller than they are (one that is not, is not kept).
PLAN = ("Migration plan: copy the orders table to the new cluster in batches of ten thousand rows, check each "
        "batch's count against the source, and move the readers over once both agree, step")


def test_hover_actions_copy_edit_pin_and_summarize_and_the_keyboard_reaches_them(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    window = make_window()
    chat_id = open_imported_chat(qtbot, window, store, dialogue(16, PLAN))
    view = window.conversation
    last_user, last_reply = row_number(view, "step 14."), row_number(view, "step 15.")
    assert view.row_actions(last_user) == ["copy", "edit", "pin", "summarize"]
    assert view.row_actions(last_reply) == ["copy", "regenerate", "sent", "pin", "summarize"]
    assert view.row_actions(row_number(view, "step 13.")) == ["copy", "sent", "pin", "summarize"]

    # The header changes while hovered: the chips stand where the time was.
    index = view.rows_model.index(last_reply)
    view.scrollTo(index)
    plain = view.viewport().grab(view.visualRect(index)).toImage()
    hover(qtbot, view, last_reply)
    qtbot.waitUntil(lambda: view.viewport().grab(view.visualRect(index)).toImage() != plain, timeout=WAIT_MS)

    click_chip(qtbot, view, last_reply, "copy")
    assert QGuiApplication.clipboard().text() == f"{PLAN} 15."
    assert window.statusBar().currentMessage() == "Message copied."

    click_chip(qtbot, view, last_user, "edit")
    assert window.composer.text() == f"{PLAN} 14." and "Editing" in window.composer.hint.text()
    window.sending.cancel_edit()

    third = row_number(view, "step 3.")
    click_chip(qtbot, view, third, "pin")
    qtbot.waitUntil(lambda: idle(window) and store.load_messages(chat_id)[3].pinned, timeout=WAIT_MS)
    third = row_number(view, "step 3.")
    assert "unpin" in view.row_actions(third)

    # The keyboard: the Menu key opens the current message's menu, with the same actions.
    view.setFocus()
    view.setCurrentIndex(view.rows_model.index(third))
    seen: list[list[str]] = []
    QTimer.singleShot(0, lambda: choose_from_popup("Unpin", seen))
    qtbot.keyClick(view, Qt.Key.Key_Menu)
    assert seen == [["Copy message", "What was sent…", "Unpin", "Summarize up to here"]]
    qtbot.waitUntil(lambda: idle(window) and not store.load_messages(chat_id)[3].pinned, timeout=WAIT_MS)
    QGuiApplication.clipboard().clear()
    view.setCurrentIndex(view.rows_model.index(row_number(view, "step 3.")))
    qtbot.keyClick(view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QGuiApplication.clipboard().text() == f"{PLAN} 3."

    click_chip(qtbot, view, row_number(view, "step 9."), "summarize")
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 1, timeout=WAIT_MS)
    assert window.chat.snapshot.chain[0].covered_ids == [m.id for m in store.load_messages(chat_id)[:10]]


@pytest.mark.slow
def test_the_archive_in_the_inspector_only_offers_copy(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 4})
    window = make_window()
    open_imported_chat(qtbot, window, store, long_dialogue(16, "Migration plan, step"))
    qtbot.mouseClick(window.inspector.summarize_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 1, timeout=WAIT_MS)
    window.inspector.select_record(window.chat.snapshot.chain[0].id)
    archive = window.inspector.archived_view
    qtbot.waitUntil(lambda: archive.rows_model.rowCount() > 0, timeout=WAIT_MS)  # made off the GUI thread
    assert all(archive.row_actions(n) == ["copy"] for n in range(archive.rows_model.rowCount()))


@pytest.mark.slow
def test_the_keyboard_switches_a_regenerated_reply_and_the_choice_is_kept(qtbot, make_window, store):
    chat_id = store.import_chat("Fruit", dialogue(4, "Fruit talk, line"))
    reply = store.load_messages(chat_id)[-1]
    store.save_version(chat_id, reply)  # as a regenerate leaves it: two versions, the newer one shown
    store.save_version(chat_id, reply.with_changes(content="A second answer."))
    window = make_window()
    view = window.conversation
    last = view.rows_model.rowCount() - 1
    assert view.rows_model.row_at(last).message.content == "A second answer."

    view.setFocus()
    view.setCurrentIndex(view.rows_model.index(last))
    seen: list[list[str]] = []
    QTimer.singleShot(0, lambda: choose_from_popup("Previous version (1/2)", seen))
    qtbot.keyClick(view, Qt.Key.Key_F10, Qt.KeyboardModifier.ShiftModifier)
    assert "Previous version (1/2)" in seen[0] and not any(text.startswith("Next") for text in seen[0])
    qtbot.waitUntil(lambda: idle(window) and view.rows_model.versions_of(reply.id).shown == 0, timeout=WAIT_MS)
    assert view.rows_model.row_at(last).message.content == "Fruit talk, line 3."
    assert store.load_messages(chat_id)[-1].content == "Fruit talk, line 3."
    assert window.chat.session.engine.assemble().messages[-1].content == "Fruit talk, line 3."


@pytest.mark.slow
def test_an_older_regenerated_reply_shows_its_count_but_does_not_switch(qtbot, make_window, store):
    # The first reply was regenerated while it was the last one, then the chat went on from the version shown
    # (saving a version of an older message would make what follows it that version's branch).
    history = dialogue(6, "Fruit talk, line")
    chat_id = store.import_chat("Fruit", history[:2])
    older = store.load_messages(chat_id)[1]
    store.save_version(chat_id, older)
    store.save_version(chat_id, older.with_changes(content="A second answer."))
    store.add_messages(chat_id, history[2:])
    window = make_window()
    view = window.conversation
    number = view.rows_model.row_of(older.id)
    assert number == 1 and view.rows_model.rowCount() == 6  # four messages after it
    assert view.rows_model.versions_of(older.id).shown == 1  # "‹ 2/2 ›" is painted
    # The messages after it answer the version it shows: neither its arrows nor its menu switch it.
    option = QStyleOptionViewItem()
    option.rect = view.visualRect(view.rows_model.index(number))
    parts = view.delegate.version_rects(view.delegate.card_rect(option), view.rows_model.index(number))
    assert [text for _rect, text, _target in parts] == ["‹", "2/2", "›"]
    assert all(target is None for _rect, _text, target in parts)
    assert not [action for action in view.actions_menu(number).actions() if "version" in action.text()]


def test_on_a_narrow_card_the_last_chips_give_way_and_never_cover_the_title(qtbot, make_window):
    """At 1000 px the five chips of a reply ran off the card's left edge over "Assistant"; the last ones now give way
    (the context menu still has them all)."""
    delegate = make_window().conversation.delegate
    actions = ["copy", "regenerate", "sent", "pin", "summarize"]
    for width in (300, 420, 560, 900):
        card = QRect(10, 0, width, 80)
        rects = delegate.action_rects(card, actions)
        assert [action for _, action in rects] == actions[:len(rects)]
        assert all(rect.left() >= card.left() + PAD_X + TITLE_ROOM and rect.right() <= card.right() for rect, _ in rects)
    assert len(delegate.action_rects(QRect(10, 0, 900, 80), actions)) == 5
