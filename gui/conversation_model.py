"""The conversation's rows: a message, or a summary standing where the messages it archived were, in a list model."""

from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QModelIndex, Qt, Signal

from ..core.chat.rows import Row, can_switch_version, row_index
from ..core.chat.snapshot import ReplyResult
from ..core.model.messages import Message
from ..core.storage.store import Versions
from .wording import fallback_sentence, spoken_row

RowRole = Qt.ItemDataRole.UserRole + 1


class ConversationModel(QAbstractListModel):
    # New text in a row that is streaming. Not dataChanged: QListView answers that by laying out every row again,
    # which a 10,000-message chat cannot afford 20 times a second. The view repaints the row; its delegate asks for
    # a relayout only when the row's height changes.
    row_streamed = Signal(int)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._rows: list[Row] = []
        self._index: dict[str, int] = {}
        self._versions: dict[str, Versions] = {}

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        if role == RowRole:
            return row
        if role == Qt.ItemDataRole.DisplayRole:
            return row.message.content if row.message is not None else row.record.text
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return spoken_row(row, self.versions_of(row.key) if row.message is not None else None)
        if role == Qt.ItemDataRole.ToolTipRole and row.record is not None and row.record.fallback_used:
            return fallback_sentence(row.record)  # what the card's "fallback" badge means
        return None

    def rows(self) -> list[Row]:
        return self._rows

    def row_at(self, number: int) -> Row:
        return self._rows[number]

    def set_rows(self, rows: list[Row], index: dict[str, int] | None = None) -> None:
        """Show these rows; `index`: their row_index, if made already (off the GUI thread)."""
        self.beginResetModel()
        self._rows = rows
        self._index = row_index(rows) if index is None else index
        self.endResetModel()

    def append(self, row: Row) -> None:
        position = len(self._rows)
        self.beginInsertRows(QModelIndex(), position, position)
        self._rows.append(row)
        self._index[row.key] = position
        self.endInsertRows()

    def row_of(self, key: str) -> int | None:
        return self._index.get(key)

    def row_index(self) -> dict[str, int]:
        """Each row's key -> its position."""
        return self._index

    def update_message(self, message: Message, *, streaming: bool | None = None, error: str | None = None) -> None:
        """Replace one message's row in place (streamed text, pin, edit): only that row is repainted."""
        number = self._index.get(message.id)
        if number is None:
            return
        row = self._rows[number]
        still_streaming = row.streaming and streaming is True and error is None and row.error is None
        row.message = message
        if streaming is not None:
            row.streaming = streaming
        row.error = error
        if still_streaming:
            self.row_streamed.emit(number)
            return
        index = self.index(number)
        self.dataChanged.emit(index, index)

    def end_reply(self, result: ReplyResult) -> None:
        """A reply's row as it ended, marked with what went wrong; with no reply kept (nothing arrived), the row shows
        what is in its place again: a regenerated reply's earlier text, else nothing (the row goes)."""
        if result.kept:
            self.update_message(result.message, streaming=False, error=result.failure)
        elif result.snapshot.messages and result.snapshot.messages[-1].id == result.message.id:
            self.update_message(result.message, streaming=False)
        elif (number := self._index.get(result.message.id)) is not None:
            self.remove_from(number)

    def set_waiting(self, message_id: str, text: str) -> None:
        """What a streaming row shows until its first text: the wait, in words."""
        number = self._index.get(message_id)
        if number is not None and self._rows[number].streaming:
            self._rows[number].waiting = text
            self.row_streamed.emit(number)

    def set_versions(self, versions: dict[str, Versions]) -> None:
        """The versions of regenerated replies and edited messages (from the snapshot); rows whose versions changed
        are repainted."""
        previous, self._versions = self._versions, versions
        for key in previous.keys() | versions.keys():
            number = self._index.get(key)
            if number is not None and previous.get(key) != versions.get(key):
                self.dataChanged.emit(self.index(number), self.index(number))

    def can_switch(self, number: int) -> bool:
        """Whether the message of this row can show another version (the core's rule, can_switch_version)."""
        message = self._rows[number].message
        later = (row.message.role if row.message is not None else "summary" for row in self._rows[number + 1:])
        return message is not None and can_switch_version(message.role, later)

    def versions_of(self, key: str) -> Versions | None:
        """A message's versions, if it has more than one (a regenerated reply, an edited message)."""
        versions = self._versions.get(key)
        return versions if versions is not None and len(versions.texts) > 1 else None

    def remove_from(self, number: int) -> None:
        """Drop rows from `number` to the end (edit-and-resend, regenerate)."""
        if number >= len(self._rows):
            return
        self.beginRemoveRows(QModelIndex(), number, len(self._rows) - 1)
        for row in self._rows[number:]:
            self._index.pop(row.key, None)
        del self._rows[number:]
        self.endRemoveRows()

    def toggle_expanded(self, number: int) -> None:
        row = self._rows[number]
        row.expanded = not row.expanded
        index = self.index(number)
        self.dataChanged.emit(index, index)
