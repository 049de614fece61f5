"""The terminal chat against a scripted OpenAI-compatible server on loopback: what a server sends cannot take over
the terminal, and the chat is stored and resumable."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest
from precis.core.cli.main import main
from precis.core.cli.terminal import TerminalText
from precis.core.model.messages import Message
from precis.core.storage.store import open_store

from tests.providers.scripted_server import FINISH, delta, reply, stream

ROOT = Path(__file__).resolve().parents[2]

HOSTILE = ["Hi", "\x1b]52;c;ZWNobyBwd25lZA==\x07", " the\x1b]0;owned title\x07re", "\x1b[2J\x1b[H", "\x1b[3",
           "1mred\x1b[0m", "\rover\x9b2Jwrite\x1b", "]52;c;aGk=\x1b\\", " done"]


def test_control_sequences_never_reach_the_terminal(server, monkeypatch, capsys, tmp_path):
    server.steps = [stream([*(delta(part) for part in HOSTILE), FINISH, "data: [DONE]"])]
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code = main(["chat", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "hello"])
    out = capsys.readouterr().out
    assert code == 0
    assert out == "Hi thereredoverwrite done\n"


def test_a_piped_chat_writes_the_replies_alone_and_exits_with_a_failed_line(server, tmp_path):
    """`echo hi | precis chat > out.txt` wrote the banner and the 'you> ' and 'model> ' prompts into out.txt, and
    exited with 0 when every reply had failed. Piped, standard output holds the replies and the commands' answers
    alone; the rest goes to standard error, and a reply that failed is the exit code."""
    server.steps = [stream([delta("Hello there."), FINISH, "data: [DONE]"])]
    env = {name: value for name, value in os.environ.items() if name != "OPENAI_API_KEY"}
    base = [sys.executable, "-m", "precis.core.cli.main", "chat", "--provider", "openai", "--model", "m",
            "--data-dir", str(tmp_path / "data"), "--context-tokens", "4096"]
    done = subprocess.run([*base, "--base-url", server.base_url], input="Hi\n/history\n", capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello there.\nno summaries\nrecent messages:\n  1. user: Hi\n  2. assistant: Hello there.\n"
    assert done.stderr.startswith("precis chat ") and "`precis chat --chat " in done.stderr
    failed = subprocess.run([*base, "--base-url", "http://127.0.0.1:9/v1"], input="Hi\n", capture_output=True,
                            text=True, cwd=ROOT, env=env, timeout=60)
    assert failed.returncode == 1 and failed.stdout == ""
    assert "precis chat: cannot connect to http://127.0.0.1:9/v1" in failed.stderr


def test_sequences_split_across_chunks_are_removed():
    shown = TerminalText()
    printed = "".join(shown.feed(part) for part in ["a\x1b", "]0;t", "itle\x07b\x1b[", "2Jc\x1b"]) + shown.end()
    assert printed == "abc"


def test_the_terminal_chat_is_stored_and_resumes(server, monkeypatch, capsys, tmp_path):
    data = str(tmp_path / "data")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.steps = [stream([delta("Noted: blue."), FINISH, "data: [DONE]"])]
    monkeypatch.setattr("sys.stdin", io.StringIO("My favourite colour is blue.\n/quit\n"))
    base = ["chat", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "--data-dir", data,
            "--context-tokens", "4096"]
    assert main(base) == 0
    with open_store(data) as store:
        [chat] = store.list_chats()
        assert [(m.role, m.content) for m in store.load_messages(chat.id)] == [
            ("user", "My favourite colour is blue."), ("assistant", "Noted: blue.")]
        assert chat.title == "My favourite colour is blue."  # named by its first message, as in the window
    assert f"precis chat --chat {chat.id[:8]}" in capsys.readouterr().err

    server.steps = [stream([delta("Blue."), FINISH, "data: [DONE]"])]
    monkeypatch.setattr("sys.stdin", io.StringIO("What is my favourite colour?\n"))
    assert main([*base, "--chat", chat.id[:8]]) == 0
    sent = server.requests[-1][2]["messages"]
    assert [m["content"] for m in sent if m["role"] != "system"] == [
        "My favourite colour is blue.", "Noted: blue.", "What is my favourite colour?"]
    with open_store(data) as store:
        assert len(store.load_messages(chat.id)) == 4 and len(store.list_chats()) == 1
        assert store.get_chat(chat.id).title == "My favourite colour is blue."  # a later message does not rename it


@pytest.mark.slow
def test_one_message_with_chat_is_a_turn_of_that_stored_chat(server, monkeypatch, capsys, tmp_path):
    """`precis chat --chat ID MESSAGE` was a bare one-off (the chat's history not sent, nothing stored), and a
    missing ID went unnoticed (exit 0)."""
    data = str(tmp_path / "data")
    with open_store(data) as store:
        chat = store.create_chat("colours", {"context_window": 4096})
        store.add_message(chat, Message("user", "My favourite colour is blue."))
        store.add_message(chat, Message("assistant", "Noted: blue."))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    base = ["chat", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "--data-dir", data,
            "--context-tokens", "4096"]
    server.steps = [stream([delta("Blue."), FINISH, "data: [DONE]"])]
    assert main([*base, "--chat", "colours", "What is my favourite colour?"]) == 0
    assert capsys.readouterr().out == "Blue.\n"  # the reply alone, as without --chat
    sent = server.requests[-1][2]["messages"]
    assert [m["content"] for m in sent if m["role"] != "system"] == [
        "My favourite colour is blue.", "Noted: blue.", "What is my favourite colour?"]
    with open_store(data) as store:
        assert [m.content for m in store.load_messages(chat)][2:] == ["What is my favourite colour?", "Blue."]

    asked = len(server.requests)
    assert main([*base, "--chat", "no-such-chat", "Hello?"]) == 2
    assert "no chat with id or title 'no-such-chat'" in capsys.readouterr().err
    assert len(server.requests) == asked  # nothing was sent


@pytest.mark.slow
def test_run_in_the_terminal_chat_stops_at_the_chats_time_limit(server, monkeypatch, capsys, tmp_path):
    data = str(tmp_path / "data")
    with open_store(data) as store:
        chat = store.create_chat("slow tools", {"run_timeout": 1})
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO("/run echo before; sleep 30\n"))
    started = time.monotonic()
    assert main(["chat", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "--data-dir", data,
                 "--chat", chat]) == 0
    assert time.monotonic() - started < 15  # the chat's 1 s, not the 60 s default
    assert "[timed out after 1 s; the command was stopped]\nbefore" in capsys.readouterr().out
    with open_store(data) as store:
        assert store.load_messages(chat)[-1].content.startswith("[timed out after 1 s; the command was stopped]\nbefore")


def run_on_a_terminal(*argv: str, env: dict[str, str] | None = None, encoding: str = "utf-8") -> str:
    """`precis ARGV` in its own process with a pseudo-terminal as standard output and error: what the user sees."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "precis.core.cli.main", *argv], cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=follower, env=env)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed its side
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert proc.wait(timeout=60) == 0, seen
    return seen.decode(encoding)


def test_a_locale_not_utf8_shows_what_it_can_and_pipes_get_utf8(tmp_path, capsys):
    """In a Latin-1 locale `precis chats`, history, context, search, export and summarize ended in a
    UnicodeEncodeError traceback at the first '…' or '→' (summarize after writing its summary); the terminal chat
    left at /history. A terminal shows '?' for what it cannot; a pipe gets UTF-8, the text exact. (PYTHONIOENCODING
    gives the streams the encoding a Latin-1 locale gives them, without a locale to install.)"""
    data = str(tmp_path / "data")
    source = tmp_path / "menu.jsonl"
    source.write_text(json.dumps({"role": "user", "content": "un café → deux"}) + "\n", encoding="utf-8")
    assert main(["--data-dir", data, "import", str(source), "--title", "café → menu…"]) == 0
    capsys.readouterr()
    latin1 = {**os.environ, "PYTHONIOENCODING": "latin-1"}
    shown = run_on_a_terminal("--data-dir", data, "chats", env=latin1, encoding="latin-1")
    assert "café ? menu?" in shown
    piped = subprocess.run([sys.executable, "-m", "precis.core.cli.main", "--data-dir", data, "export", "café → menu…",
                            "--format", "md"], cwd=ROOT, capture_output=True, env=latin1, timeout=60)
    assert piped.returncode == 0, piped.stderr
    assert "un café → deux" in piped.stdout.decode("utf-8")


@pytest.mark.slow
def test_no_command_prints_a_stored_chats_control_sequences_to_a_terminal(tmp_path):
    """A chat imported (or replied) with escape sequences in a title and a message: search, chats, history and a
    Markdown export shown on a terminal never pass them on; written to a file the export keeps the text exact."""
    data = str(tmp_path / "data")
    source = tmp_path / "hostile.jsonl"
    hostile = "kiwi \x1b]52;c;ZWNobyBwd25lZA==\x07fruit \x1b]0;owned\x07\x1b[2J\x9b31mred\x1b[0m"
    source.write_text("\n".join(json.dumps({"role": role, "content": hostile}) for role in ("user", "assistant")))
    imported = subprocess.run([sys.executable, "-m", "precis.core.cli.main", "--data-dir", data, "import",
                               str(source), "--title", "title \x1b]0;set\x07here"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    chat = imported.stdout.strip()
    for argv in (["search", "kiwi"], ["chats"], ["history", chat, "--full"], ["export", chat, "--format", "md"]):
        shown = run_on_a_terminal("--data-dir", data, *argv)
        assert "\x1b" not in shown and "\x9b" not in shown and "\x07" not in shown, (argv, shown)
        assert "kiwi" in shown or "title here" in shown, (argv, shown)
    assert main(["--data-dir", data, "export", chat, "--format", "md", "-o", str(tmp_path / "chat.md")]) == 0
    assert hostile in (tmp_path / "chat.md").read_text()


def test_one_turn_of_a_stored_chat_runs_a_slash_command_instead_of_sending_it(server, monkeypatch, capsys, tmp_path):
    """`precis chat --chat ID /context` sent '/context' to the model as the user's message, and stored it."""
    data = str(tmp_path / "data")
    with open_store(data) as store:
        chat = store.create_chat("colours", {"context_window": 4096})
        store.add_message(chat, Message("user", "My favourite colour is blue."))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    base = ["chat", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "--data-dir", data,
            "--context-tokens", "4096", "--chat", "colours"]
    assert main([*base, "/context"]) == 0
    assert capsys.readouterr().out.startswith("context: ")
    assert main([*base, "/nosuch"]) == 2
    assert "Unknown command /nosuch." in capsys.readouterr().err
    assert server.requests == []  # nothing was sent to the model
    with open_store(data) as store:
        assert [m.content for m in store.load_messages(chat)] == ["My favourite colour is blue."]


def test_a_reply_stopped_by_its_token_limit_says_so(server, monkeypatch, capsys):
    """A reply cut at --max-tokens ended mid-sentence with no word of why."""
    cut = "data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
    server.steps = [stream([delta("The three reasons are: first, the"), cut, "data: [DONE]"])]
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code = main(["chat", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "--max-tokens", "16",
                 "Why?"])
    out, err = capsys.readouterr()
    assert code == 0 and out == "The three reasons are: first, the\n"
    assert "[the reply reached its limit of 16 tokens and stopped there; --max-tokens sets it]" in err
    server.steps = [stream([delta("Done."), FINISH, "data: [DONE]"])]
    assert main(["chat", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "Hi"]) == 0
    assert "limit" not in capsys.readouterr().err


def test_continue_in_the_terminal_chat_goes_on_with_a_reply_cut_at_its_limit(server, monkeypatch, capsys, tmp_path):
    # Scripted: a real server stops at the limit too, but not at a chosen word on demand.
    data = str(tmp_path / "data")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cut = "data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
    server.steps = [stream([delta("The three reasons are: first, the"), cut, "data: [DONE]"]),
                    stream([delta(" cost; second, the time."), FINISH, "data: [DONE]"])]
    monkeypatch.setattr("sys.stdin", io.StringIO("Why?\n/continue\n/quit\n"))
    assert main(["chat", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "--data-dir", data,
                 "--max-tokens", "64", "--context-tokens", "4096"]) == 0
    out, err = capsys.readouterr()
    assert "[the reply reached its limit of 64 tokens and stopped there; /continue goes on" in err
    assert out == "The three reasons are: first, the\n cost; second, the time.\n"
    with open_store(data) as store:
        [chat] = store.list_chats()
        assert [(m.content, m.cut_at) for m in store.load_messages(chat.id)] == [
            ("Why?", None), ("The three reasons are: first, the cost; second, the time.", None)]


@pytest.mark.slow
def test_a_terminal_chat_in_which_nothing_was_said_is_not_left_in_the_list(monkeypatch, capsys, tmp_path):
    """Opening `precis chat`, asking /context and leaving stored a '0 msgs' chat that `precis chats` and the window
    listed. No server is asked anything (nothing listens at its address)."""
    data = str(tmp_path / "data")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO("/context\n/quit\n"))
    assert main(["chat", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                 "--data-dir", data, "--context-tokens", "4096"]) == 0
    assert capsys.readouterr().out.startswith("context: ")
    with open_store(data) as store:
        assert store.list_chats() == []
    monkeypatch.setattr("sys.stdin", io.StringIO("/run echo kept\n"))  # a tool's output is something said
    assert main(["chat", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                 "--data-dir", data, "--context-tokens", "4096"]) == 0
    with open_store(data) as store:
        [chat] = store.list_chats()
        assert "kept" in store.load_messages(chat.id)[-1].content


def stored_chat_near_its_window(data: str, summarization: dict) -> str:
    """A chat of 16 long messages in a 1,024-token window, summarized as `summarization` says (its own settings)."""
    with open_store(data) as store:
        chat_id = store.create_chat("kiwi crates", {"context_window": 1024, "reserve_output": 64,
                                                    "summarization": summarization})
        store.add_messages(chat_id, [Message("user" if n % 2 == 0 else "assistant",
                                             f"Crate {n} of kiwis went to the Wellington depot on pallet {n}. " * 5)
                                     for n in range(16)])
    return chat_id


def test_a_stored_chat_continued_in_the_terminal_follows_its_own_summary_settings(server, monkeypatch, capsys,
                                                                                   tmp_path):
    """A chat set to rule summaries, continued with `precis chat --chat ID`, got a hybrid summary and a model call:
    the terminal built its own summarizer (hybrid by default) instead of the chat's."""
    data = str(tmp_path / "data")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    chat_id = stored_chat_near_its_window(data, {"mode": "rule"})
    server.steps = [stream([delta("Pallet 3."), FINISH, "data: [DONE]"])]
    assert main(["chat", "--provider", "openai", "--base-url", server.base_url, "--model", "chat-model",
                 "--data-dir", data, "--chat", chat_id, "Which pallet had crate 3?"]) == 0
    assert capsys.readouterr().out == "Pallet 3.\n"
    assert [body["model"] for _, _, body in server.requests] == ["chat-model"]  # the reply's call alone
    with open_store(data) as store:
        [record] = store.load_records(chat_id)
        assert record.mode == "rule" and record.written_by == "rules"


@pytest.mark.slow
def test_the_terminal_chat_sends_summaries_to_the_summarizer_the_chat_names(server, monkeypatch, capsys, tmp_path):
    """Settings → Summarization's "Summaries written by: other" was skipped by the terminal chat, so chat text went
    to a model the user had not chosen for it."""
    data = str(tmp_path / "data")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    chat_id = stored_chat_near_its_window(data, {"mode": "llm", "summarizer": "other", "summarizer_provider": "openai",
                                                 "summarizer_base_url": server.base_url,
                                                 "summarizer_model": "summary-model", "summary_seconds": 60})
    summary = {"narrative": "Crates 0 to 12 of kiwis went to the Wellington depot, one pallet each.",
               "key_points": [], "decisions": [], "action_items": [], "unresolved_questions": [], "entities": []}
    # The summarizer's model sets no window of its own: its server's /models is asked once for it.
    server.steps = [reply(200, json.dumps({"data": [{"id": "summary-model"}]})),
                    stream([delta(json.dumps(summary)), FINISH, "data: [DONE]"]),
                    stream([delta("Pallet 3."), FINISH, "data: [DONE]"])]
    assert main(["chat", "--provider", "openai", "--base-url", server.base_url, "--model", "chat-model",
                 "--data-dir", data, "--chat", chat_id, "Which pallet had crate 3?"]) == 0
    assert [(path, body.get("model")) for _, path, body in server.requests] == [
        ("/v1/models", None), ("/v1/chat/completions", "summary-model"), ("/v1/chat/completions", "chat-model")]
    with open_store(data) as store:
        [record] = store.load_records(chat_id)
        assert record.mode == "llm" and "summary-model" in record.written_by
