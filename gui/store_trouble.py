"""What the window offers when it cannot open its chats, before it is shown: a damaged database's Recover… (the
salvage of `precis recover`, core/storage/salvage.py) and a newer Precis's database's Export chats… (each chat read
read-only into a folder, core/storage/export_folder.py). Each runs off the window's thread with a progress dialog,
then says what it did."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEventLoop, Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressDialog

from ..core.storage.export_folder import export_every_chat
from ..core.storage.exporters import EXPORT_TITLES
from ..core.storage.paths import DB_NAME
from ..core.storage.salvage import TABLE_WORDS, TABLES, recover
from ..core.storage.store import open_store
from .wording import failure_text
from .workers import Runner

RECOVER_LABEL = "Recover…"
EXPORT_LABEL = "Export chats…"
TITLE = "Precis cannot open its chats"
NEWER_EXPORT_FORMAT = "md"  # for a person to read, with the summaries


def offer_recovery(why: str, folder: Path) -> bool:
    """The damaged store's box, with Recover… beside Close: True once what could be read of it was recovered (the
    caller opens it), False if closed or the recovery failed (both said)."""
    if not _asked(why, "damaged", RECOVER_LABEL, "Keep what can still be read in a new database, as `precis "
                  "recover` does; the damaged file is kept beside it, renamed"):
        return False

    def work(report: Callable[[int, str], None]):
        return recover(folder, DB_NAME, lambda n, table: report(n, f"Reading the {TABLE_WORDS[table][1]} ({n + 1} of "
                                                                     f"{len(TABLES)})…"))

    outcome = run_with_progress("Recovering chats", f"Reading what can be read of {folder / DB_NAME}…", len(TABLES),
                                work)
    if isinstance(outcome, BaseException):
        _tell(QMessageBox.Icon.Critical, "failed", TITLE, f"Nothing was recovered: {failure_text(outcome)}")
        return False
    _tell(QMessageBox.Icon.Information, "recovered", "Chats recovered", "\n\n".join(outcome.report()))
    return True


def offer_newer_export(why: str, folder: Path) -> None:
    """A newer Precis's store's box, with Export chats… beside Close: each chat this Precis can read, written as
    Markdown into a folder the user chooses; the database is opened read-only and never written."""
    if not _asked(why, "newer", EXPORT_LABEL, "Write each chat this Precis can read as Markdown into a folder; the "
                  "database is only read"):
        return
    chooser = QFileDialog(None, "Export the chats into a folder")
    chooser.setObjectName("exportFolder")
    chooser.setFileMode(QFileDialog.FileMode.Directory)
    chooser.setOption(QFileDialog.Option.ShowDirsOnly)
    if not chooser.exec() or not chooser.selectedFiles():
        return
    target = Path(chooser.selectedFiles()[0])

    def work(report: Callable[[int, str], None]):
        with open_store(folder, newer_read_only=True) as store:
            return export_every_chat(store, target, NEWER_EXPORT_FORMAT,
                                     lambda n, count, title: report(n, f"Exporting {title!r} ({n + 1} of {count})…"))

    outcome = run_with_progress("Exporting chats", f"Reading {folder / DB_NAME}…", 0, work)
    if isinstance(outcome, BaseException):
        _tell(QMessageBox.Icon.Critical, "failed", TITLE, f"Nothing was exported: {failure_text(outcome)}")
        return
    _tell(QMessageBox.Icon.Information, "exported", "Chats exported",
          f"{EXPORT_TITLES[NEWER_EXPORT_FORMAT]}.\n\n" + "\n\n".join(outcome.report()))


def _asked(why: str, name: str, label: str, help_text: str) -> bool:
    """The box saying why the chats cannot be opened, with `label`'s action beside Close: whether it was chosen."""
    box = QMessageBox(QMessageBox.Icon.Critical, TITLE, why)
    box.setObjectName(name)
    chosen = box.addButton(label, QMessageBox.ButtonRole.AcceptRole)
    chosen.setToolTip(help_text)
    box.setEscapeButton(box.addButton(QMessageBox.StandardButton.Close))
    box.exec()
    return box.clickedButton() is chosen


def _tell(icon: QMessageBox.Icon, name: str, title: str, text: str) -> None:
    box = QMessageBox(icon, title, text)
    box.setObjectName(name)
    box.exec()


def run_with_progress(title: str, text: str, steps: int, work: Callable[[Callable[[int, str], None]], Any]) -> Any:
    """`work(report)`'s result, or the error that stopped it: run on a thread of its own while a progress dialog
    (`steps` long; 0: as many as reported) shows what `report(n, text)` last said; the event loop runs meanwhile, so
    the dialog paints and moves. No Cancel: a recovery or export stopped half way leaves nothing better."""
    progress = QProgressDialog(text, "", 0, steps)
    progress.setWindowTitle(title)
    progress.setObjectName("progress")
    progress.setCancelButton(None)
    progress.setWindowModality(Qt.WindowModality.ApplicationModal)
    progress.setMinimumDuration(0)
    progress.setValue(0)
    runner = Runner(max_threads=1)
    outcome: list = []
    job = runner.submit(title, lambda running: work(lambda n, said: running.report((n, said))))

    def reported(step: tuple[int, str]) -> None:
        progress.setLabelText(step[1])
        progress.setValue(step[0])

    job.progress.connect(reported)
    job.succeeded.connect(outcome.append)
    job.failed.connect(outcome.append)
    wait = QEventLoop()
    job.finished.connect(wait.quit)
    if not job.done:
        wait.exec()
    progress.close()
    return outcome[0]
