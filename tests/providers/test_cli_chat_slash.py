"""The terminal chat runs the registry's slash commands itself instead of sending them to the model."""

from __future__ import annotations

import io
from types import SimpleNamespace

from precis.core.cli.chat import terminal_chat
from precis.core.storage.store import open_store

from tests.fakes import ScriptedProvider


def test_slash_commands_run_in_the_terminal_chat_and_never_reach_the_model(tmp_path):
    # The provider has no reply to give: any line sent to it would fail the chat. (A fake: nothing is generated.)
    provider = ScriptedProvider([])
    args = SimpleNamespace(context_tokens=4096, max_tokens=64, temperature=0.0, summaries="rule", chat=None,
                           data_dir=str(tmp_path))
    stdin = io.StringIO("/context\n/run echo hello-from-run\n/history\n/undo-summary\n/nosuch\n/help\n")
    out = io.StringIO()
    assert terminal_chat(provider, args, stdin, out, io.StringIO()) == 0
    text = out.getvalue()
    assert provider.calls == []
    assert "you> context: " in text and "tokens (0%); summary chain: 0" in text
    assert "hello-from-run\n[exit code: 0]" in text
    assert "no summaries" in text
    assert "Unknown command /nosuch." in text
    assert "/summarize [instructions]" in text  # /help lists the registry
    with open_store(tmp_path) as store:
        [chat] = store.list_chats()
        # /run's call and output are kept as a tool exchange; the slash lines themselves are not messages.
        assert [m.role for m in store.load_messages(chat.id)] == ["assistant", "tool"]
