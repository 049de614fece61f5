"""The damage box's Recover…: `precis recover`'s salvage (core/storage/salvage.py) run off the window's thread, with
its progress, then what it got back; the recovered store is opened after it."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEventLoop, Qt
from PySide6.QtWidgets import QMessageBox, QProgressDialog

from ..core.storage.paths import DB_NAME
from ..core.storage.salvage import TABLE_WORDS, TABLES, recover
from .wording import failure_text
from .workers import Runner

RECOVER_LABEL = "Recover…"
TITLE = "Precis cannot open its chats"


def offer_recovery(why: str, folder: Path) -> bool:
    """The damaged store's box, with Recover… beside Close: True once what could be read of it was recovered (the
    caller opens it), False if closed or the recovery failed (both said)."""
    box = QMessageBox(QMessageBox.Icon.Critical, TITLE, why)
    box.setObjectName("damaged")
    recover_button = box.addButton(RECOVER_LABEL, QMessageBox.ButtonRole.AcceptRole)
    recover_button.setToolTip("Keep what can still be read in a new database, as `precis recover` does; the damaged "
                              "file is kept beside it, renamed")
    box.setEscapeButton(box.addButton(QMessageBox.StandardButton.Close))
    box.exec()
    if box.clickedButton() is not recover_button:
        return False
    outcome = _recover_with_progress(folder)
    if isinstance(outcome, BaseException):
        QMessageBox.critical(None, TITLE, f"Nothing was recovered: {failure_text(outcome)}")
        return False
    said = QMessageBox(QMessageBox.Icon.Information, "Chats recovered", "\n\n".join(outcome.report()))
    said.setObjectName("recovered")
    said.exec()
    return True


def _recover_with_progress(folder: Path):
    """The Recovery, or the error that stopped it; the work on a thread of its own, a progress dialog meanwhile
    (the event loop runs: the dialog paints and moves)."""
    progress = QProgressDialog(f"Reading what can be read of {folder / DB_NAME}…", "", 0, len(TABLES))
    progress.setObjectName("recovering")
    progress.setCancelButton(None)  # a recovery stopped half way would leave nothing better than it found
    progress.setWindowTitle("Recovering chats")
    progress.setWindowModality(Qt.WindowModality.ApplicationModal)
    progress.setMinimumDuration(0)
    progress.setValue(0)
    runner = Runner(max_threads=1)
    outcome: list = []
    job = runner.submit("recover the chats", lambda work: recover(folder, DB_NAME, lambda n, table: work.report(
        (n, table))))

    def reading(step: tuple[int, str]) -> None:
        n, table = step
        progress.setValue(n)
        progress.setLabelText(f"Reading the {TABLE_WORDS[table][1]} ({n + 1} of {len(TABLES)})…")

    job.progress.connect(reading)
    job.succeeded.connect(outcome.append)
    job.failed.connect(outcome.append)
    wait = QEventLoop()
    job.finished.connect(wait.quit)
    if not job.done:
        wait.exec()
    progress.close()
    return outcome[0]
