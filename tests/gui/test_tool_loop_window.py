"""The model using tools in the window: the real window on a real SQLite store, real workspace tools on a temporary
folder, the OpenAI-compatible provider over loopback. The model is the scripted server, a stand-in: a real model
does not call execute_bash, then read_file, then answer, on demand."""

from __future__ import annotations

import json

import pytest
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.settings import TOOLS_KEY
from precis.gui.message_text import outcome_mark
from precis.gui.tool_turn import LOCAL_MODEL_TOOLS, TOOLS_NOT_OFFERED
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QPushButton

from tests.gui.conftest import open_settings
from tests.gui.test_accessibility import accessible_name
from tests.gui.test_window import idle, open_new_chat
from tests.providers.scripted_server import delta, stream
from tests.providers.test_tool_loop import answer, calls
from tests.timing import WAIT_MS


def tool_window(qtbot, make_window, store, server, workspace, **settings):
    """A window whose open chat has the workspace folder; its window set, so no request asks the server for it."""
    window = make_window(provider=OpenAICompatProvider(server.base_url, "test-model", "sk-test"))
    chat_id = open_new_chat(qtbot, window, store, context_window=8192, workspace=str(workspace), **settings)
    return window, chat_id


def shown_rows(window) -> list[tuple[str, str]]:
    return [(row.kind, row.message.content) for row in window.conversation.rows_model.rows()]


def stored_calls_answered(store, chat_id) -> bool:
    messages = store.load_messages(chat_id)
    return {c.id for m in messages for c in m.tool_calls} == {m.tool_call_id for m in messages if m.role == "tool"}


@pytest.mark.parametrize("height", [900, 640])
def test_the_cards_fit_in_the_window_without_growing_it(qtbot, make_window, store, server, workspace, height):
    """With the larger-model card up, a consent card's 12-line diff grew the window from 900 to 968 px tall."""
    content = "".join(f"line {n}\n" for n in range(40))
    server.steps = [stream(calls(("c1", "create_file", {"path": "long.txt", "content": content}))),
                    stream(answer("Not written."))]
    window, _ = tool_window(qtbot, make_window, store, server, workspace)
    window.resize(1400, height)
    window.model_suggestion.show()  # as after a reply of the built-in model
    window.submit("Write a long file.")
    card = window.consent_card
    qtbot.waitUntil(card.isVisible, timeout=WAIT_MS)
    qtbot.wait(100)  # the layout settles
    assert window.height() == height
    centre = window.centralWidget()
    for part in (window.model_suggestion, card, card.deny, window.composer):
        top = part.mapTo(centre, part.rect().topLeft()).y()
        assert top >= 0 and top + part.height() <= centre.height(), part
    assert card.preview.verticalScrollBar().maximum() > 0  # the diff scrolls in what room there is
    card.deny.click()
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)


@pytest.mark.parametrize("button, tabs, runs", [("allow_once", 1, True), ("deny", 3, False)])
def test_a_command_asks_on_the_card_and_runs_only_when_allowed(qtbot, make_window, store, server, workspace,
                                                               button, tabs, runs):
    server.steps = [stream(calls(("c1", "execute_bash", {"command": "echo hi > note.txt"}))),
                    stream(answer("Done, as far as I was let."))]
    window, chat_id = tool_window(qtbot, make_window, store, server, workspace)
    window.submit("Save a note.")
    card = window.consent_card
    qtbot.waitUntil(card.isVisible, timeout=WAIT_MS)
    # Which tool, where, and the command itself, before anything ran.
    assert "execute_bash" in card.title.text() and str(workspace) in card.title.text()
    assert card.preview.toPlainText() == f"$ echo hi > note.txt\n(in {workspace})"
    # The preview takes the focus: a screen reader landing on it hears what is asked.
    assert accessible_name(card.preview) == card.title.text()
    assert not (workspace / "note.txt").exists()
    assert [shown[0] for shown in shown_rows(window)] == ["user", "tool_call"]
    # From the keyboard: the card has the focus (on its preview, where Enter does nothing); Tab reaches the buttons.
    assert QApplication.focusWidget() is card.preview
    for _ in range(tabs):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is getattr(card, button)
    qtbot.keyClick(getattr(card, button), Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    assert not card.isVisible()
    assert (workspace / "note.txt").exists() == runs
    assert shown_rows(window)[-1] == ("assistant", "Done, as far as I was let.")
    kind, result = shown_rows(window)[2]
    assert kind == "tool_result" and (result == "Error: not run: the user denied this call") != runs
    assert outcome_mark(window.conversation.rows_model.rows()[2].message) == ("✓" if runs else "✗")
    # The model read what came of its call: the denial too.
    assert server.requests[1][2]["messages"][-1]["content"] == result
    assert stored_calls_answered(store, chat_id)


@pytest.mark.parametrize("ask_before_reading", [False, True])
def test_a_read_runs_without_the_card_unless_reading_asks_too(qtbot, make_window, store, server, workspace,
                                                            ask_before_reading):
    store.set_setting(TOOLS_KEY, {"ask_before_reading": ask_before_reading})
    server.steps = [stream(calls(("c1", "read_file", {"path": "main.py"}))), stream(answer("It prints the folder."))]
    window, _chat_id = tool_window(qtbot, make_window, store, server, workspace)
    asked = []
    ask = window.consent_card.ask
    window.consent_card.ask = lambda request: (asked.append(request.call.name), ask(request))
    window.submit("What does main.py print?")
    if ask_before_reading:
        qtbot.waitUntil(window.consent_card.isVisible, timeout=WAIT_MS)
        qtbot.keyClick(window.consent_card.preview, Qt.Key.Key_A, Qt.KeyboardModifier.AltModifier)  # Allow once
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    assert asked == (["read_file"] if ask_before_reading else [])
    kinds = [kind for kind, _ in shown_rows(window)]
    assert kinds == ["user", "tool_call", "tool_result", "assistant"]
    assert "print(os.getcwd())" in shown_rows(window)[2][1]


def test_stop_while_a_command_runs_ends_the_loop_and_every_call_has_its_result(qtbot, make_window, store, server,
                                                                             workspace):
    server.steps = [stream(calls(("c1", "execute_bash", {"command": "touch started; sleep 30"}),
                                 ("c2", "read_file", {"path": "main.py"})))]
    window, chat_id = tool_window(qtbot, make_window, store, server, workspace)
    window.submit("Wait, then read.")
    qtbot.waitUntil(window.consent_card.isVisible, timeout=WAIT_MS)
    qtbot.mouseClick(window.consent_card.allow_once, Qt.MouseButton.LeftButton)
    # The command runs on the chat's worker: the window answers meanwhile, Stop in view.
    qtbot.waitUntil(lambda: (workspace / "started").exists(), timeout=WAIT_MS)
    window.composer.edit.setFocus()
    qtbot.keyClicks(window.composer.edit, "typed while it runs")
    assert window.composer.text() == "typed while it runs" and window.composer.stop_button.isVisible()

    qtbot.mouseClick(window.composer.stop_button, Qt.MouseButton.LeftButton)
    # Unstopped, the command would run 30 s and the model be asked again (the script has no second reply).
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=25_000)
    assert len(server.requests) == 1
    assert [kind for kind, _ in shown_rows(window)] == ["user", "tool_call", "tool_result", "tool_result"]
    assert shown_rows(window)[3][1] == "Error: not run: the user stopped the answer"
    assert stored_calls_answered(store, chat_id)
    assert "Stopped" in window.statusBar().currentMessage()
    assert window.composer.send_button.isVisible()


def test_esc_on_the_card_denies_the_call_and_ends_the_answer(qtbot, make_window, store, server, workspace):
    server.steps = [stream(calls(("c1", "create_file", {"path": "a.txt", "content": "one\n"})))]
    window, chat_id = tool_window(qtbot, make_window, store, server, workspace)
    window.submit("Make a file.")
    qtbot.waitUntil(window.consent_card.isVisible, timeout=WAIT_MS)
    assert "+one" in window.consent_card.preview.toPlainText()  # the diff, before writing
    qtbot.keyClick(window.consent_card.preview, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    assert not (workspace / "a.txt").exists() and not window.consent_card.isVisible()
    assert len(server.requests) == 1 and stored_calls_answered(store, chat_id)


def test_the_gauge_counts_the_tools_and_the_chat_reopened_shows_the_same_rows(qtbot, make_window, store, server,
                                                                            workspace):
    server.steps = [stream(calls(("c1", "read_file", {"path": "main.py"}))),
                    stream(calls(("c2", "execute_bash", {"command": "echo hi"}))),
                    stream(answer("It prints the folder; echo says hi."))]
    window, chat_id = tool_window(qtbot, make_window, store, server, workspace)
    # The chat's next prompt sends the tools' definitions: counted as their own kind from the start.
    tools_value = window.inspector.legend_values["tools"]
    before = window.chat.snapshot.usage.by_kind["tools"]
    assert before > 0 and not tools_value.isHidden() and tools_value.text() == f"{before:,}"
    window.submit("What does main.py print?")
    qtbot.waitUntil(window.consent_card.isVisible, timeout=WAIT_MS)
    # During the loop, live: the file read is counted as it is stored, while the next call waits.
    usage = window.chat.snapshot.usage
    during = usage.by_kind["tools"]
    assert during == before and tools_value.text() == f"{during:,}"
    assert usage.by_kind["tool_outputs"] > 0
    assert window.inspector.legend_values["tool_outputs"].text() == f"{usage.by_kind['tool_outputs']:,}"
    assert [kind for kind, _ in shown_rows(window)] == ["user", "tool_call", "tool_result", "tool_call"]
    qtbot.mouseClick(window.consent_card.allow_once, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    assert window.chat.snapshot.usage.by_kind["tools"] == during and tools_value.text() == f"{during:,}"
    live = shown_rows(window)
    assert [kind for kind, _ in live] == ["user", "tool_call", "tool_result", "tool_call", "tool_result", "assistant"]
    assert "hi" in live[4][1]
    assert [outcome_mark(row.message) for row in window.conversation.rows_model.rows()[2::2][:2]] == ["✓", "✓"]

    other = store.create_chat("another chat", settings={"context_window": 8192})
    window.refresh_chats()
    window.open_chat(other)
    qtbot.waitUntil(lambda: idle(window) and window.chat.session.chat_id == other, timeout=WAIT_MS)
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window) and window.chat.session.chat_id == chat_id, timeout=WAIT_MS)
    assert shown_rows(window) == live
    # The next prompt sends the tools again: the reopened chat counts them as the live one did.
    assert window.chat.snapshot.usage.by_kind["tools"] == during and tools_value.text() == f"{during:,}"


def test_a_missing_workspace_is_said_and_the_message_answered_without_tools(qtbot, make_window, store, server,
                                                                          tmp_path):
    server.steps = [stream(answer("Hello without tools."))]
    window, _chat_id = tool_window(qtbot, make_window, store, server, tmp_path / "gone")
    window.submit("Hello?")
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    assert str(tmp_path / "gone") in window.composer.hint.toolTip() + window.composer.hint.text()
    assert shown_rows(window)[-1] == ("assistant", "Hello without tools.")
    assert "tools" not in server.requests[0][2]


def test_tools_too_large_for_the_window_are_said_and_the_message_answered_without_them(qtbot, make_window, store,
                                                                                      server, workspace):
    server.steps = [stream(answer("Hello without tools."))]
    window = make_window(provider=OpenAICompatProvider(server.base_url, "test-model", "sk-test"))
    open_new_chat(qtbot, window, store, context_window=600, reserve_output=64, workspace=str(workspace))
    window.submit("Hello?")
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    said = window.composer.hint.toolTip() + window.composer.hint.text()
    assert "Answered without tools" in said and "the definitions of 6 tools take" in said
    assert shown_rows(window)[-1] == ("assistant", "Hello without tools.")
    assert "tools" not in server.requests[0][2]


def test_the_step_limit_is_said(qtbot, make_window, store, server, workspace):
    server.steps = [stream(calls((f"c{n}", "read_file", {"path": "main.py"}))) for n in range(2)]
    window, chat_id = tool_window(qtbot, make_window, store, server, workspace, tool_steps=1)
    window.submit("Read it twice.")
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    assert "the step limit was reached: 1 tool calls" in window.statusBar().currentMessage()
    assert stored_calls_answered(store, chat_id)


@pytest.mark.model  # the embedded model, whose chats with tools are told it is not offered them, or rarely calls them
@pytest.mark.slow
@pytest.mark.parametrize(("offer", "hint"), [("auto", TOOLS_NOT_OFFERED), ("yes", LOCAL_MODEL_TOOLS)])
def test_the_built_in_model_with_tools_says_whether_it_is_offered_them(qtbot, make_window, store, local_provider,
                                                                       workspace, offer, hint):
    window = make_window(provider=local_provider)
    open_new_chat(qtbot, window, store, workspace=str(workspace), reserve_output=32, offer_tools=offer)
    window.submit("Say hello.")
    qtbot.waitUntil(lambda: window.composer.hint.text() == hint, timeout=WAIT_MS)
    window.composer.stop_requested.emit()
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    assert window.composer.hint.text() == hint  # it stays, with the answer stopped
    assert bool(window.chat.session.tools) == (offer == "yes")


def test_a_reply_regenerated_in_a_chat_with_tools_can_call_them(qtbot, make_window, store, server, workspace):
    server.steps = [stream(answer("From memory: it prints something.")),
                    stream(calls(("c1", "read_file", {"path": "main.py"}))),
                    stream(answer("It prints the working folder."))]
    window, chat_id = tool_window(qtbot, make_window, store, server, workspace)
    window.submit("What does main.py print?")
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    window.sending.regenerate()
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    # The reply written again in its place called a tool, which ran and was answered: no call is left dangling.
    assert [kind for kind, _ in shown_rows(window)] == ["user", "tool_call", "tool_result", "assistant"]
    assert shown_rows(window)[-1][1] == "It prints the working folder."
    assert stored_calls_answered(store, chat_id)
    regenerated = window.conversation.rows_model.rows()[1].message
    assert window.chat.snapshot.versions[regenerated.id].texts[0] == "From memory: it prints something."


def test_use_answered_without_the_call_and_cut_at_the_limit_says_both(qtbot, make_window, store, server, workspace):
    """llama.cpp's server let SmolLM2 write text instead of the call /use asked for, up to the reply's limit: the
    window said only that the reply reached its limit, so the missing call went unsaid."""
    cut = "data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
    server.steps = [stream([delta("<tool_response> <error-detail>"), cut, "data: [DONE]"])]
    window, _chat_id = tool_window(qtbot, make_window, store, server, workspace, reserve_output=64)
    window.submit("/use read_file What does main.py print?")
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    assert window.statusBar().currentMessage() == (
        "Tool calls ended: the model answered without calling read_file, which /use asked for. The reply reached "
        "its limit of 64 tokens and stopped there; Continue on it goes on (the chat's setting 'Tokens reserved for "
        "the reply' sets the limit)")


def test_use_sends_the_message_with_the_tool_it_must_call(qtbot, make_window, store, server, workspace):
    server.steps = [stream(calls(("c1", "read_file", {"path": "main.py"}))), stream(answer("It prints the folder."))]
    window, _chat_id = tool_window(qtbot, make_window, store, server, workspace)
    window.submit("/use read_file What does main.py print?")
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None and len(server.requests) == 2,
                    timeout=WAIT_MS)
    first = server.requests[0][2]
    assert first["tool_choice"] == "required" and [t["function"]["name"] for t in first["tools"]] == ["read_file"]
    assert shown_rows(window)[0] == ("user", "What does main.py print?")
    assert [kind for kind, _ in shown_rows(window)] == ["user", "tool_call", "tool_result", "assistant"]
    window.submit("/use")  # no tool, no message: said, nothing sent
    assert window.composer.hint.text().startswith("/use needs TOOL MESSAGE") and len(server.requests) == 2
    window.submit("/use read_file")
    assert window.composer.hint.text().startswith("/use needs a tool and a message") and len(server.requests) == 2


def test_use_of_a_tool_the_chat_has_not_is_refused_before_anything_is_saved(qtbot, make_window, store, server,
                                                                            workspace):
    # It stored the message, left it unanswered, emptied the box and said why only in the status bar.
    window, chat_id = tool_window(qtbot, make_window, store, server, workspace)
    qtbot.waitUntil(lambda: bool(window.chat.session.tools), timeout=WAIT_MS)  # offered as the chat opened
    window.composer.edit.setFocus()
    qtbot.keyClicks(window.composer.edit, "/use grep where is deploy mentioned?")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    hint = window.composer.hint.text()
    assert hint.startswith("There is no tool called 'grep' here; the tools are: ") and "search_files" in hint
    assert window.composer.text() == "/use grep where is deploy mentioned?"  # to be mended, not typed again
    assert store.load_messages(chat_id) == [] and shown_rows(window) == [] and server.requests == []


def test_allow_in_this_chat_lasts_past_the_window_until_taken_back_in_settings(qtbot, make_window, store, server,
                                                                              workspace):
    def make(name: str):
        return stream(calls((name, "create_file", {"path": f"{name}.txt", "content": f"{name}\n"})))

    server.steps = [make("a"), stream(answer("Made a.")), make("b"), stream(answer("Made b.")), make("c"),
                    stream(answer("Not made."))]
    window, chat_id = tool_window(qtbot, make_window, store, server, workspace)
    window.submit("Make a.")
    qtbot.waitUntil(window.consent_card.isVisible, timeout=WAIT_MS)
    qtbot.mouseClick(window.consent_card.allow_in_chat, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    assert (workspace / "a.txt").exists()
    window.close()
    window.chat.finish_background_work()

    # Precis started again on the same data folder: the chat does not ask again.
    again = make_window(provider=OpenAICompatProvider(server.base_url, "test-model", "sk-test"))
    again.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(again) and again.chat.session.chat_id == chat_id, timeout=WAIT_MS)
    asked = []
    ask = again.consent_card.ask
    again.consent_card.ask = lambda request: (asked.append(request.call.name), ask(request))
    again.submit("Make b.")
    qtbot.waitUntil(lambda: idle(again) and again.chat.reply_job is None and len(server.requests) == 4,
                    timeout=WAIT_MS)
    assert asked == [] and (workspace / "b.txt").exists()

    # Settings → This chat lists it; Ask again takes it back at OK.
    dialog = open_settings(qtbot, again)
    assert dialog.allowed_tools.names() == ["create_file"] and dialog.allowed_tools.none.isHidden()
    qtbot.mouseClick(dialog.allowed_tools.findChild(QPushButton, "ask-again-create_file"), Qt.MouseButton.LeftButton)
    assert dialog.allowed_tools.names() == [] and not dialog.allowed_tools.none.isHidden()
    qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: store.get_chat(chat_id).settings.allowed_tools == [] and idle(again)
                    and again.chat.session.chat_id == chat_id, timeout=WAIT_MS)
    again.submit("Make c.")
    qtbot.waitUntil(again.consent_card.isVisible, timeout=WAIT_MS)
    assert asked == ["create_file"] and not (workspace / "c.txt").exists()
    qtbot.mouseClick(again.consent_card.deny, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(again) and again.chat.reply_job is None, timeout=WAIT_MS)
    assert not (workspace / "c.txt").exists()


def test_run_and_grep_work_in_the_chats_workspace_folder(qtbot, make_window, store, server, workspace):
    """/run and /grep in a chat with a workspace folder work there, as its model's tools do, not in the folder
    Precis was started from."""
    window, chat_id = tool_window(qtbot, make_window, store, server, workspace)
    window.submit("/run pwd")
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.messages) == 2, timeout=WAIT_MS)
    assert store.load_messages(chat_id)[1].content == f"{workspace}\n[exit code: 0]"
    window.submit("/grep getcwd")
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.messages) == 4, timeout=WAIT_MS)
    assert store.load_messages(chat_id)[3].content == "main.py:2: print(os.getcwd())\n1 match in 1 file"
    assert server.requests == []  # neither went to the model


def test_a_call_that_cannot_run_shows_no_card_and_the_model_reads_its_error(qtbot, make_window, store, server,
                                                                            workspace, tmp_path):
    outside = tmp_path / "elsewhere.py"
    server.steps = [stream(calls(("c1", "create_file", {"path": str(outside), "content": "x"}))),
                    stream(answer("That folder is not mine."))]
    window, chat_id = tool_window(qtbot, make_window, store, server, workspace)
    asked = []
    ask = window.consent_card.ask
    window.consent_card.ask = lambda request: (asked.append(request.call.name), ask(request))
    window.submit("Write elsewhere.py.")
    qtbot.waitUntil(lambda: idle(window) and window.chat.reply_job is None, timeout=WAIT_MS)
    assert asked == [] and not window.consent_card.isVisible()
    kind, result = shown_rows(window)[2]
    assert kind == "tool_result" and f"{outside} is outside the workspace folder" in result
    assert outcome_mark(window.conversation.rows_model.rows()[2].message) == "✗"
    assert server.requests[1][2]["messages"][-1]["content"] == result and not outside.exists()
    assert stored_calls_answered(store, chat_id)
