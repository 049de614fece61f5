"""The window and `precis` commands in other processes on one data folder: the window picks up their changes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from precis.core.model.messages import Message
from PySide6.QtCore import Qt

from tests.fakes import ScriptedProvider
from tests.gui.test_window import idle
from tests.providers.scripted_server import FINISH, Step, delta, reply, stream
from tests.timing import WAIT_MS

ROOT = Path(__file__).resolve().parents[2]


def run_in_another_process(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_a_chat_imported_by_the_command_line_appears_in_the_open_window(qtbot, make_window, store, isolated_home,
                                                                         tmp_path):
    store.import_chat("already here", [Message(role="user", content="hello")])
    window = make_window()
    assert [c.title for c in window.chat_list.chats] == ["already here"]
    source = tmp_path / "kiwis.jsonl"
    source.write_text("".join(f'{{"role": "user", "content": "note {i} about kiwis"}}\n' for i in range(4)))

    imported = run_in_another_process("-m", "precis.core.cli.main", "--data-dir", str(isolated_home),
                                      "import", str(source), "--title", "from the terminal")

    assert imported.returncode == 0, imported.stderr
    chat_id = imported.stdout.strip()
    qtbot.waitUntil(lambda: chat_id in [c.id for c in window.chat_list.chats], timeout=WAIT_MS)
    assert next(c for c in window.chat_list.chats if c.id == chat_id).message_count == 4
    assert window.chat_list.list.count() == 2  # shown, not only listed


@pytest.mark.slow
def test_messages_another_process_adds_to_the_open_chat_are_shown(qtbot, make_window, store, isolated_home):
    chat_id = store.import_chat("shared", [Message(role="user", content="first question")])
    window = make_window()
    assert window.chat.is_open(chat_id)

    added = run_in_another_process("-c", textwrap.dedent(f"""
        from precis.core.model.messages import Message
        from precis.core.storage.store import open_store
        with open_store({str(isolated_home)!r}) as store:
            store.add_messages({chat_id!r}, [Message(role="assistant", content="answer from the terminal")])
    """))

    assert added.returncode == 0, added.stderr
    qtbot.waitUntil(lambda: window.chat.snapshot is not None
                    and [m.content for m in window.chat.snapshot.messages][-1:] == ["answer from the terminal"],
                    timeout=WAIT_MS)
    # The engine that builds the next prompt knows it too, not only the rows.
    assert window.chat.session.engine.messages[-1].content == "answer from the terminal"


@pytest.mark.slow
def test_a_summary_the_command_line_made_meanwhile_is_not_made_twice_by_the_window(qtbot, make_window, store,
                                                                                   isolated_home):
    """`precis summarize` summarizes the open chat before the window has looked (its check for changes is off
    here, as if the command finished between two of them); Summarize now in the window is then refused, said so,
    and the window shows the chat as stored: one summary, not two of the same messages."""
    from precis.core.settings import SUMMARIZATION_KEY

    from tests.gui.test_window import dialogue, open_imported_chat

    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    window = make_window()
    chat_id = open_imported_chat(qtbot, window, store, dialogue(30, "We compared the kickboxing gyms, point"))
    window.chat._watch.stop()

    summarized = run_in_another_process("-m", "precis.core.cli.main", "--data-dir", str(isolated_home),
                                        "summarize", chat_id)
    assert summarized.returncode == 0, summarized.stderr
    theirs = [r.id for r in store.load_records(chat_id)]
    assert len(theirs) == 1

    window.summarize_now()
    qtbot.waitUntil(lambda: idle(window) and [r.id for r in window.chat.snapshot.chain] == theirs, timeout=WAIT_MS)
    assert "another Precis" in window.composer.hint.text()
    assert [r.id for r in store.load_records(chat_id)] == theirs
    assert [r.id for r in window.chat.session.engine.chain()] == theirs  # the next prompt holds it once


def held_stream(first: str, rest: str, release: threading.Event) -> Step:
    """The scripted server's reply: its first piece, then the rest once `release` is set (a reply still being written
    while the test looks)."""
    def step(handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(f"{delta(first)}\n\n".encode())
        handler.wfile.flush()
        release.wait(WAIT_MS / 1000)
        handler.wfile.write(f"{delta(rest)}\n\n{FINISH}\n\n".encode())
    return step


@pytest.mark.slow
def test_a_reply_the_command_line_finishes_in_the_open_chat_is_shown_whole(qtbot, make_window, store, isolated_home,
                                                                           server):
    """`precis chat --chat ID MSG` on the open chat: the window picks up its question and the reply it starts, and
    then the reply as it ended. It showed the reply empty for good (its last save left the chat's row alone), and
    the window's next prompt lacked it."""
    chat_id = store.import_chat("shared", [Message(role="user", content="first question"),
                                           Message(role="assistant", content="first answer")])
    window = make_window(ScriptedProvider())
    release = threading.Event()
    server.steps = [held_stream("the terminal's answer", ", written in two parts", release)]

    terminal = subprocess.Popen(
        [sys.executable, "-m", "precis.core.cli.main", "--data-dir", str(isolated_home), "chat", "--provider", "openai",
         "--base-url", server.base_url, "--model", "m", "--context-tokens", "4096", "--chat", chat_id,
         "a question from the terminal"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        qtbot.waitUntil(lambda: [m.content for m in window.chat.snapshot.messages][2:] == [
            "a question from the terminal", ""], timeout=WAIT_MS)  # its reply, begun
        release.set()
        out, err = terminal.communicate(timeout=WAIT_MS / 1000)
    finally:
        release.set()
        if terminal.poll() is None:
            terminal.kill()
    assert terminal.returncode == 0, err
    assert out.strip() == "the terminal's answer, written in two parts"

    qtbot.waitUntil(lambda: window.chat.snapshot.messages[-1].content == out.strip(), timeout=WAIT_MS)
    assert not window.chat.snapshot.messages[-1].incomplete
    assert window.chat.session.engine.messages[-1].content == out.strip()  # and the next prompt holds it
    last_row = window.conversation.rows_model.rowCount() - 1
    assert out.strip() in window.conversation.rows_model.index(last_row, 0).data()


@pytest.mark.slow
def test_new_chat_in_the_window_leaves_a_terminal_chat_that_is_still_empty_alone(qtbot, make_window, store,
                                                                                 isolated_home, server):
    """A terminal chat makes its chat before its first line. The window, with no chat of its own, opened it; New
    chat then removed it as an empty chat left behind, and the terminal's first line failed ('no chat with id')."""
    window = make_window(ScriptedProvider())
    # Its settings as made (no --context-tokens): the server's /models gives the window.
    server.steps = [reply(200, '{"data": [{"id": "m"}]}'), stream([delta("an answer in the terminal"), FINISH])]
    terminal = subprocess.Popen(
        [sys.executable, "-m", "precis.core.cli.main", "--data-dir", str(isolated_home), "chat", "--provider", "openai",
         "--base-url", server.base_url, "--model", "m"],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        qtbot.waitUntil(lambda: window.chat.session is not None and window.chat.snapshot is not None, timeout=WAIT_MS)
        theirs = window.chat.session.chat_id
        window.new_chat()
        qtbot.waitUntil(lambda: not window.chat.is_open(theirs) and idle(window), timeout=WAIT_MS)
        out, err = terminal.communicate("a question typed in the terminal\n/quit\n", timeout=WAIT_MS / 1000)
    finally:
        if terminal.poll() is None:
            terminal.kill()
    assert terminal.returncode == 0, err
    assert "an answer in the terminal" in out
    assert [m.content for m in store.load_messages(theirs)] == ["a question typed in the terminal",
                                                                "an answer in the terminal"]
    qtbot.waitUntil(lambda: theirs in [c.id for c in window.chat_list.chats], timeout=WAIT_MS)
    assert store.get_chat(theirs).title == "a question typed in the terminal"


def test_the_open_chat_deleted_in_another_window_is_said_so_and_can_be_restored(qtbot, make_window, store,
                                                                                isolated_home):
    """Two windows on one data folder, each with its own store (as two processes have). The window whose open chat
    the other deleted kept showing it, titled "Precis", said nothing, and a message sent in it failed with 'no chat
    with id …'."""
    from precis.core.storage.store import open_store

    from tests.gui.test_chat_store_writes import listed

    shared = store.import_chat("Trip to Lisbon", [Message(role="user", content="Which hotel did we book?")])
    store.import_chat("Garden", [Message(role="user", content="Tomatoes in shade?")])
    other_store = open_store(isolated_home)
    try:
        deleting = make_window(ScriptedProvider())
        deleting.open_chat(shared)
        other = make_window(ScriptedProvider(), on_store=other_store)
        other.open_chat(shared)
        qtbot.waitUntil(lambda: idle(deleting) and idle(other) and deleting.chat.is_open(shared)
                        and other.chat.is_open(shared), timeout=WAIT_MS)
        qtbot.keyClicks(other.composer.edit, "And the museum tickets?")

        deleting.switcher.delete_chat(shared)
        qtbot.waitUntil(lambda: other.status.undo.isVisible() and shared not in listed(other), timeout=WAIT_MS)
        assert other.statusBar().currentMessage().startswith("This chat was deleted in another Precis window")
        assert other.status.undo.text() == "Restore chat"
        assert other.chat.is_open(shared) and other.composer.text() == "And the museum tickets?"
        other.grab().save("/tmp/together-shots/deleted_in_another_window.png")

        qtbot.keyClick(other.composer.edit, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: idle(other) and other.composer.hint.text().startswith("Not sent"), timeout=WAIT_MS)
        hint = other.composer.hint.text()
        assert hint.startswith("Not sent: the chat 'Trip to Lisbon' (") and hint.endswith(
            ") was deleted; your text is back in the box.")
        assert other.composer.text() == "And the museum tickets?"

        other.status.undo.click()
        qtbot.waitUntil(lambda: shared in listed(other) and shared in listed(deleting), timeout=WAIT_MS)
        assert [m.content for m in store.load_messages(shared)] == ["Which hotel did we book?"]
    finally:
        if "other" in locals():  # its store closes here, after its window: make_window's closes after the test
            other.close()
            other.chat.finish_background_work()
        other_store.close()


@pytest.mark.slow
def test_the_window_and_the_command_line_writing_one_chat_at_once_lose_and_repeat_nothing(qtbot, make_window, store,
                                                                                          isolated_home, server):
    """The window's reply is still being written when `precis chat --chat ID MSG` adds a turn to the same chat: each
    message is stored once, in the order saved, and the window ends up showing (and sending next) all of them."""
    from tests.gui.held_replies import HeldReplies

    chat_id = store.import_chat("shared", [Message(role="user", content="first question"),
                                           Message(role="assistant", content="first answer")])
    held = HeldReplies(ScriptedProvider(replies=["the window's answer"]))
    window = make_window(held)
    window.sending.submit("a question from the window")
    qtbot.waitUntil(lambda: window.chat.reply_job is not None and len(store.load_messages(chat_id)) == 4,
                    timeout=WAIT_MS)  # its reply begun, and held

    server.steps = [stream([delta("the terminal's answer"), FINISH])]
    terminal = subprocess.Popen(
        [sys.executable, "-m", "precis.core.cli.main", "--data-dir", str(isolated_home), "chat", "--provider", "openai",
         "--base-url", server.base_url, "--model", "m", "--context-tokens", "4096", "--chat", chat_id,
         "a question from the terminal"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    qtbot.waitUntil(lambda: terminal.poll() is not None, timeout=WAIT_MS)
    assert terminal.returncode == 0, terminal.stderr.read()
    held.release.set()

    stored = ["first question", "first answer", "a question from the window", "the window's answer",
              "a question from the terminal", "the terminal's answer"]
    qtbot.waitUntil(lambda: idle(window) and [m.content for m in window.chat.snapshot.messages] == stored,
                    timeout=WAIT_MS)
    assert [(m.content, m.incomplete) for m in store.load_messages(chat_id)] == [(text, False) for text in stored]
    assert [m.content for m in window.chat.session.engine.messages] == stored
    assert window.conversation.rows_model.rowCount() == len(stored)


@pytest.mark.slow
def test_a_summary_made_and_undone_by_the_command_line_shows_in_the_open_window_and_keeps_the_draft(
        qtbot, make_window, store, isolated_home):
    """`precis summarize CHAT`, then `precis undo-summary CHAT`, on the chat open in the window: the conversation and
    the inspector follow each without a restart, and what the user is typing stays."""
    from precis.core.settings import SUMMARIZATION_KEY

    from tests.gui.test_window import dialogue, open_imported_chat

    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    window = make_window()
    chat_id = open_imported_chat(qtbot, window, store, dialogue(30, "We compared the kickboxing gyms, point"))
    qtbot.keyClicks(window.composer.edit, "Which gym had the longest hours?")
    rows = window.conversation.rows_model.rowCount()

    summarized = run_in_another_process("-m", "precis.core.cli.main", "--data-dir", str(isolated_home),
                                        "summarize", chat_id)
    assert summarized.returncode == 0, summarized.stderr
    qtbot.waitUntil(lambda: window.inspector.chain_section.header.text() == "Summary chain · 1 summary", timeout=WAIT_MS)
    assert window.conversation.rows_model.rowCount() < rows  # the summarized messages folded into its row
    assert [r.id for r in window.chat.session.engine.chain()] == [r.id for r in store.load_records(chat_id)]
    assert window.composer.text() == "Which gym had the longest hours?"
    window.grab().save("/tmp/together-shots/summarized_by_the_command_line.png")

    undone = run_in_another_process("-m", "precis.core.cli.main", "--data-dir", str(isolated_home),
                                    "undo-summary", chat_id)
    assert undone.returncode == 0, undone.stderr
    qtbot.waitUntil(lambda: window.inspector.chain_section.header.text() == "Summary chain · none yet", timeout=WAIT_MS)
    assert window.conversation.rows_model.rowCount() == rows and window.chat.session.engine.chain() == []
    assert window.composer.text() == "Which gym had the longest hours?"
    assert store.get_draft(chat_id) == "Which gym had the longest hours?"
