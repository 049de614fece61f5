"""Feedback that stays: results readable in the status bar, a labelled Undo that belongs to its chat, slash
commands that complete, never linger and never reach the model, and new chats titled from their first message."""

from __future__ import annotations

import re
import threading

import pytest
from precis.core.model.messages import Message
from precis.core.model.titles import NEW_CHAT_TITLE, title_from
from precis.core.settings import SUMMARIZATION_KEY
from PySide6.QtCore import Qt

from tests.gui.held_replies import HeldReplies
from tests.gui.test_window import dialogue, idle, open_imported_chat
from tests.store.test_summary_not_smaller import MIGRATION_POLICY, MIGRATION_WINDOW, SHORT, migration_pairs
from tests.timing import WAIT_MS


def list_text(window) -> str:
    rows = window.chat_list.list
    return "\n".join(rows.item(i).text() for i in range(rows.count()))


@pytest.mark.model
@pytest.mark.slow
def test_a_new_chat_is_titled_from_its_first_message_and_results_stay_with_a_labelled_undo(
        qtbot, make_window, store, local_provider):
    held = HeldReplies(local_provider)
    window = make_window(provider=held)
    window.actions["new-chat"].trigger()  # Ctrl+N / File → New chat
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    chat_id = window.chat.session.chat_id
    assert store.get_chat(chat_id).title == NEW_CHAT_TITLE and window.windowTitle() == f"{NEW_CHAT_TITLE} — Precis"
    assert window.statusBar().currentMessage() == ""  # "Creating the chat…" does not come back once it is made

    first = "Tell me about kickboxing in one sentence"
    qtbot.keyClicks(window.composer.edit, first)
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.composer.stop_button.isVisible(), timeout=WAIT_MS)
    # While the reply is written: the list counts the sent message (and the reply, once its first save lands
    # before the list is read), and Enter says why nothing is sent.
    listed = re.compile(re.escape(title_from(first)) + r"\n(1\u00a0message|2\u00a0messages) ·")  # never wrapped
    qtbot.waitUntil(lambda: listed.search(list_text(window)) is not None, timeout=WAIT_MS)  # listed off the GUI thread
    assert window.composer.stop_button.isVisible()
    qtbot.keyClicks(window.composer.edit, "and boxing?")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    assert "reply is being written" in window.composer.hint.text()
    assert window.composer.text() == "and boxing?"
    held.release.set()
    qtbot.waitUntil(lambda: idle(window) and not window.composer.stop_button.isVisible(), timeout=120_000)
    assert store.get_chat(chat_id).title == title_from(first)
    assert window.windowTitle() == f"{title_from(first)} — Precis"
    assert "2\u00a0messages" in list_text(window)
    assert window.composer.hint.text() == ""  # the wait is over

    window.actions["edit-last"].trigger()
    window.composer.set_text("Tell me about boxing in one sentence")
    with qtbot.waitSignal(window.reply_finished, timeout=120_000):
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    qtbot.wait(300)  # the work has finished; what it did must still be readable
    assert window.statusBar().currentMessage().startswith(
        "Message edited and resent; ‹ › on it pages back to the earlier one and its reply.")

    other = store.create_chat("another chat")
    window.refresh_chats()
    window.open_chat(other)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert window.statusBar().currentMessage() == ""  # the other chat's edit is not said here


@pytest.mark.slow
def test_slash_commands_complete_never_linger_and_give_feedback(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 4})
    window = make_window()
    chat_id = open_imported_chat(qtbot, window, store, dialogue(24, "Garden plan, bed"))
    sent = len(store.load_messages(chat_id))
    edit = window.composer.edit

    # A bare "/" then Enter: a hint listing the commands, and nothing left to prefix the next command.
    qtbot.keyClicks(edit, "/")
    edit.completer.popup().hide()
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    assert window.composer.text() == "" and "/summarize" in window.composer.hint.text()

    # Completion from the registry, with what each command does; Enter takes the highlighted one.
    qtbot.keyClicks(edit, "/su")
    popup = edit.completer.popup()
    assert popup.isVisible()
    shown = [popup.model().index(i, 0).data() for i in range(popup.model().rowCount())]
    assert shown == ["/summarize [instructions]  —  summarize older messages now, optionally with extra instructions"]
    qtbot.keyClick(popup, Qt.Key.Key_Return)
    assert window.composer.text() == "/summarize "
    assert window.chat.snapshot.chain == []  # choosing is not running

    # An unknown command is never sent; typing replaces it instead of extending it.
    window.composer.set_text("/frobnicate")
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    assert "Unknown command /frobnicate" in window.composer.hint.text()
    qtbot.keyClicks(edit, "/summarize")
    edit.completer.popup().hide()
    assert window.composer.text() == "/summarize"
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 1, timeout=WAIT_MS)
    assert len(store.load_messages(chat_id)) == sent  # nothing reached the chat as text

    window.submit("/undo-summary")
    qtbot.waitUntil(lambda: idle(window) and not window.chat.snapshot.chain, timeout=WAIT_MS)
    qtbot.wait(300)
    assert window.statusBar().currentMessage().startswith("Summary undone:")
    assert "messages are back" in window.statusBar().currentMessage()

    window.submit("/pin")
    qtbot.waitUntil(lambda: idle(window) and store.load_messages(chat_id)[-1].pinned, timeout=WAIT_MS)
    assert window.statusBar().currentMessage().startswith("Pinned:")
    window.submit("/unpin")
    qtbot.waitUntil(lambda: idle(window) and not store.load_messages(chat_id)[-1].pinned, timeout=WAIT_MS)
    assert window.statusBar().currentMessage().startswith("Unpinned:")


@pytest.mark.slow
def test_the_status_bar_stops_saying_work_runs_once_the_chats_work_is_done(qtbot, make_window, store):
    """A change picked up from the store while a reply runs (the reply's own messages are one) queues a quiet look
    behind it: the reply's "Write the reply…" and its progress bar still go when both are done."""
    window = make_window()
    open_imported_chat(qtbot, window, store, dialogue(4, "Harbour schedule, item"))
    release = threading.Event()
    window.chat.run_on_chat("write the reply", lambda _job: release.wait(20))
    assert window.statusBar().currentMessage() == "Write the reply…" and window.status.progress.isVisibleTo(window)
    with qtbot.waitSignal(window.chat.chats_changed, timeout=WAIT_MS):
        store.create_chat("made elsewhere")  # as another Precis on this data folder would
    release.set()
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not window.status.progress.isVisibleTo(window), timeout=WAIT_MS)
    assert window.statusBar().currentMessage() == ""


@pytest.mark.slow
def test_deleting_the_open_chat_says_so_beside_its_undo_after_the_next_chat_opens(qtbot, make_window, store):
    """Deleting the open chat opens the next one; the work of opening it replaced "Chat deleted." and, done, cleared
    the line: an "Undo delete" button was left with nothing saying what had happened."""
    kept = store.import_chat("Kept", dialogue(6, "Tomato bed"))
    doomed = store.create_chat("Doomed")
    window = make_window()
    window.open_chat(doomed)
    qtbot.waitUntil(lambda: idle(window) and window.chat.is_open(doomed), timeout=WAIT_MS)

    window.chat_list.delete_requested.emit(doomed)
    qtbot.waitUntil(lambda: idle(window) and window.chat.is_open(kept) and window.status.undo.isVisible(),
                    timeout=WAIT_MS)
    assert window.statusBar().currentMessage() == "Chat deleted."


def test_summary_instructions_typed_in_one_chat_are_not_left_for_the_next(qtbot, make_window, store):
    """The instructions box kept one chat's text when another opened: Summarize now there would have used it."""
    garden = store.import_chat("Garden", dialogue(6, "Planting tomatoes, week"))
    store.import_chat("Sailing", dialogue(30, "Reefing the mainsail, step"))  # opens first: the newest
    window = make_window()
    assert window.inspector.instructions.isEnabled()  # there is something to summarize
    qtbot.keyClicks(window.inspector.instructions, "keep every boat name")
    window.open_chat(garden)
    qtbot.waitUntil(lambda: window.chat.is_open(garden) and idle(window), timeout=WAIT_MS)
    assert window.inspector.instructions.text() == ""


def test_summary_instructions_are_cleared_once_used(qtbot, make_window, store):
    """Summarize now with instructions left them in the box, as if not yet used."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    store.import_chat("Sailing", dialogue(30, "Reefing the mainsail, step"))
    window = make_window()
    qtbot.waitUntil(lambda: idle(window) and window.inspector.instructions.isEnabled(), timeout=WAIT_MS)
    qtbot.keyClicks(window.inspector.instructions, "keep every boat name")
    qtbot.mouseClick(window.inspector.summarize_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and bool(window.chat.snapshot.chain), timeout=WAIT_MS)
    assert window.chat.snapshot.chain[-1].instructions == "keep every boat name"
    assert window.inspector.instructions.text() == ""


def test_a_new_chat_left_empty_is_not_kept_and_one_with_a_draft_is(qtbot, make_window, store):
    """Each click on New chat left an empty "New chat" in the list for good."""
    garden = store.import_chat("Garden", dialogue(6, "Planting tomatoes, week"))
    window = make_window()
    with qtbot.waitSignal(window.snapshot_shown, timeout=WAIT_MS):
        window.new_chat()
    empty = window.chat.session.chat_id
    window.open_chat(garden)
    qtbot.waitUntil(lambda: idle(window) and [c.id for c in window.chat_list.chats] == [garden], timeout=WAIT_MS)
    assert [c.id for c in store.list_chats()] == [garden]

    with qtbot.waitSignal(window.snapshot_shown, timeout=WAIT_MS):
        window.new_chat()
    drafted = window.chat.session.chat_id
    assert drafted != empty
    qtbot.keyClicks(window.composer.edit, "Which tomatoes grow in shade?")
    window.open_chat(garden)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert {c.id for c in store.list_chats()} == {garden, drafted}
    assert store.get_draft(drafted) == "Which tomatoes grow in shade?"


def test_a_summary_that_saves_nothing_is_not_kept_and_the_user_is_told(qtbot, make_window, store):
    store.set_setting(SUMMARIZATION_KEY, MIGRATION_POLICY)
    window = make_window()
    # Opened past its trigger: the automatic summary it calls for would be as large as what it replaces.
    chat_id = store.create_chat("migrations", settings=MIGRATION_WINDOW)
    store.add_messages(chat_id, migration_pairs(38))
    window.refresh_chats()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: "An automatic summary was not kept" in window.inspector.notice.text(), timeout=WAIT_MS)
    assert window.inspector.notice.isVisible() and store.load_records(chat_id) == []

    # Summarize now in a chat of a few short messages: refused, said under the message box, nothing kept.
    greetings = store.create_chat("greetings")
    store.add_messages(greetings, [Message(role="user" if n % 2 == 0 else "assistant", content=text)
                                   for n, text in enumerate(SHORT)])
    window.refresh_chats()
    window.open_chat(greetings)
    qtbot.waitUntil(lambda: idle(window) and window.inspector.summarize_button.isEnabled(), timeout=WAIT_MS)
    window.inspector.summarize_button.click()
    qtbot.waitUntil(lambda: window.composer.hint.text().startswith("not summarized: a summary of"), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert store.load_records(greetings) == [] and window.chat.snapshot.chain == []
