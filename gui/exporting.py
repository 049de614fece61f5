"""File → Export…: the open chat written in one of the command line's export formats, off the GUI thread."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QWidget

from ..core.storage.export_folder import file_name_for
from ..core.storage.exporters import (
    EXPORT_FORMATS,
    EXPORT_SUFFIXES,
    EXPORT_TITLES,
    export_chat,
    redacted_words,
    write_export,
)
from .controller import ChatController
from .feedback import Feedback
from .status import StatusLine
from .wording import failure_text
from .workers import Job

# The file dialog's filters, in the order offered; Markdown (for a person to read) first.
FILTERS = {f"{EXPORT_TITLES[fmt]} (*{EXPORT_SUFFIXES[fmt]})": fmt
           for fmt in sorted(EXPORT_FORMATS, key=lambda fmt: fmt != "md")}


def format_for(path: str, chosen_filter: str) -> str:
    """The format a file name's ending names (.md, .jsonl, .json), else the one chosen in the dialog."""
    by_suffix = {suffix: fmt for fmt, suffix in EXPORT_SUFFIXES.items()}
    return by_suffix.get(Path(path).suffix.lower(), FILTERS.get(chosen_filter, "md"))


def choose_export(parent: QWidget, chat: ChatController, title: str, feedback: Feedback,
                  status: StatusLine) -> QFileDialog | None:
    """Ask where to write the open chat, titled `title` (the dialog's filter picks the format), and export it."""
    session = chat.session
    if session is None:
        feedback.hint_error("Open a chat to export it.")
        return None
    dialog = QFileDialog(parent, "Export the chat")
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
    dialog.setNameFilters(list(FILTERS))
    dialog.selectFile(file_name_for(title, "md"))
    # Choosing another format changes the ending of the name in the box to match.
    dialog.filterSelected.connect(lambda chosen: dialog.selectFile(
        Path(dialog.selectedFiles()[0]).with_suffix(EXPORT_SUFFIXES[FILTERS[chosen]]).name))
    dialog.fileSelected.connect(lambda path: export_to(chat, session.chat_id, path,
                                                       format_for(path, dialog.selectedNameFilter()), feedback,
                                                       status))
    dialog.open()
    return dialog


def export_to(chat: ChatController, chat_id: str, path: str, fmt: str, feedback: Feedback, status: StatusLine) -> Job:
    """Write the chat to `path` off the GUI thread: whole or not at all; the status bar says where it went, and a
    failure says why in the composer's hint line. It says how many secrets were redacted, if any."""
    store = chat.store

    def write(_job: Job) -> int:
        exported = export_chat(store, chat_id, fmt)
        write_export(exported.pieces, path)
        return exported.redacted

    def written(redacted: int) -> None:
        told = f"; {redacted_words(redacted)}" if redacted else ""
        status.tell(f"Exported as {EXPORT_TITLES[fmt]} to {path}{told}.", 15_000)

    return chat.run("export", write, f"Exporting to {path}…", written,
                    lambda error: feedback.hint_error(f"Export failed: {failure_text(error)}"))
