"""/regenerate in the terminal chat, by the window's rule: after a reply that failed before its first word, it
answers the message left unanswered; after a reply, it writes that reply again, its earlier text kept as a version;
after anything else it is refused. The real HTTP stack against a scripted server on loopback (a real server does
not refuse on demand)."""

from __future__ import annotations

import io

from precis.core.cli.main import main
from precis.core.storage.store import open_store

from tests.chat.test_reply_not_answered import REFUSED, answered


def chat(monkeypatch, capsys, server, data, lines: str) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    code = main(["chat", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "--data-dir", data,
                 "--context-tokens", "4096"])
    out, err = capsys.readouterr()
    return code, out, err


def test_regenerate_answers_a_message_whose_reply_failed_then_writes_the_reply_again(
        monkeypatch, capsys, server, tmp_path):
    server.steps = [REFUSED, answered("The 7:10."), answered("The 8:05.")]
    code, out, err = chat(monkeypatch, capsys, server, str(tmp_path), "Which ferry leaves first?\n/regenerate\n"
                                                                      "/regenerate\n")
    assert code == 1  # the first reply failed; the lines after it still ran
    assert "the model m is not loaded" in err
    assert out.splitlines() == ["The 7:10.", "The 8:05."]
    with open_store(tmp_path) as store:
        [listed] = store.list_chats()
        messages = store.load_messages(listed.id)
        assert [(m.role, m.content) for m in messages] == [("user", "Which ferry leaves first?"),
                                                           ("assistant", "The 8:05.")]
        kept = store.versions(listed.id)[messages[1].id]
        assert kept.texts == ("The 7:10.", "The 8:05.") and kept.shown == 1


def test_regenerate_with_no_reply_to_write_is_refused(monkeypatch, capsys, server, tmp_path):
    code, out, err = chat(monkeypatch, capsys, server, str(tmp_path), "/run echo hi\n/regenerate\n")
    assert code == 2 and "nothing to regenerate" in err
    assert server.requests == []  # nothing was sent to the model
