"""`precis chat` with piped lines tells a script what went wrong by its exit code: a command refused (`/pin 99`,
`/undo-summary` with nothing to undo) exited 0 as if it had been done; and a reply that failed before its first word
left "2. assistant: (empty)" in `/history`. The real command, its input a stream that is no terminal, against a
scripted server on loopback (a real server does not refuse on demand)."""

from __future__ import annotations

import io

import pytest
from precis.core.cli.main import main
from precis.core.storage.store import open_store

from tests.providers.scripted_server import FINISH, delta, reply, stream


def piped(monkeypatch, capsys, server, data, lines: str, *extra: str) -> tuple[int, str, str]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    code = main(["chat", "--data-dir", str(data), "--provider", "openai", "--base-url", server.base_url, "--model",
                 "m", "--context-tokens", "4096", *extra])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("line", "said"), [
    ("/pin 99", "/pin: no message 99 in this conversation"),
    ("/undo-summary", "there is no summary to undo"),
    ("/summarize", "Nothing to summarize"),
    ("/nosuch", "Unknown command /nosuch."),
])
def test_a_refused_command_exits_2_and_the_lines_after_it_still_run(monkeypatch, capsys, server, tmp_path, line,
                                                                    said):
    server.steps = [stream([delta("Noted."), FINISH, "data: [DONE]"])]
    code, out, err = piped(monkeypatch, capsys, server, tmp_path, f"remember the kiwi crates\n{line}\n/history\n")
    assert code == 2, err
    assert said.lower() in err.lower()
    assert "2. assistant: Noted." in out  # /history after the refusal ran


def test_commands_that_are_done_exit_0(monkeypatch, capsys, server, tmp_path):
    server.steps = [stream([delta("Noted."), FINISH, "data: [DONE]"])]
    code, out, err = piped(monkeypatch, capsys, server, tmp_path, "remember the kiwi crates\n/pin 1\n/history\n/help\n")
    assert code == 0, err
    assert "Pinned" in out


def test_a_reply_refused_before_its_first_word_exits_1_and_keeps_no_empty_reply(monkeypatch, capsys, server,
                                                                                tmp_path):
    server.steps = [reply(400, '{"error": {"message": "the model m is not loaded"}}')]
    code, out, err = piped(monkeypatch, capsys, server, tmp_path, "which ferry leaves first?\n/history\n")
    assert code == 1
    assert "the model m is not loaded" in err
    assert "1. user: which ferry leaves first?" in out and "(empty)" not in out and "assistant" not in out
    with open_store(tmp_path) as store:
        [chat] = store.list_chats()
        assert [m.role for m in store.load_messages(chat.id)] == ["user"]  # the question is kept, to ask again
