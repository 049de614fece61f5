"""Closing the window while a tool call waits on the consent card: the window closes at once, the call does not
run, and the chat keeps the call with a result saying it was not run (every stored call has its result, so the chat
reopens and goes on). The model is the scripted server, a stand-in: a real model does not call execute_bash on
demand."""

from __future__ import annotations

from tests.gui.test_tool_loop_window import stored_calls_answered, tool_window
from tests.providers.scripted_server import stream
from tests.providers.test_tool_loop import answer, calls
from tests.timing import WAIT_MS


def test_closing_the_window_on_the_consent_card_denies_the_call_and_keeps_it_answered(qtbot, make_window, store,
                                                                                    server, workspace):
    server.steps = [stream(calls(("c1", "execute_bash", {"command": "echo hi > note.txt"}))),
                    stream(answer("Not run, then."))]
    window, chat_id = tool_window(qtbot, make_window, store, server, workspace)
    window.submit("Save a note.")
    qtbot.waitUntil(window.consent_card.isVisible, timeout=WAIT_MS)
    window.close()
    assert not window.isVisible()
    assert window.chat.finish_background_work(WAIT_MS), "closing waited on the card"
    assert not (workspace / "note.txt").exists()
    assert stored_calls_answered(store, chat_id)
    assert [(m.role, m.content) for m in store.load_messages(chat_id)][1:] == [
        ("assistant", ""), ("tool", "Error: not run: the user denied this call")]
    assert len(server.requests) == 1  # the model was not asked again after the window closed
