"""The window started on a damaged database: its box offers Recover…, which runs `precis recover`'s salvage off the
window's thread with a progress dialog, says what it got back and where the damaged file is, and the recovered store
opens. A real SQLite file, damaged by overwriting pages in the middle."""

from __future__ import annotations

import threading
from pathlib import Path

from precis.core.storage.store import DB_NAME
from precis.gui import cli_gui, store_trouble
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox, QProgressDialog

from tests.store.test_recover import data, digest, overwrite, pages_of, stored_messages  # noqa: F401 - a fixture


class BoxAnswerer:
    """Reads each modal box the opening shows (name, text), clicking `click` in the first box (why the chats cannot
    be opened) and closing the others; a progress dialog is noted as it shows; a folder dialog is given `folder`.
    Looks every 20 ms until stopped."""

    def __init__(self, click: str, folder: Path | None = None) -> None:
        self.click, self.folder = click, folder
        self.seen: list[tuple[str, str]] = []
        self.timer = QTimer()
        self.timer.timeout.connect(self.look)
        self.timer.start(20)

    def look(self) -> None:
        widget = QApplication.activeModalWidget()
        if isinstance(widget, QMessageBox) and (widget.objectName(), widget.text()) not in self.seen:
            self.seen.append((widget.objectName(), widget.text()))
            wanted = next((b for b in widget.buttons() if b.text().replace("&", "") == self.click), None)
            QTimer.singleShot(0, wanted.click if len(self.seen) == 1 and wanted else widget.close)
        elif isinstance(widget, QFileDialog) and self.folder is not None and ("folder", "") not in self.seen:
            self.seen.append(("folder", ""))
            widget.setDirectory(str(self.folder))  # a folder dialog accepts the folder it shows
            QTimer.singleShot(0, widget.accept)
        elif isinstance(widget, QProgressDialog) and ("progress", "") not in self.seen:  # noted as it shows
            self.seen.append(("progress", ""))


def threads_running(monkeypatch, module, name: str) -> list[threading.Thread]:
    """The threads `module.name` runs on from now: the real function, each call's thread noted."""
    threads: list[threading.Thread] = []
    real = getattr(module, name)

    def noted(*args):
        threads.append(threading.current_thread())
        return real(*args)

    monkeypatch.setattr(module, name, noted)
    return threads


def test_recover_in_the_damage_box_recovers_off_the_window_thread_and_opens_the_store(qapp, data, monkeypatch):  # noqa: F811
    db = data / DB_NAME
    before = stored_messages(db)
    leaves = pages_of(db, "message", "leaf")
    damaged = [leaves[len(leaves) // 2]]
    overwrite(db, [page for page, _cells in damaged])
    damaged_digest = digest(db)
    threads = threads_running(monkeypatch, store_trouble, "recover")
    answerer = BoxAnswerer(store_trouble.RECOVER_LABEL)
    store = cli_gui._open_store(str(data), in_a_box=True)
    answerer.timer.stop()
    seen = answerer.seen
    try:
        assert store is not None  # the recovered store, opened
        assert threads and threads[0] is not threading.main_thread()  # never on the window's thread
        names = [name for name, _text in seen if name != "progress"]  # a quick recovery's may come and go unseen
        assert names == ["damaged", "recovered"]
        assert "precis recover" in seen[0][1]
        lost = sum(cells for _page, cells in damaged)
        said = seen[-1][1]
        assert f"{len(before) - lost:,} messages" in said and "1 in the messages" in said
        [kept] = data.glob(f"{DB_NAME}.damaged-*[0-9]")
        assert str(kept) in said and digest(kept) == damaged_digest
        assert sorted(c.title for c in store.list_chats()) == ["Garden plans", "Lisbon trip"]
    finally:
        if store is not None:
            store.close()


def test_closing_the_damage_box_changes_nothing(qapp, data):  # noqa: F811
    db = data / DB_NAME
    overwrite(db, [pages_of(db, "message", "leaf")[3][0]])
    damaged_digest = digest(db)
    answerer = BoxAnswerer("Close")
    assert cli_gui._open_store(str(data), in_a_box=True) is None
    answerer.timer.stop()
    assert [name for name, _text in answerer.seen] == ["damaged"]
    assert digest(db) == damaged_digest and not list(data.glob(f"{DB_NAME}.damaged-*"))
