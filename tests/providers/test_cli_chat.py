"""`precis chat` end to end on real backends: the embedded model and llama-cpp-python's server on loopback."""

from __future__ import annotations

import io

import pytest
from precis.core.cli.main import main
from precis.core.storage.store import open_store

pytestmark = pytest.mark.model


@pytest.mark.slow
def test_one_message_streams_the_reply_to_stdout(capsys, local_provider):
    assert main(["chat", "--max-tokens", "16", "--temperature", "0", "Name a fruit."]) == 0
    out = capsys.readouterr().out
    assert out.strip() and out.endswith("\n")


@pytest.mark.slow
def test_one_message_through_an_openai_compatible_server(capsys, llama_server):
    code = main(["chat", "--provider", "openai", "--base-url", llama_server, "--model", "smollm2",
                 "--max-tokens", "16", "Name a fruit."])
    assert code == 0
    assert capsys.readouterr().out.strip()


def test_unreachable_server_is_a_clear_error(capsys):
    code = main(["chat", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "Hi"])
    assert code == 1
    assert "cannot connect to http://127.0.0.1:9/v1" in capsys.readouterr().err


@pytest.mark.slow
def test_terminal_chat_summarizes_when_the_window_fills(capsys, monkeypatch, local_provider):
    turns = [f"Turn {n}: please remember that the parcel number {n} goes to warehouse {n * 7} on the "
             f"north side, next to the loading dock, before noon on day {n}." for n in range(10)]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(turns) + "\n/quit\n"))
    code = main(["chat", "--context-tokens", "400", "--max-tokens", "16", "--temperature", "0"])
    err = capsys.readouterr().err
    assert code == 0
    assert "[precis: summarized older messages" in err
    with open_store(None) as store:  # the PRECIS_HOME of the local_provider fixture
        [chat] = store.list_chats()
        assert [m.role for m in store.load_messages(chat.id)].count("assistant") == 10
