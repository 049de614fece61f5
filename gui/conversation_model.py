"""The conversation's rows: a message, or a summary standing where the messages it archived were, in a list model."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from PySide6.QtCore import QAbstractListModel, QModelIndex, Qt, Signal

from ..core.model.messages import Message
from ..core.model.records import SummaryRecord
from ..core.storage.store import Versions
from .wording import fallback_sentence

RowRole = Qt.ItemDataRole.UserRole + 1


@dataclass
class Row:
    """One row of the flow: a message, or a summary standing where the messages it archived were."""

    message: Message | None = None
    record: SummaryRecord | None = None
    covered: int = 0  # a summary's: the messages it stands for (a fold's are its summaries' messages)
    expanded: bool = False
    # The chat's opening system message, its system prompt; a later one (a session or date marker) is conversation.
    opening: bool = False
    # Set while a reply streams into this row.
    streaming: bool = False
    error: str | None = None
    _key: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self._key = self.message.id if self.message is not None else f"summary:{self.record.id}"

    @property
    def key(self) -> str:
        return self._key

    @property
    def kind(self) -> str:
        if self.record is not None:
            return "summary"
        if self.message.role == "tool":
            return "tool_result"
        if self.message.tool_calls and not self.message.content.strip():
            return "tool_call"
        return self.message.role


def build_rows(messages: list[Message], active_records: list[SummaryRecord],
               archived_by: dict[str, str]) -> list[Row]:
    """The flow: each active summary once, where its first archived message was, then the visible messages."""
    records = {r.id: r for r in active_records}
    covered = Counter(archived_by.values())
    shown: set[str] = set()
    rows: list[Row] = []
    for message in messages:
        record_id = archived_by.get(message.id)
        if record_id is None or record_id not in records:
            rows.append(Row(message=message, opening=not rows and message.role == "system"))
        elif record_id not in shown:
            shown.add(record_id)
            rows.append(Row(record=records[record_id], covered=covered[record_id]))
    return rows


def row_index(rows: list[Row]) -> dict[str, int]:
    """Row number by key."""
    return {row.key: number for number, row in enumerate(rows)}


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

    def set_versions(self, versions: dict[str, Versions]) -> None:
        """The versions of regenerated replies (from the snapshot); rows whose versions changed are repainted."""
        previous, self._versions = self._versions, versions
        for key in previous.keys() | versions.keys():
            number = self._index.get(key)
            if number is not None and previous.get(key) != versions.get(key):
                self.dataChanged.emit(self.index(number), self.index(number))

    def versions_of(self, key: str) -> Versions | None:
        """A message's versions, if it has more than one (a regenerated reply)."""
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
