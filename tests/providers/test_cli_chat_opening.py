"""`precis chat` interrupted while the chat opens: Ctrl-C is what is said, and no empty chat is left behind."""

from __future__ import annotations

import io

from precis.core.chat.session import ChatSession
from precis.core.cli.main import main
from precis.core.storage.store import open_store


def test_ctrl_c_while_the_terminal_chat_opens(monkeypatch, capsys, tmp_path):
    """The chat's clean-up read the engine that was never built: an AttributeError hid the interrupt, and the new
    empty chat stayed in the list. No server is asked anything (nothing listens at its address)."""

    def interrupted(self, estimate=True):
        raise KeyboardInterrupt

    data = str(tmp_path / "data")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(ChatSession, "build_engine", interrupted)
    monkeypatch.setattr("sys.stdin", io.StringIO("Hello\n"))
    code = main(["chat", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                 "--data-dir", data, "--context-tokens", "4096"])
    assert code == 130
    assert "AttributeError" not in capsys.readouterr().err
    with open_store(data) as store:
        assert store.list_chats() == []
