"""In the window, a reply whose last save fails (the disk fills as it ends) is shown whole and copyable, its row says
it was not saved whole, and the status bar's Save again saves it once there is room; nothing says it is saved before
it is. A scripted server on loopback writes the reply; the disk is filled for real (RLIMIT_FSIZE)."""

from __future__ import annotations

import contextlib
import threading

from precis.core.providers.openai_compat import OpenAICompatProvider
from PySide6.QtGui import QGuiApplication

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
