"""`precis summarize`, `undo-summary` and `history` on a real store (rule mode: no model needed)."""

from __future__ import annotations

from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.storage.store import open_store


def _chat(data) -> str:
    with open_store(data) as store:
        chat = store.create_chat("cache work")
        store.add_messages(chat, [
            Message(role="user" if i % 2 == 0 else "assistant",
                    content=(f"Step {i}: please look at cache_{i}.py and explain the eviction policy in detail. "
                             * 6) if i % 2 == 0 else f"Step {i}: We decided to use an LRU cache for module {i}. "
                    * 6)
            for i in range(20)])
    return chat


def test_summarize_then_history_then_undo(tmp_path, capsys):
    data = tmp_path / "data"
    chat = _chat(data)
    assert main(["--data-dir", str(data), "summarize", "cache work", "--instructions", "keep the file names"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cache work: 14 messages → 1 summary · ") and "saved, −" in out

    assert main(["--data-dir", str(data), "history", chat[:8], "--full"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("1. ") and "messages 1-14" in out[1]
    assert "rule, manual, " in out[1] and " tokens itself, instructions: keep the file names" in out[1]
    assert out[2].startswith("   first: Step 0: please look at cache_0.py")
    assert out[3].startswith("   last:  Step 13: We decided to use an LRU cache for module 13.")

    assert main(["--data-dir", str(data), "undo-summary", "cache work"]) == 0
    assert "undid the summary of 14 messages" in capsys.readouterr().out
    with open_store(data) as store:
        [record] = store.load_records(chat)
        assert record.status == "undone" and not store.archived_by(chat)
    assert main(["--data-dir", str(data), "history", "cache work"]) == 0
    assert "[undone]" in capsys.readouterr().out


def test_nothing_to_undo_or_summarize_is_bad_input(tmp_path, capsys):
    data = tmp_path / "data"
    with open_store(data) as store:
        store.create_chat("empty")
    assert main(["--data-dir", str(data), "undo-summary", "empty"]) == 2
    assert main(["--data-dir", str(data), "summarize", "empty"]) == 2
    assert main(["--data-dir", str(data), "history", "nope"]) == 1
    err = capsys.readouterr().err
    assert "precis undo-summary:" in err and "precis summarize:" in err and "no chat with id or title 'nope'" in err
