"""The window and `precis` commands in other processes on one data folder: the window picks up their changes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from precis.core.model.messages import Message

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

    from tests.gui.test_window import dialogue, idle, open_imported_chat

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
