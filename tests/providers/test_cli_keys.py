"""What a user types at `precis chat` on a terminal: Ctrl-C while a reply streams, at the question about a tool call
and at the prompt, a long pasted line, a pasted block of lines, Ctrl-D. `precis` runs in its own process on a
pseudo-terminal (tests/pseudo_terminal.py); the model is the scripted server on loopback, a stand-in: a real model
cannot be held mid-reply or made to call a tool on demand."""

from __future__ import annotations

import time

import pytest
from precis.core.cli.main import main
from precis.core.storage.store import open_store

from tests.providers.scripted_server import delta, stream
from tests.providers.test_tool_loop import answer, calls
from tests.pseudo_terminal import CTRL_C, CTRL_D, PseudoTerminal

PROMPT = r"you> "


@pytest.fixture
def model_args(server, monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return ["--provider", "openai", "--base-url", server.base_url, "--model", "m", "--data-dir",
            str(tmp_path / "data"), "--context-tokens", "4096"]


def held(text: str) -> list:
    """A reply that sends `text`, then holds the stream open (a model still writing) until the client goes."""
    return [stream([delta(text)], stall=30)]


def test_ctrl_c_stops_a_streaming_reply_and_the_chat_goes_on(server, model_args, tmp_path):
    """Ctrl-C mid-reply ended `precis chat` with a traceback (KeyError: 'value'): before Python 3.13 a Thread.join
    interrupted by Ctrl-C reports the thread ended while it still runs. The reply stops, what came is kept, and the
    chat takes the next message."""
    server.steps = [*held("Once upon a time"), stream(answer("Still here."))]
    with PseudoTerminal("chat", *model_args) as terminal:
        terminal.expect(PROMPT)
        terminal.line("Tell me a long story.")
        terminal.expect("Once upon a time")
        terminal.type(CTRL_C)
        terminal.expect(r"\[reply cancelled; the part shown is kept\]")
        terminal.expect(PROMPT)
        terminal.line("Are you there?")
        terminal.expect("Still here.")
        terminal.expect(PROMPT)
        terminal.line("/quit")
        assert terminal.wait() == 0, terminal.seen
        assert b"Traceback" not in terminal.seen
    with open_store(tmp_path / "data") as store:
        [chat] = store.list_chats()
        stored = [(m.role, m.content, m.incomplete) for m in store.load_messages(chat.id)]
    assert stored == [("user", "Tell me a long story.", False), ("assistant", "Once upon a time", True),
                      ("user", "Are you there?", False), ("assistant", "Still here.", False)]


def test_ctrl_c_stops_a_one_message_reply(server, model_args):
    server.steps = held("The sea is")
    with PseudoTerminal("chat", *model_args, "Write a poem about the sea.") as terminal:
        terminal.expect("The sea is")
        terminal.type(CTRL_C)
        assert terminal.wait() == 130, terminal.seen
        assert b"[reply cancelled; the part shown is kept]" in terminal.seen and b"Traceback" not in terminal.seen


def test_ctrl_c_at_the_question_about_a_tool_call_denies_it_at_once(server, model_args, workspace, tmp_path):
    """The question waited for Enter after Ctrl-C: the terminal sat there with the answer stopped behind it."""
    server.steps = [stream(calls(("c1", "execute_bash", {"command": "touch ran"})))]
    with PseudoTerminal("chat", *model_args, "--workspace", str(workspace)) as terminal:
        terminal.expect(PROMPT)
        terminal.line("Run it.")
        terminal.expect(r"\$ touch ran")
        terminal.expect(r"\[y/a/N\] ")
        terminal.type(CTRL_C)
        terminal.expect(r"\[reply cancelled; the part shown is kept\]", seconds=10)
        terminal.expect(PROMPT)
        terminal.line("/quit")
        assert terminal.wait() == 0, terminal.seen
    # The step denied on a line of its own, not after the question's echoed ^C ('[y/a/N] ^C[❌ execute_bash…').
    assert "\n[❌ execute_bash: Command: touch ran" in terminal.seen.decode().replace("\r", ""), terminal.seen
    assert not (workspace / "ran").exists()
    with open_store(tmp_path / "data") as store:
        [chat] = store.list_chats()
        [call, result] = [m for m in store.load_messages(chat.id) if m.role in ("assistant", "tool")]
    assert call.tool_calls[0].name == "execute_bash" and result.content.startswith("Error: not run")


def test_a_line_pasted_past_the_terminals_line_limit_is_sent_whole(server, model_args, tmp_path):
    """A terminal's line is 4095 bytes at most: a longer paste was sent and stored cut there, without a word."""
    pasted = " ".join(f"Grüße {n}: the parcel leaves at noon from platform {n}." for n in range(150))
    assert len(pasted.encode()) > 6000
    server.steps = [stream(answer("Noted."))]
    with PseudoTerminal("chat", *model_args) as terminal:
        terminal.expect(PROMPT)
        terminal.line(pasted)
        terminal.expect("Noted.")
        terminal.expect(PROMPT)
        terminal.type(CTRL_D)  # end of input leaves, as /quit does
        assert terminal.wait() == 0, terminal.seen
    assert server.requests[0][2]["messages"][-1]["content"] == pasted
    with open_store(tmp_path / "data") as store:
        [chat] = store.list_chats()
        assert store.load_messages(chat.id)[0].content == pasted


def paste(terminal: PseudoTerminal, text: str) -> None:
    """Text pasted as a terminal emulator pastes it: marked as a paste (bracketed) when the program asked for that
    (ESC [?2004h), else as if typed, each newline an Enter."""
    typed = text.replace("\n", "\r")
    terminal.type(f"\x1b[200~{typed}\x1b[201~" if b"\x1b[?2004h" in terminal.seen else typed)


def test_a_pasted_block_of_lines_is_one_message(server, model_args, tmp_path):
    """A paste of several lines (code, a paragraph) was sent a line a message, each answered on its own: the model
    never saw the whole of it (Python turns readline's bracketed paste off). It is one message, sent by Enter."""
    block = "Summarize this:\ndef double(x):\n    return x * 2\n\nprint(double(3))"
    server.steps = [stream(answer("It doubles 3."))]
    with PseudoTerminal("chat", *model_args) as terminal:
        terminal.expect(PROMPT)
        paste(terminal, block)
        terminal.type("\r")
        terminal.expect("It doubles 3.")
        terminal.expect(PROMPT)
        terminal.line("/quit")
        assert terminal.wait() == 0, terminal.seen
    assert [request[2]["messages"][-1]["content"] for request in server.requests] == [block]
    with open_store(tmp_path / "data") as store:
        [chat] = store.list_chats()
        assert [(m.role, m.content) for m in store.load_messages(chat.id)] == [("user", block),
                                                                               ("assistant", "It doubles 3.")]


def at_rest(terminal: PseudoTerminal, typed: str) -> None:
    """Wait until `typed` is shown and readline waits for the next key, as it does by the time a person presses one.
    (CPython's readline sees a signal only while it waits: a Ctrl-C sent the instant a key's echo shows, while the
    key is still being handled, is acted on at the next key or signal.)"""
    terminal.expect(typed)
    time.sleep(1)


def test_ctrl_c_at_the_prompt_keeps_the_chat_and_a_second_one_leaves(server, model_args):
    """Ctrl-C pressed to stop a reply that had just ended landed at the prompt and left the chat. Once, it drops the
    line being typed and says how to leave; twice in a row, it leaves."""
    server.steps = [stream(answer("First.")), stream(answer("Second."))]
    with PseudoTerminal("chat", *model_args) as terminal:
        terminal.expect(PROMPT)
        terminal.line("One.")
        terminal.expect("First.")
        terminal.expect(PROMPT)
        terminal.type("half a thought")
        at_rest(terminal, "half a thought")
        terminal.type(CTRL_C)
        terminal.expect(r"\[Ctrl-C again, Ctrl-D or /quit leaves\]")
        terminal.expect(PROMPT)
        terminal.line("Two.")
        terminal.expect("Second.")
        terminal.expect(PROMPT)
        for keys in ("zq1", "zq2"):
            terminal.type(keys)
            at_rest(terminal, keys)
            terminal.type(CTRL_C)
            if keys == "zq1":
                terminal.expect(r"\[Ctrl-C again, Ctrl-D or /quit leaves\]")
                terminal.expect(PROMPT)
        assert terminal.wait() == 0, terminal.seen
        assert terminal.seen.count(b"[Ctrl-C again") == 2  # the second time at the prompt, then the third left
    assert [request[2]["messages"][-1]["content"] for request in server.requests] == ["One.", "Two."]


def test_ctrl_c_while_the_commands_load_says_interrupted(monkeypatch, capsys):
    """Ctrl-C in the second `precis` spends importing its commands printed a traceback of the imports. (Typed at a
    moment a test cannot pick, so the import raises it here.)"""

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr("precis.core.cli.main.load_commands", interrupted)
    assert main(["chats"]) == 130
    assert capsys.readouterr().err == "interrupted\n"
