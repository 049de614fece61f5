"""Settings → Local model: a list of the models on this machine to pick from, Choose file… for any .gguf, and under
them the catalogue of recommended models to download (model_catalogue.py).

The list holds the built-in SmolLM2, the GGUF files in Precis's models folder (downloads) and in the folders of LM
Studio, Jan, GPT4All and llama.cpp's cache, and the models of an Ollama server when one answers
(core.providers.discovery). Looking for them touches the disk and the network, so it runs off the GUI thread: the
page shows at once and the list fills in. A model downloaded joins the list.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..core.models.catalogue import models_folder, size_text
from ..core.providers.discovery import DOWNLOADED, FoundModel, describe_gguf, find_local_models, ollama_server_url
from ..core.providers.local import MODEL_NAME, find_model_path
from .model_catalogue import ModelCatalogue
from .wording import failure_text
from .workers import Runner

BUILT_IN = "built in"
CHOSEN_FILE = "chosen file"
COLUMNS = ("Model", "Size", "Context window", "From")


def _find_models(downloads: Path) -> tuple[FoundModel, list[FoundModel]]:
    """(the built-in model described, every model found on this machine); runs on a worker."""
    return replace(describe_gguf(find_model_path(), BUILT_IN), name=MODEL_NAME), find_local_models(downloads=downloads)


class ModelPicker(QWidget):
    """The models to pick from. `chosen` carries the FoundModel picked: a GGUF file (source BUILT_IN for the
    built-in model) or an Ollama model (its base_url set)."""

    chosen = Signal(object)
    listed = Signal()  # the search for models has ended and the list is complete
    checked = Signal(object)  # a file from Choose file… was checked: the FoundModel (its `problem` says why not)

    def __init__(self, local: bool, path: str, served: tuple[str, str] | None = None,
                 parent: QWidget | None = None, models_dir: Path | None = None) -> None:
        """What is in use: the local model (`local`) from `path` ('' for the built-in one), or the model of a
        server, (base URL, model name), shown as picked if the Ollama server is found serving it. `models_dir` is
        the data folder's models folder (None: the one PRECIS_HOME or the user data folder holds)."""
        super().__init__(parent)
        models_dir = models_dir or models_folder()
        self._current_path = path
        self._current_served = served
        self._runner = Runner(parent=self)
        self.tree = QTreeWidget()
        self.tree.setAccessibleName("Models on this computer")
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.tree.header()
        header.setStretchLastSection(False)
        for column in range(1, len(COLUMNS)):  # "Context window" whole, not cut at a default width
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.tree.currentItemChanged.connect(lambda item, _before: item is not None and self._picked(item))
        self.status = QLabel("Looking for models in the folders of LM Studio, Jan, GPT4All and llama.cpp, and for "
                             f"an Ollama server at {ollama_server_url()}…")
        self.status.setObjectName("muted")
        self.status.setWordWrap(True)
        self.error = QLabel("")
        self.error.setObjectName("error")
        self.error.setWordWrap(True)
        self.error.hide()
        self.choose_button = QPushButton("Choose file…")
        self.choose_button.setToolTip("Use any GGUF model file on this computer")
        self.choose_button.clicked.connect(self.open_file_dialog)
        buttons = QHBoxLayout()
        buttons.addWidget(self.status, 1)
        buttons.addWidget(self.choose_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.tree, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.error)
        self.catalogue = ModelCatalogue(models_dir)
        self.catalogue.downloaded.connect(self._downloaded)
        layout.addWidget(self.catalogue)  # as tall as its rows; the list above takes the rest and scrolls
        built_in = self._add(FoundModel(source=BUILT_IN, name=MODEL_NAME))
        if local and not path:
            self._show_picked(built_in)
        elif local:
            self._show_picked(self._add(describe_gguf(Path(path), CHOSEN_FILE)))
        job = self._runner.submit("find local models", lambda _job: _find_models(models_dir))
        job.succeeded.connect(self._fill)
        job.failed.connect(self._not_found)

    # ---- the list ---------------------------------------------------------------------------------------------
    def models(self) -> list[FoundModel]:
        return [self.tree.topLevelItem(row).data(0, Qt.ItemDataRole.UserRole) for row in range(self.tree.topLevelItemCount())]

    def selected(self) -> FoundModel | None:
        item = self.tree.currentItem()
        return None if item is None else item.data(0, Qt.ItemDataRole.UserRole)

    def _add(self, model: FoundModel, row: int | None = None) -> QTreeWidgetItem:
        item = QTreeWidgetItem()
        self._show(item, model)
        if row is None:
            self.tree.addTopLevelItem(item)
        else:
            self.tree.insertTopLevelItem(row, item)
        return item

    @staticmethod
    def _show(item: QTreeWidgetItem, model: FoundModel) -> None:
        item.setData(0, Qt.ItemDataRole.UserRole, model)
        context = f"{model.context_length:,} tokens" if model.context_length else ""
        for column, text in enumerate((model.name, size_text(model.size), context, model.source)):
            item.setText(column, text)
        if model.problem:
            item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled & ~Qt.ItemFlag.ItemIsSelectable)
        item.setToolTip(0, model.problem or (str(model.path) if model.path is not None else model.base_url or ""))

    def _item_for(self, model: FoundModel) -> QTreeWidgetItem | None:
        for row in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(row)
            held: FoundModel = item.data(0, Qt.ItemDataRole.UserRole)
            if model.path is not None and held.path is not None and _same_file(held.path, model.path):
                return item
            if model.base_url and (held.base_url, held.name) == (model.base_url, model.name):
                return item
        return None

    def _fill(self, found: tuple[FoundModel, list[FoundModel]]) -> None:
        built_in, models = found
        self._show(self.tree.topLevelItem(0), built_in)  # now with its size and window
        for row, model in enumerate(models, start=1):
            item = self._item_for(model)
            if item is not None:  # the file in use, shown before it was found: now under the app it belongs to
                self._show(item, model)
                continue
            item = self._add(model, row)
            if self._current_served == (model.base_url, model.name):
                self._show_picked(item)
        on_disk = sum(m.path is not None for m in models)
        served = len(models) - on_disk
        parts = [f"{on_disk} GGUF file{'s' * (on_disk != 1)} in the folders of LM Studio, Jan, GPT4All and llama.cpp"]
        if served:
            parts.append(f"{served} model{'s' * (served != 1)} of the Ollama server at {ollama_server_url()}")
        self.status.setText("Found " + " and ".join(parts) + ".")
        self.listed.emit()

    def _downloaded(self, path: Path) -> None:
        """A catalogue download finished: listed with the rest, after the built-in model, ready to pick."""
        if self._item_for(FoundModel(source=DOWNLOADED, name=path.stem, path=path)) is None:
            self._add(describe_gguf(path, DOWNLOADED), 1)

    def _not_found(self, error: BaseException) -> None:
        self.status.setText(failure_text(error, "look for models"))
        self.listed.emit()

    # ---- picking ----------------------------------------------------------------------------------------------
    def _picked(self, item: QTreeWidgetItem) -> None:
        model: FoundModel = item.data(0, Qt.ItemDataRole.UserRole)
        if model.problem:
            return
        self.error.hide()
        self.chosen.emit(model)

    def _show_picked(self, item: QTreeWidgetItem) -> None:
        """Select what is already in use (not a new pick)."""
        self.tree.blockSignals(True)
        self.tree.setCurrentItem(item)
        self.tree.blockSignals(False)

    def open_file_dialog(self) -> QFileDialog:
        """Choose file…: a file dialog for .gguf files, shown without blocking; the file picked is checked."""
        start = str(Path(self._current_path).parent) if self._current_path else str(Path.home())
        dialog = QFileDialog(self, "Choose a GGUF model file", start, "GGUF models (*.gguf);;All files (*)")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(self.choose_file)
        dialog.open()
        return dialog

    def choose_file(self, path: str) -> None:
        """Check the file's header off the GUI thread; a model is added and picked, anything else is refused with
        the reason naming the file (the model picked before stays)."""
        self.error.hide()
        job = self._runner.submit("check the model file", lambda _job: describe_gguf(Path(path), CHOSEN_FILE))
        job.succeeded.connect(self._checked)

    def _checked(self, model: FoundModel) -> None:
        if model.problem:
            self.error.setText(f"Not used: {model.problem}")
            self.error.show()
        else:
            self.tree.setCurrentItem(self._item_for(model) or self._add(model))
        self.checked.emit(model)


def _same_file(one: Path, other: Path) -> bool:
    try:
        return one.resolve() == other.resolve()
    except OSError:
        return one == other
