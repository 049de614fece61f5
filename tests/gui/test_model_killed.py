"""The real model process killed (os.kill of its pid) under the real window: mid-reply the partial reply is kept
and marked cut, the status bar names the signal, the window stays usable and the next message restarts the model;
mid-summary the summary falls back to the rules and its record says why."""

from __future__ import annotations

import os
import signal

import pytest
from PySide6.QtCore import Qt

from tests.gui.test_window import idle, long_dialogue, open_new_chat
from tests.timing import WAIT_MS

pytestmark = pytest.mark.model


@pytest.mark.slow
def test_killing_the_model_mid_reply_keeps_the_cut_reply_and_the_next_message_restarts_it(
        qtbot, make_window, store, local_provider):
    pid = local_provider.load().pid
    window = make_window(local_provider)
    model = window.conversation.rows_model
    qtbot.keyClicks(window.composer.edit, "Write a long story about a lighthouse keeper.")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: len(model.rows()) == 2 and bool(model.row_at(1).message.content), timeout=WAIT_MS)
    with qtbot.waitSignal(window.reply_finished, timeout=WAIT_MS):
        os.kill(pid, signal.SIGSEGV)
    assert "stopped (killed by SIGSEGV)" in window.status.model.text()  # the model's state in the status bar
    [chat] = store.list_chats()
    user, reply = store.load_messages(chat.id)
    assert reply.incomplete and reply.content  # the part that arrived is kept, marked as cut

    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    window.submit("Name a colour.")
    qtbot.waitUntil(lambda: idle(window) and len(store.load_messages(chat.id)) == 4, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not store.load_messages(chat.id)[-1].incomplete, timeout=WAIT_MS)
    assert store.load_messages(chat.id)[-1].content
    assert local_provider.process.pid not in (None, pid)
    assert window.status.model.text().endswith("ready")


@pytest.mark.slow
def test_killing_the_model_mid_summary_falls_back_to_the_rules_and_says_so(qtbot, make_window, store, local_provider):
    chat_id = store.create_chat("facts", settings={"context_window": 2048})
    store.add_messages(chat_id, long_dialogue(12, "Note"))  # long enough that the rules' summary saves tokens
    local_provider.load()
    window = make_window(local_provider)
    qtbot.waitUntil(lambda: idle(window) and window.inspector.summarize_button.isEnabled(), timeout=WAIT_MS)
    process = local_provider.process
    window.inspector.summarize_button.click()
    # The summary's request holds the model process while the model writes it.
    qtbot.waitUntil(lambda: process._lock.locked(), timeout=WAIT_MS)
    pid = process.pid
    os.kill(pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: idle(window) and bool(window.chat.snapshot.chain), timeout=WAIT_MS)
    [record] = store.load_records(chat_id)
    assert record.fallback_used and "killed by SIGKILL" in record.fallback_reason
    assert len(store.load_messages(chat_id)) == 12  # every original kept


@pytest.mark.slow
def test_closing_the_window_stops_the_model_process(qtbot, make_window, local_provider):
    window = make_window(local_provider, load_model=True)
    qtbot.waitUntil(lambda: local_provider.process.pid is not None, timeout=WAIT_MS)
    pid = local_provider.process.pid
    window.close()
    assert window.chat.finish_background_work()  # as `precis open` does when the window has closed
    window.chat.model.stop()
    assert local_provider.process.pid is None
    with pytest.raises(ProcessLookupError):  # gone, and reaped: not even a zombie is left
        os.kill(pid, 0)


@pytest.mark.slow
def test_killing_the_model_mid_tool_loop_keeps_every_step_and_says_so(qtbot, make_window, store, local_provider,
                                                                      workspace):
    """Issue 23: the model process killed while it writes the reply after a tool's result."""
    pid = local_provider.load().pid
    window = make_window(local_provider)
    chat_id = open_new_chat(qtbot, window, store, workspace=str(workspace))
    model = window.conversation.rows_model

    def writing_after_the_result() -> bool:
        rows = model.rows()
        # Its first words arrived: a reply killed before them keeps nothing (test_reply_not_answered.py).
        return (any(row.kind == "tool_result" for row in rows) and rows[-1].message is not None
                and rows[-1].message.role == "assistant" and rows[-1].streaming and bool(rows[-1].message.content))

    window.submit("/use read_file Tell me a long story about what main.py does.")
    qtbot.waitUntil(writing_after_the_result, timeout=WAIT_MS)
    os.kill(pid, signal.SIGSEGV)
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    messages = store.load_messages(chat_id)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[1].tool_calls[0].name == "read_file" and messages[2].tool_call_id == messages[1].tool_calls[0].id
    assert messages[-1].incomplete  # the reply cut by the kill is kept, marked
    assert "stopped (killed by SIGSEGV)" in window.status.model.text()
