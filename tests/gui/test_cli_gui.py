"""`precis`, `precis open` and `precis screenshot` through the real entry point."""

from __future__ import annotations

import pytest
from precis.core.cli.main import main
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox


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


def test_the_window_opens_on_a_relative_precis_home(qapp, tmp_path, monkeypatch, capsys):
    """A relative PRECIS_HOME (`path.as_uri()` refused it) opens the window: rendered here to a picture."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRECIS_HOME", "relhome")
    (tmp_path / "k.jsonl").write_text('{"role": "user", "content": "kiwis"}\n')
    assert main(["import", "k.jsonl"]) == 0
    assert main(["screenshot", "shot.png", "--size", "800x600"]) == 0
    assert (tmp_path / "shot.png").stat().st_size > 0 and (tmp_path / "relhome" / "precis.db").exists()
