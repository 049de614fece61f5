"""The open chat follows what another Precis changes in it on the same data folder: a pin made in `precis chat`, the
chat's settings changed in another window; and the window's reply still being written is not an empty turn in the
terminal's prompt."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import contextmanager

import pytest
from precis.core.context.prompt_parts import PRIMING
from precis.core.model.messages import Message
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.settings import SUMMARIZATION_KEY
from PySide6.QtWidgets import QDialogButtonBox

from tests.gui.conftest import open_settings
from tests.gui.held_replies import HeldReplies
from tests.gui.test_shared_folder_window import ROOT, run_in_another_process
from tests.gui.test_window import dialogue, idle, open_imported_chat
from tests.providers.scripted_server import FINISH, delta, stream
from tests.timing import WAIT_MS


def terminal_chat(home, server, chat_id: str, *args: str, typed: str | None = None) -> subprocess.CompletedProcess:
    """`precis chat --chat CHAT_ID` in another process, on the scripted server (`typed`: its input, line by line)."""
    return subprocess.run([sys.executable, "-m", "precis.core.cli.main", "--data-dir", str(home), "chat",
                           "--provider", "openai", "--base-url", server.base_url, "--model", "m",
                           "--context-tokens", "4096", "--chat", chat_id, *args],
                          cwd=ROOT, input=typed, capture_output=True, text=True, timeout=WAIT_MS / 1000)


@pytest.mark.slow
def test_a_message_pinned_in_the_terminal_is_kept_out_of_the_open_windows_summary(qtbot, make_window, store,
                                                                                  isolated_home, server):
    """`/pin` in `precis chat --chat ID` on the chat open in the window: the window shows it pinned and its Summarize
    now leaves it out of the summary. It summarized it, as if unpinned, until the chat was opened again."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    window = make_window()
    chat_id = open_imported_chat(qtbot, window, store, dialogue(30, "We compared the kickboxing gyms, point"))
    first = store.load_messages(chat_id)[0]

    pinned = terminal_chat(isolated_home, server, chat_id, typed=f"/pin {first.id}\n/quit\n")

    assert pinned.returncode == 0, pinned.stderr
    assert "Pinned" in pinned.stdout and store.load_messages(chat_id)[0].pinned
    qtbot.waitUntil(lambda: window.chat.snapshot.messages[0].pinned, timeout=WAIT_MS)
    window.summarize_now()
    qtbot.waitUntil(lambda: idle(window) and bool(window.chat.snapshot.chain), timeout=WAIT_MS)
    hidden = window.chat.snapshot.hidden
    assert first.id not in hidden and window.chat.snapshot.messages[1].id in hidden
    assert first.id in {m.id for m in window.chat.session.engine.assemble().messages}  # still sent


@contextmanager
def two_windows_on(qtbot, make_window, store, home):
    """(window, other): two windows on one data folder, each with its own store, both with the chat "Sailing" open.
    The other's store closes here, after its window (make_window's closes after the test)."""
    from precis.core.storage.store import open_store

    chat_id = store.import_chat("Sailing", [Message(role="user", content="Where do we moor tonight?")])
    other_store = open_store(home)
    try:
        window = make_window()
        other = make_window(on_store=other_store)
        qtbot.waitUntil(lambda: idle(window) and idle(other) and window.chat.is_open(chat_id)
                        and other.chat.is_open(chat_id), timeout=WAIT_MS)
        try:
            yield window, other
        finally:
            other.close()
            other.chat.finish_background_work()
    finally:
        other_store.close()


def test_the_chats_settings_changed_in_another_window_are_used_by_the_open_chat(qtbot, make_window, store,
                                                                                isolated_home):
    """Settings → This chat in one window gives the chat a system prompt; the other, with the chat open, sends it
    from its next reply on (it did only once the chat was reopened)."""
    with two_windows_on(qtbot, make_window, store, isolated_home) as (window, other):
        chat_id = window.chat.session.chat_id
        dialog = open_settings(qtbot, other)
        dialog.chat_fields.editors["system_prompt"].setPlainText("Answer as a sailor.")
        assert dialog.validate()
        dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
        qtbot.waitUntil(lambda: store.get_chat(chat_id).settings.system_prompt == "Answer as a sailor.",
                        timeout=WAIT_MS)

        qtbot.waitUntil(lambda: window.chat.session.settings.system_prompt == "Answer as a sailor.", timeout=WAIT_MS)
        qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
        prompt = window.chat.session.engine.assemble().messages
        assert (prompt[0].role, prompt[0].content) == ("system", "Answer as a sailor.")


def test_the_summarization_settings_changed_in_another_window_are_used_by_the_open_chat(qtbot, make_window, store,
                                                                                        isolated_home):
    """Settings → Summarization saved in one window: the chat open in the other summarizes by them from then on (it
    did only once the chat was reopened, or Precis restarted)."""
    with two_windows_on(qtbot, make_window, store, isolated_home) as (window, other):
        assert window.chat.session.engine.policy.trigger_ratio == 0.8
        dialog = open_settings(qtbot, other)
        dialog.policy_fields.editors["trigger_ratio"].setText("85")
        assert dialog.validate()
        dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()

        qtbot.waitUntil(lambda: window.chat.session.engine.policy.trigger_ratio == 0.85, timeout=WAIT_MS)
        qtbot.waitUntil(lambda: window.inspector.gauge.policy.trigger_ratio == 0.85, timeout=WAIT_MS)


def empty_turns(messages: list[dict]) -> list[dict]:
    return [m for m in messages if m["role"] == "assistant" and not (m.get("content") or "").strip()
            and not m.get("tool_calls")]


@pytest.mark.slow
def test_the_windows_reply_still_being_written_is_no_empty_turn_in_the_terminals_prompt(qtbot, make_window, store,
                                                                                        isolated_home, server):
    """The window stores its reply empty as it begins; `precis prompt` and `precis chat --chat ID MSG` meanwhile
    showed and sent it as an assistant turn with no text."""
    chat_id = store.import_chat("shared", [Message(role="user", content="first question"),
                                           Message(role="assistant", content="first answer")])
    held = HeldReplies(OpenAICompatProvider(server.base_url, "m", "sk-test", window=4096))
    window = make_window(held)
    server.steps = [stream([delta("the terminal's answer"), FINISH]), stream([delta("the window's answer"), FINISH])]
    window.sending.submit("a question from the window")
    qtbot.waitUntil(lambda: window.chat.reply_job is not None and len(store.load_messages(chat_id)) == 4,
                    timeout=WAIT_MS)  # its reply begun (stored empty), and held
    assert store.load_messages(chat_id)[-1].content == ""

    shown = run_in_another_process("-m", "precis.core.cli.main", "--data-dir", str(isolated_home), "prompt", chat_id,
                                   "--json")
    assert shown.returncode == 0, shown.stderr
    parts = json.loads(shown.stdout)["parts"]
    assert [p["text"] for p in parts if p["role"] in ("user", "assistant") and p["kind"] != PRIMING] == [
        "first question", "first answer", "a question from the window"]

    asked = terminal_chat(isolated_home, server, chat_id, "a question from the terminal")
    assert asked.returncode == 0, asked.stderr
    sent = server.requests[0][2]["messages"]
    assert empty_turns(sent) == []
    assert [m["content"] for m in sent if m["role"] in ("user", "assistant")] == [
        "first question", "first answer", "a question from the window", "a question from the terminal"]

    held.release.set()
    qtbot.waitUntil(lambda: idle(window) and window.chat.snapshot.messages[3].content == "the window's answer",
                    timeout=WAIT_MS)
    assert empty_turns(server.requests[1][2]["messages"]) == []
