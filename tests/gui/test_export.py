"""File → Export… on the real window: the file dialog, the export off the GUI thread, the file read back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from precis.core.model.messages import Message
from precis.core.settings import SUMMARIZATION_KEY
from precis.core.storage.interchange import read_interchange_chat
from PySide6.QtWidgets import QFileDialog

from tests.gui.test_window import dialogue, idle, open_imported_chat
from tests.timing import WAIT_MS


def summarized_chat(qtbot, window, store) -> str:
    """An imported chat with one summary in its chain (rule mode: no model)."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    chat_id = open_imported_chat(qtbot, window, store, dialogue(30, "We compared the kickboxing gyms, point"))
    window.summarize_now()
    qtbot.waitUntil(lambda: idle(window) and len(window.chat.snapshot.chain) == 1, timeout=WAIT_MS)
    return chat_id


def export_through_the_dialog(qtbot, window, path: Path, name_filter: str) -> None:
    window.actions["export"].trigger()
    dialog = window.findChild(QFileDialog)
    assert dialog is not None and dialog.isVisible()
    dialog.selectFile(str(path))
    dialog.selectNameFilter(name_filter)
    dialog.filterSelected.emit(name_filter)  # as when the user picks it from the list
    dialog.accept()


@pytest.mark.slow
def test_export_writes_markdown_and_jsonl_with_the_summary_chain(qtbot, make_window, store, tmp_path):
    window = make_window()
    chat_id = summarized_chat(qtbot, window, store)
    record = window.chat.snapshot.chain[0]
    messages = store.load_messages(chat_id)

    target = tmp_path / "gyms.md"
    export_through_the_dialog(qtbot, window, target, "Markdown, with the summaries (*.md)")
    qtbot.waitUntil(lambda: "Exported" in window.statusBar().currentMessage(), timeout=WAIT_MS)
    assert str(target) in window.statusBar().currentMessage()
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# imported chat")
    assert all(m.content in text for m in messages)  # archived messages too: the export is the whole chat
    assert "**Summary** (depth 1" in text and record.text.splitlines()[0] in text

    # Choosing the JSONL filter writes interchange JSONL, which reads back as the same chat with its summary.
    target = tmp_path / "gyms.jsonl"
    export_through_the_dialog(qtbot, window, tmp_path / "gyms.md",
                              "Precis JSONL, re-importable, with the summaries (*.jsonl)")
    qtbot.waitUntil(lambda: target.exists() and str(target) in window.statusBar().currentMessage(), timeout=WAIT_MS)
    read = read_interchange_chat(target.read_text(encoding="utf-8").splitlines(), str(target))
    read_messages, records, archived_by = read.messages, read.records, read.archived_by
    assert [(m.id, m.content) for m in read_messages] == [(m.id, m.content) for m in messages]
    assert [r.id for r in records] == [record.id]
    assert set(archived_by) == set(window.chat.snapshot.hidden) and set(archived_by.values()) == {record.id}
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]  # no temporary file left behind


@pytest.mark.slow
def test_an_export_that_cannot_be_written_says_why_and_leaves_no_file(qtbot, make_window, store, tmp_path):
    window = make_window()
    summarized_chat(qtbot, window, store)
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):  # root ignores the mode bits; sysfs refuses new files even to root
        folder = Path("/sys")
    target = folder / "gyms.md"
    heartbeat = []
    window.chat.work_started.connect(heartbeat.append)

    export_through_the_dialog(qtbot, window, target, "Markdown, with the summaries (*.md)")
    qtbot.waitUntil(lambda: "Export failed" in window.composer.hint.text(), timeout=WAIT_MS)
    hint = window.composer.hint
    assert hint.objectName() == "error"
    full = hint.toolTip() or hint.text()
    assert f"cannot write {target}" in full and "ermission denied" in full
    assert heartbeat == [f"Exporting to {target}…"]  # it ran as background work, with its own status line
    assert not target.exists() and not [p for p in folder.iterdir() if p.name.startswith(".gyms.md")]


def test_the_window_says_how_many_secrets_the_export_left_out(qtbot, make_window, store, tmp_path):
    window = make_window()
    key = "sk-proj-4fJ9xQ2mZ8rT1vW6yB3nK7pL0sD5hG2aC9eU"
    open_imported_chat(qtbot, window, store, [Message(role="user", content=f"The staging key is {key}, keep it."),
                                              Message(role="assistant", content="Kept.")])
    target = tmp_path / "staging.md"
    export_through_the_dialog(qtbot, window, target, "Markdown, with the summaries (*.md)")
    qtbot.waitUntil(lambda: "Exported" in window.statusBar().currentMessage(), timeout=WAIT_MS)
    assert "1 secret redacted" in window.statusBar().currentMessage()
    text = target.read_text(encoding="utf-8")
    assert key not in text and "The staging key is [REDACTED:openai_key], keep it." in text
