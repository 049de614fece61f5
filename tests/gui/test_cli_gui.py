"""`precis`, `precis open` and `precis screenshot` through the real entry point."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import closing

import pytest
from precis.core.cli.main import main
from precis.core.model.messages import Message
from PySide6.QtCore import QTimer
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.timing import WAIT_MS


def close_the_message_box(shown: list[str], tries: int = 200) -> None:
    """Read and close the message box the window's command shows (it waits for the user); look for 10 s at most."""
    box = QApplication.activeModalWidget()
    if isinstance(box, QMessageBox):
        shown.append(box.text())
        box.close()
    elif tries:
        QTimer.singleShot(50, lambda: close_the_message_box(shown, tries - 1))


@pytest.mark.parametrize("argv", [["--data-dir", "DIR"], ["--data-dir", "DIR", "open"], ["open", "--data-dir", "DIR"]])
def test_the_window_is_the_default_command_and_takes_the_data_dir(qapp, tmp_path, capsys, argv):
    # The data folder given is a file, so `open` reports it instead of showing a window: that the message names
    # this path shows the window's command ran, on the folder given.
    data = tmp_path / "not-a-folder"
    data.write_text("")
    shown: list[str] = []
    close_the_message_box(shown)
    assert main([str(data) if arg == "DIR" else arg for arg in argv]) == 1
    assert f"cannot create the data folder {data}" in capsys.readouterr().err


def test_a_damaged_store_is_told_in_a_message_box_too(qapp, tmp_path, capsys):
    """Started from a menu there is no terminal: why the window cannot open, and where the copy went, is shown."""
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "chats"]) == 0
    (data / "precis.db").write_bytes(b"SQLite format 3\x00" + bytes(200) + b"garbage" * 1000)
    shown: list[str] = []
    close_the_message_box(shown)
    assert main(["--data-dir", str(data)]) == 1
    [text] = shown
    assert f"{data / 'precis.db'} is damaged" in text and "A copy was saved as" in text
    assert text in capsys.readouterr().err


def test_screenshot_size_is_checked_before_anything_opens(tmp_path, capsys):
    assert main(["screenshot", str(tmp_path / "x.png"), "--size", "12x"]) == 2
    assert "must look like 1500x950" in capsys.readouterr().err
    assert main(["screenshot", str(tmp_path / "x.png"), "--size", "10x10"]) == 2
    assert "out of range" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_screenshot_of_a_chat_that_does_not_exist_is_bad_input(qapp, tmp_path, capsys):
    assert main(["screenshot", str(tmp_path / "x.png"), "--chat", "nosuch", "--data-dir", str(tmp_path / "d")]) == 2
    assert "no chat with id or title 'nosuch'" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_a_screenshot_without_a_chat_waits_for_the_first_chat_to_be_open_and_counted(qapp, qtbot, store):
    """Without --chat the picture was taken before the chat list had opened its first chat (no chat open, no work
    on one: it looked settled); the store was then closed while that chat's tokens were being counted, and the
    counting failed with 'unable to open database file'."""
    from precis.core.providers.local import LocalProvider
    from precis.gui.cli_gui import _settled
    from precis.gui.main_window import MainWindow

    chat_id = store.import_chat("tides", [Message(role="user" if i % 2 == 0 else "assistant", content=f"Tide table {i}.")
                                          for i in range(12)])
    window = MainWindow(store, provider=LocalProvider(), load_model=False)  # as the screenshot makes it
    qtbot.addWidget(window)
    window.remembers_size = False
    window.show()
    try:
        qtbot.waitUntil(lambda: _settled(window), timeout=WAIT_MS)
        assert window.chat.is_open(chat_id)
        snapshot = window.chat.snapshot
        assert snapshot is not None and snapshot.usage is not None and snapshot.counting == 0
        assert not window.chat.busy
    finally:
        window.close()
        window.chat.finish_background_work()


@pytest.mark.slow
def test_the_window_opens_on_a_relative_precis_home(qapp, tmp_path, monkeypatch, capsys):
    """A relative PRECIS_HOME (`path.as_uri()` refused it) opens the window: rendered here to a picture."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRECIS_HOME", "relhome")
    (tmp_path / "k.jsonl").write_text('{"role": "user", "content": "kiwis"}\n')
    assert main(["import", "k.jsonl"]) == 0
    assert main(["screenshot", "shot.png", "--size", "800x600"]) == 0
    assert (tmp_path / "shot.png").stat().st_size > 0 and (tmp_path / "relhome" / "precis.db").exists()


def store_rows(path) -> dict[str, list[tuple]]:
    """Every row of every table of the store (chats, messages, summaries, token counts, search index), sorted."""
    with closing(sqlite3.connect(path)) as conn:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {table: sorted(conn.execute(f"SELECT * FROM '{table}'").fetchall(), key=repr) for table in tables}


@pytest.mark.slow
def test_a_screenshot_leaves_the_chats_as_they_were(qapp, qtbot, store, make_window, tmp_path):
    """A chat past its trigger is summarized when opened: the picture shows that, and the store is not changed."""
    messages = [Message(role="user" if i % 2 == 0 else "assistant",
                        content=f"Message {i} about the harbour survey, section {i}: " + "tide gauge readings " * 40)
                for i in range(40)]
    chat_id = store.import_chat("survey", messages)
    # Rule summaries: this is about what a screenshot leaves behind, not about the model (which takes minutes here).
    store.update_chat_settings(chat_id, {"context_window": 2048, "summarization": {"mode": "rule"}})
    before = store_rows(store.path)
    assert before["summary"] == [] and before["message"]
    shot = tmp_path / "shot.png"
    assert main(["screenshot", str(shot), "--chat", "survey", "--size", "1000x700"]) == 0
    assert shot.stat().st_size > 0
    assert store_rows(store.path) == before
    # The chat was due its summary: the window, opening it for real, makes one and stores it.
    window = make_window()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: len(store.load_records(chat_id)) == 1, timeout=WAIT_MS)
    assert store_rows(store.path)["summary"]


@pytest.mark.slow
def test_a_screenshot_that_cannot_be_written_is_refused_before_drawing_and_a_size_too_small_is_told(
        qapp, tmp_path, capsys):
    """'/no/such/folder/x.png' was drawn and then 'could not write' with no reason (exit 1); an empty name made Qt
    warn; 800x600 wrote a 948x600 picture without a word."""
    for target, told in ((tmp_path / "nosuch" / "x.png", f"there is no folder {tmp_path / 'nosuch'}"),
                         (tmp_path, f"{tmp_path} is a folder"), ("", "no file name given")):
        assert main(["screenshot", str(target), "--data-dir", str(tmp_path / "d")]) == 2
        assert told in capsys.readouterr().err
    shot = tmp_path / "small.png"
    assert main(["screenshot", str(shot), "--size", "400x300", "--data-dir", str(tmp_path / "d")]) == 0
    err = capsys.readouterr().err
    width = QImage(str(shot)).width()
    assert width > 400 and "the window cannot be 400x300" in err and f"the picture is {width}x" in err


@pytest.mark.slow
def test_the_window_without_a_display_says_so_instead_of_aborting(tmp_path, capsys, monkeypatch):
    """On a machine with no display Qt aborted the process (exit 134, 'no Qt platform plugin could be
    initialized', which reads as a broken install)."""
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    assert main(["--data-dir", str(tmp_path / "d")]) == 1
    err = capsys.readouterr().err
    assert "there is no display to show the window on" in err and "precis screenshot draws the window" in err


@pytest.mark.slow
def test_a_screenshot_says_nothing_on_standard_error_when_all_went_well(tmp_path):
    """Qt's offscreen platform printed 'This plugin does not support propagateSizeHints()' twice with every picture,
    which reads as something having gone wrong."""
    shot = tmp_path / "shot.png"
    done = subprocess.run([sys.executable, "-m", "precis.core.cli.main", "screenshot", str(shot), "--size",
                           "1000x700", "--data-dir", str(tmp_path / "d")], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert done.returncode == 0 and done.stdout.strip() == str(shot) and shot.stat().st_size > 0
    assert done.stderr == ""
