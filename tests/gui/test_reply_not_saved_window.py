"""In the window, a reply whose last save fails (the disk fills as it ends) is shown whole and copyable, its row says
it was not saved whole, and the status bar's Save again saves it once there is room; nothing says it is saved before
it is. A scripted server on loopback writes the reply; the disk is filled for real (RLIMIT_FSIZE)."""

from __future__ import annotations

import contextlib
import threading

import pytest
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.gui.closing import CLOSE_ANYWAY, COPY_IT, OPEN_THAT_CHAT, SAVE_AGAIN, UNSAVED_BOX
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMessageBox

from tests.disk_full import disk_full
from tests.gui.test_reply_not_answered_window import MODELS
from tests.gui.test_window import idle, open_new_chat
from tests.store.test_disk_faults import FIRST_HALF, SECOND_HALF, a_reply_in_two_halves
from tests.timing import WAIT_MS

WHOLE = FIRST_HALF + "".join(SECOND_HALF)


def test_a_reply_not_saved_whole_says_so_and_save_again_saves_it(qtbot, make_window, store, server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    first_half_sent, filled = threading.Event(), threading.Event()
    server.steps += [MODELS, a_reply_in_two_halves(first_half_sent, filled)]
    window = make_window(OpenAICompatProvider(base_url=server.base_url, model="m"))
    chat_id = open_new_chat(qtbot, window, store)
    with contextlib.ExitStack() as full:
        window.submit("How do I get to Cacilhas?")
        qtbot.waitUntil(first_half_sent.is_set, timeout=WAIT_MS)
        full.enter_context(disk_full(store.path))
        with qtbot.waitSignal(window.reply_finished, timeout=WAIT_MS):
            filled.set()
        qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
        row = window.conversation.rows_model.rows()[-1]
        assert row.message.content == WHOLE  # shown whole ...
        assert row.error is not None and row.error.startswith("Not saved whole: could not save the message")
        assert window.status.undo.isVisible() and window.status.undo.text() == "Save again"
        stored = store.load_messages(chat_id)[-1]
        assert stored.incomplete and stored.content != WHOLE  # ... and stored in part, as the row says

        number = window.conversation.rows_model.rowCount() - 1
        window.conversation.trigger("copy", number)
        assert QGuiApplication.clipboard().text() == WHOLE

        window.status.undo.click()  # still full: it stays unsaved, offered again, and the bar says why
        qtbot.waitUntil(lambda: idle(window) and window.status.undo.isVisible(), timeout=WAIT_MS)
        assert "could not save the message" in window.statusBar().currentMessage()
        assert window.conversation.rows_model.rows()[-1].error is not None

    window.status.undo.click()  # room again
    qtbot.waitUntil(lambda: idle(window) and not window.status.undo.isVisible(), timeout=WAIT_MS)
    assert window.conversation.rows_model.rows()[-1].error is None
    stored = store.load_messages(chat_id)[-1]
    assert stored.content == WHOLE and not stored.incomplete


def _reply_not_saved(qtbot, window, server, full: contextlib.ExitStack, store) -> str:
    """The open chat's last reply shown whole, its last save failed on a disk filled as it was written (full stays
    entered: the disk stays full until the test leaves it)."""
    first_half_sent, filled = threading.Event(), threading.Event()
    server.steps.append(a_reply_in_two_halves(first_half_sent, filled))
    chat_id = open_new_chat(qtbot, window, store)
    window.submit("How do I get to Cacilhas?")
    qtbot.waitUntil(first_half_sent.is_set, timeout=WAIT_MS)
    full.enter_context(disk_full(store.path))
    with qtbot.waitSignal(window.reply_finished, timeout=WAIT_MS):
        filled.set()
    qtbot.waitUntil(lambda: idle(window) and window.status.undo.isVisible(), timeout=WAIT_MS)
    return chat_id


@pytest.fixture
def window(make_window, server, monkeypatch):
    """The window on the scripted server, its model list answered; each test scripts the reply."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.steps.append(MODELS)
    return make_window(OpenAICompatProvider(base_url=server.base_url, model="m"))


def _question(window) -> QMessageBox:
    box = window.findChild(QMessageBox, UNSAVED_BOX)
    assert box is not None and box.isVisible(), "closing did not ask about the reply not saved"
    return box


def _choose(box: QMessageBox, text: str) -> None:
    next(button for button in box.buttons() if button.text() == text).click()


def test_closing_with_a_reply_not_saved_asks_and_loses_nothing(qtbot, window, store, server):
    """It was: closing tried the save once, logged its failure and closed; the reply's whole text was gone."""
    with contextlib.ExitStack() as full:
        chat_id = _reply_not_saved(qtbot, window, server, full, store)
        window.close()
        box = _question(window)
        assert window.isVisible() and "not saved whole: could not save the message" in box.text()
        _choose(box, COPY_IT)  # the window stays open, to paste it somewhere
        assert QGuiApplication.clipboard().text() == WHOLE and window.isVisible()

        window.close()
        _choose(_question(window), SAVE_AGAIN)  # still full: asked again, the window open
        qtbot.waitUntil(lambda: idle(window) and _question(window) is not None, timeout=WAIT_MS)
        assert window.isVisible()
        _choose(_question(window), QMessageBox.StandardButton.Cancel.name)  # nothing chosen: stays as it was
    assert window.isVisible()

    window.close()  # room again
    _choose(_question(window), SAVE_AGAIN)
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=WAIT_MS)
    stored = store.load_messages(chat_id)[-1]
    assert stored.content == WHOLE and not stored.incomplete


def test_close_anyway_closes_at_once(qtbot, window, store, server):
    with contextlib.ExitStack() as full:
        chat_id = _reply_not_saved(qtbot, window, server, full, store)
        window.close()
        _choose(_question(window), CLOSE_ANYWAY)
        assert not window.isVisible()
        assert window.chat.finish_background_work()  # its last try at saving, on the disk still full
    stored = store.load_messages(chat_id)[-1]
    assert stored.incomplete and WHOLE.startswith(stored.content)  # what was saved before, as the question said


def test_switching_chats_keeps_the_reply_not_saved_with_its_chat(qtbot, window, store, server):
    """It was: leaving the chat tried the save once and logged its failure; opened again, the chat showed the part
    saved before, and the rest of the reply was gone without a word."""
    other = store.create_chat("another chat")
    with contextlib.ExitStack() as full:
        chat_id = _reply_not_saved(qtbot, window, server, full, store)
        window.refresh_chats()
        window.open_chat(other)
        qtbot.waitUntil(lambda: idle(window) and window.status.undo.isVisible(), timeout=WAIT_MS)
        assert window.status.undo.text() == OPEN_THAT_CHAT  # told, with the way back to it
        window.status.undo.click()  # the disk still full: shown whole, Save again offered again
        qtbot.waitUntil(lambda: idle(window) and window.chat.is_open(chat_id) and window.status.undo.isVisible(),
                        timeout=WAIT_MS)
        row = window.conversation.rows_model.rows()[-1]
        assert row.message.content == WHOLE and row.error is not None
        assert window.status.undo.text() == "Save again"

    window.status.undo.click()  # room again
    qtbot.waitUntil(lambda: idle(window) and not window.status.undo.isVisible(), timeout=WAIT_MS)
    stored = store.load_messages(chat_id)[-1]
    assert stored.content == WHOLE and not stored.incomplete
