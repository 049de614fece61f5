"""Closing the window while work is under way: it closes at once, and what the work made is kept whole."""

from __future__ import annotations

import os
import signal
import threading
from http.server import BaseHTTPRequestHandler

from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.settings import SUMMARIZATION_KEY
from precis.core.summary.summarizers import CHAT_CLOSED

from tests.gui.test_reply_not_answered_window import MODELS
from tests.gui.test_window import dialogue, open_imported_chat
from tests.timing import WAIT_MS


def a_model_still_writing(asked: threading.Event, released: threading.Event):
    """A server's streamed answer begun (its headers sent) whose text does not come until the test is over: the
    model is still writing the summary."""

    def step(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        handler.wfile.flush()
        asked.set()
        released.wait(60)

    return step


def test_closing_while_the_model_writes_a_summary_has_the_rules_write_it_at_once(qtbot, make_window, store, server,
                                                                                   monkeypatch):
    """It was: closing waited for the model's summary, up to its time limit (and the model's load, up to two
    minutes, before it), then the store was closed under it; now the rules write it as the window closes, and the
    summary says why."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    asked, released = threading.Event(), threading.Event()
    server.steps += [MODELS, a_model_still_writing(asked, released)]
    # A time limit longer than the close waits for its work (gui.controller.CLOSE_WAIT_MS).
    store.set_setting(SUMMARIZATION_KEY, {"mode": "llm", "enabled": False, "summary_seconds": 60})
    window = make_window(OpenAICompatProvider(base_url=server.base_url, model="m"))
    chat_id = open_imported_chat(qtbot, window, store, dialogue(40, "Kitchen renovation, step"))
    try:
        window.summarize_now()
        qtbot.waitUntil(asked.is_set, timeout=WAIT_MS)
        window.close()
        assert not window.isVisible()
        assert window.chat.finish_background_work(), "closing waited for the model's summary"
    finally:
        released.set()
    [record] = store.load_records(chat_id)
    assert record.status == "active" and record.fallback_used and record.fallback_reason == CHAT_CLOSED
    assert record.text  # the rules' summary, of the same messages


def test_sigterm_closes_the_window_as_close_does_keeping_the_draft(qtbot, make_window, store):
    """It was: SIGTERM (a logout, `kill`) ended the process where it stood: the draft typed in the last moments,
    the window's size and the reading place were not saved, a reply being written not ended."""
    from precis.gui.closing import close_on_signals

    window = make_window()
    chat_id = store.create_chat("a chat")
    window.refresh_chats()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: window.chat.snapshot is not None, timeout=WAIT_MS)
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        close_on_signals(window, window.close_guard)
        window.composer.edit.setPlainText("a question typed just before the logout")  # not saved yet: typing pauses first
        os.kill(os.getpid(), signal.SIGTERM)
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=WAIT_MS)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    assert window.chat.finish_background_work()
    assert store.get_draft(chat_id) == "a question typed just before the logout"
