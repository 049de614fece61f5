"""The catalogue under the local-model picker: recommended models with their download size, memory, context window,
licence and measured answer rate, a Download button each, and the download's progress, speed and time left, paused
and resumed with the same button. Every download runs on a worker (core.models.download); the window never waits.
Nothing is fetched unless a button is clicked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..core.models.catalogue import (
    UNVERIFIED,
    CatalogueEntry,
    OnDisk,
    answer_rate_text,
    on_disk,
    read_catalogue,
    size_text,
)
from ..core.models.download import DownloadError, HubUnreachable, Paused, Progress, download, offline_reason
from .wording import failure_text
from .workers import Job, Runner

COLUMNS = ("Recommended model", "Download", "Memory", "Context", "Licence", "Answers right", "Status", "")
LICENCE_COLUMN, STATE_COLUMN, BUTTON_COLUMN = 4, 6, 7
# A licence's name wraps past this many average characters: on one line the longest took a third of a 1000-pixel
# dialog and pushed the Download buttons out of sight.
LICENCE_CHARACTERS = 22


@dataclass(frozen=True)
class _Outcome:
    path: Path | None = None
    paused: str | None = None
    error: DownloadError | None = None


def _run_download(entry: CatalogueEntry, folder: Path, job: Job) -> _Outcome:
    try:
        return _Outcome(path=download(entry, folder, on_progress=job.report, should_stop=lambda: job.cancelled))
    except Paused as exc:
        return _Outcome(paused=str(exc))
    except DownloadError as exc:
        return _Outcome(error=exc)


def progress_text(progress: Progress) -> str:
    if progress.checking:
        return "checking…"
    share = f"{progress.done / progress.total:.0%}" if progress.total else ""
    parts = [share, f"{size_text(progress.done)} of {size_text(progress.total)}"]
    if progress.bytes_per_second:
        parts.append(f"{size_text(int(progress.bytes_per_second))}/s")
    left = progress.seconds_left
    if left is not None:
        parts.append(f"{int(left // 60)} min {int(left % 60):02d} s left" if left >= 60 else f"{int(left)} s left")
    return " · ".join(parts)


class ModelCatalogue(QWidget):
    """`downloaded` carries the path of a model whose download has finished and been checked."""

    downloaded = Signal(object)

    def __init__(self, folder: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.folder = folder
        self._runner = Runner(parent=self)
        self._jobs: dict[str, Job] = {}
        self._items: dict[str, QTreeWidgetItem] = {}
        self.buttons: dict[str, QPushButton] = {}
        self.tree = QTreeWidget()
        self.tree.setAccessibleName("Recommended models")
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setRootIsDecorated(False)
        self.tree.setWordWrap(True)  # a long licence takes two lines rather than losing "(non-commercial)"
        header = self.tree.header()
        header.setStretchLastSection(False)
        for column in range(len(COLUMNS)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(STATE_COLUMN, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(LICENCE_COLUMN, QHeaderView.ResizeMode.Interactive)
        self.status = QLabel("")
        self.status.setObjectName("muted")
        self.status.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.status)
        self.entries = read_catalogue()
        off = offline_reason()
        for entry in self.entries:
            self._add(entry)
        self.status.setText(f"Downloads are unavailable: {off}. Everything else works." if off else
                            "Download fetches a model from the Hugging Face hub into " f"{folder}; nothing is "
                            "fetched otherwise.")
        for button in self.buttons.values():
            button.setEnabled(off is None)
        self._fit_rows()
        job = self._runner.submit("look for catalogue models on disk",
                                  lambda _job: {e.name: on_disk(e, folder) for e in self.entries})
        job.succeeded.connect(self._show_disk)

    def _add(self, entry: CatalogueEntry) -> None:
        item = QTreeWidgetItem()
        context = f"{entry.context_window:,} tokens" if entry.context_window else UNVERIFIED
        for column, text in enumerate((entry.title, size_text(entry.download_bytes) or UNVERIFIED,
                                       size_text(entry.memory_bytes) or UNVERIFIED, context, entry.licence,
                                       answer_rate_text(entry.answer_rate))):
            item.setText(column, text)
        item.setToolTip(0, f"{entry.repo}/{entry.file}\nFigures from {entry.source}")
        item.setToolTip(LICENCE_COLUMN, entry.licence)
        item.setData(0, Qt.ItemDataRole.UserRole, entry)
        self.tree.addTopLevelItem(item)
        button = QPushButton("Download")
        button.clicked.connect(lambda _checked=False, name=entry.name: self.toggle(name))
        cell = QWidget()  # the button keeps its height, centred, in a row a two-line licence makes taller
        cell_layout = QVBoxLayout(cell)
        cell_layout.setContentsMargins(0, 0, 0, 0)
        cell_layout.addWidget(button, 0, Qt.AlignmentFlag.AlignVCenter)
        self.tree.setItemWidget(item, BUTTON_COLUMN, cell)
        self._items[entry.name] = item
        self.buttons[entry.name] = button

    def _fit_rows(self) -> None:
        """The licence column's width capped; the list as tall as its rows, so every model shows without scrolling
        (the picker's list above takes the height left)."""
        metrics = self.tree.fontMetrics()
        width = min(max((metrics.horizontalAdvance(e.licence) for e in self.entries), default=0),
                    metrics.averageCharWidth() * LICENCE_CHARACTERS)
        self.tree.setColumnWidth(LICENCE_COLUMN, width + 12)
        for entry in self.entries:  # the tree does not measure wrapped text: a licence that wraps says how tall
            lines = metrics.boundingRect(0, 0, width, 0, Qt.TextFlag.TextWordWrap, entry.licence).height()
            self._items[entry.name].setSizeHint(LICENCE_COLUMN, QSize(width, lines + 6))
        self.tree.setSizeAdjustPolicy(QAbstractScrollArea.SizeAdjustPolicy.AdjustToContents)

    def _show_state(self, name: str, text: str, details: str = "") -> None:
        """The Status column's text (cut to the column when long), whole or with `details` in its tooltip."""
        item = self._items[name]
        item.setText(STATE_COLUMN, text)
        item.setToolTip(STATE_COLUMN, details or text)

    def _show_disk(self, states: dict[str, OnDisk]) -> None:
        for name, disk in states.items():
            if name in self._jobs:
                continue
            if disk.path is not None:
                self._show_done(name)
            elif disk.partial_bytes:
                self._show_state(name, f"paused at {size_text(disk.partial_bytes)}")
                self.buttons[name].setText("Resume")

    def _show_done(self, name: str) -> None:
        self._show_state(name, "downloaded")
        self.buttons[name].setText("Downloaded")
        self.buttons[name].setEnabled(False)

    # ---- downloading ------------------------------------------------------------------------------------------
    def toggle(self, name: str) -> None:
        """Download (or resume) the model, or pause its download under way."""
        job = self._jobs.get(name)
        if job is not None:
            job.cancel()
            self.buttons[name].setText("Pausing…")
            self.buttons[name].setEnabled(False)
            return
        entry = next(e for e in self.entries if e.name == name)
        job = self._runner.submit(f"download {name}", lambda job: _run_download(entry, self.folder, job))
        self._jobs[name] = job
        self.buttons[name].setText("Pause")
        self._show_state(name, "asking the hub…")
        job.progress.connect(lambda progress: self._show_state(name, progress_text(progress)))
        job.succeeded.connect(lambda outcome: self._ended(name, outcome))
        # A DownloadError comes back as an outcome: what fails the job is anything else (a full disk, a fault).
        job.failed.connect(lambda error: self._ended(name, _Outcome(error=DownloadError(failure_text(error)))))

    def _ended(self, name: str, outcome: _Outcome) -> None:
        del self._jobs[name]
        item, button = self._items[name], self.buttons[name]
        button.setEnabled(True)
        if outcome.path is not None:
            self._show_done(name)
            self.status.setText(f"Downloaded {item.text(0)}: it is in the list above, ready to pick.")
            self.downloaded.emit(outcome.path)
            return
        partial = on_disk(item.data(0, Qt.ItemDataRole.UserRole), self.folder).partial_bytes
        button.setText("Resume" if partial else "Download")
        if outcome.paused is not None:
            self._show_state(name, f"paused at {size_text(partial)}")
            return
        self._show_state(name, "stopped" if partial else "not downloaded", str(outcome.error))
        if isinstance(outcome.error, HubUnreachable):
            self.status.setText(f"The hub cannot be reached, so downloads are unavailable for now ({outcome.error}). "
                                "Everything else works.")
        else:
            self.status.setText(f"Not downloaded: {outcome.error}")

    @property
    def busy(self) -> bool:
        return bool(self._jobs)

    def pause_all(self) -> None:
        """Pause every download (the dialog is closing): each keeps what it has, to resume next time."""
        self._runner.cancel_all()
