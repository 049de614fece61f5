"""/grep on folders holding what is not a plain file (a FIFO, a device, links out of the folder) and on more than it
may read: it never hangs, never reads outside the folder, and stops at its limits saying so."""

from __future__ import annotations

import os
import threading

import pytest
from precis.core.tools import bounded as tools


def grep_within(seconds: float, *args, **kwargs) -> str:
    """tools.grep run on a thread of its own (its error raised here): a search that hangs fails the test instead of
    hanging it."""
    result: list = []

    def search() -> None:
        try:
            result.append(tools.grep(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - raised in the test's thread
            result.append(exc)
    worker = threading.Thread(target=search, daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, f"/grep did not finish within {seconds} s"
    if isinstance(result[0], Exception):
        raise result[0]
    return result[0]


def test_special_files_and_links_out_of_the_folder_are_not_read(tmp_path):
    """A FIFO hung /grep (its open waits for a writer); a link to /dev/zero read until memory ran out (3.9 GB); a
    link to a file elsewhere showed that file's lines."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("a needle here\n")
    os.mkfifo(folder / "pipe")
    (folder / "zeros").symlink_to("/dev/zero")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("a needle outside\n")
    (folder / "out.txt").symlink_to(outside)
    (folder / "escape").symlink_to(tmp_path)  # a link to a folder above: not walked
    (folder / "same.txt").symlink_to(folder / "notes.txt")  # a link inside the folder is read
    assert grep_within(20, "needle", folder).splitlines() == [
        "notes.txt:1: a needle here", "same.txt:1: a needle here", "2 matches in 2 files"]


def test_a_device_or_a_fifo_named_as_the_path_is_bad_input(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    for path in ("/dev/zero", tmp_path / "pipe"):
        with pytest.raises(tools.ToolInputError, match="is not a file or folder"):
            grep_within(20, "x", path)


def test_a_search_stops_at_its_time_and_byte_limits_and_says_where(tmp_path):
    for name in "abcde":
        (tmp_path / f"{name}.txt").write_text("needle\n" + "x" * 393 + "\n")  # 401 bytes each
    result = grep_within(20, "needle", tmp_path, limits=tools.GrepLimits(bytes=1000)).splitlines()
    assert result == ["a.txt:1: needle", "b.txt:1: needle", "c.txt:1: needle",
                      "[stopped after reading 1,000 bytes, before d.txt: the files from there on were not searched]",
                      "3 matches in 3 files"]
    result = grep_within(20, "needle", tmp_path, limits=tools.GrepLimits(seconds=0)).splitlines()
    assert result == ["[stopped after 0 s, before a.txt: the files from there on were not searched]",
                      "0 matches in 0 files"]
