"""`precis`, `precis open` and `precis screenshot` through the real entry point."""

from __future__ import annotations

import pytest
from precis.core.cli.main import main


@pytest.mark.parametrize("argv", [["--data-dir", "DIR"], ["--data-dir", "DIR", "open"], ["open", "--data-dir", "DIR"]])
def test_the_window_is_the_default_command_and_takes_the_data_dir(qapp, tmp_path, capsys, argv):
    # The data folder given is a file, so `open` reports it instead of showing a window: that the message names
    # this path shows the window's command ran, on the folder given.
    data = tmp_path / "not-a-folder"
    data.write_text("")
    assert main([str(data) if arg == "DIR" else arg for arg in argv]) == 1
    assert f"cannot create the data folder {data}" in capsys.readouterr().err


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
