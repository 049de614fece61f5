"""The conversation: a virtualized list (model + painting delegate) that stays smooth with 10,000 messages.

Only visible rows are rendered. A row's height is estimated cheaply from its text until it is first painted, then
the measured height replaces the estimate (changes are batched into one relayout). Rendered documents are kept in
a small LRU cache keyed by message id and checked against the frozen Message object, so a streamed reply only
re-renders its own row.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from PySide6.QtCore import QAbstractListModel, QEvent, QModelIndex, QPoint, QRect, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QGuiApplication,
    QPainter,
    QPainterPath,
    QPen,
    QTextCursor,
)
from PySide6.QtWidgets import QAbstractItemView, QListView, QMenu, QStyle, QStyledItemDelegate

from ..core.model.messages import Message
from ..core.model.records import SummaryRecord
from . import theme
from .markdown import CODE_CHIP_GUTTER, is_code_block, markdown_document, monospace_font, plain_document, summary_markdown

RowRole = Qt.ItemDataRole.UserRole + 1
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

MARGIN_X = 18
# The chat column's widest card: lines stay readable on a wide screen; the column is centred.
READING_WIDTH = 800
MARGIN_Y = 5
PAD_X = 14
PAD_Y = 9
HEADER_H = 20
TOOL_MARGIN_Y = 3
TOOL_PAD_Y = 6
TOOL_INDENT = 24
EXPANDED_TOOL_LINES = 400
SUMMARY_PREVIEW_LINES = 3
DOC_CACHE_SIZE = 300
STREAM_RELAYOUT_MS = 250


@dataclass
class Row:
    """One row of the flow: a message, or a summary standing where the messages it archived were."""

    message: Message | None = None
    record: SummaryRecord | None = None
    expanded: bool = False
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
    shown: set[str] = set()
    rows: list[Row] = []
    for message in messages:
        record_id = archived_by.get(message.id)
        if record_id is None or record_id not in records:
            rows.append(Row(message=message))
        elif record_id not in shown:
            shown.add(record_id)
            rows.append(Row(record=records[record_id]))
    return rows


class ConversationModel(QAbstractListModel):
    # New text in a row that is streaming. Not dataChanged: QListView answers that by laying out every row again,
    # which a 10,000-message chat cannot afford 20 times a second. The view repaints the row; its delegate asks for
    # a relayout only when the row's height changes.
    row_streamed = Signal(int)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._rows: list[Row] = []
        self._index: dict[str, int] = {}

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
        return None

    def rows(self) -> list[Row]:
        return self._rows

    def row_at(self, number: int) -> Row:
        return self._rows[number]

    def set_rows(self, rows: list[Row]) -> None:
        self.beginResetModel()
        self._rows = rows
        self._index = {row.key: i for i, row in enumerate(rows)}
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


def _call_subject(arguments: dict) -> str:
    shown = arguments.get("command") or arguments.get("path") or arguments.get("file_path") or arguments.get("pattern")
    if shown is None:
        shown = json.dumps(arguments, ensure_ascii=False) if arguments else ""
    return str(shown)


def _tool_call_line(message: Message) -> str:
    """One line per call: tool name and its main argument."""
    lines = []
    for call in message.tool_calls:
        subject = _call_subject(call.arguments).strip().replace("\n", " ⏎ ")
        lines.append(f"{call.name}  {subject}".rstrip())
    return "\n".join(lines)


def _tool_call_details(message: Message) -> str:
    return "\n\n".join(
        f"{call.name}\n{json.dumps(call.arguments, ensure_ascii=False, indent=2)}" for call in message.tool_calls)


def clean_output(text: str) -> str:
    """Terminal output as plain lines: CR/LF normalised, backspaces and other control characters dropped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _CONTROL.search(text):
        text = _CONTROL.sub("", text)
    return text.strip("\n")


def _first_line_and_count(text: str) -> tuple[str, int]:
    """The first non-blank line of a tool output (cleaned) and its number of lines, without copying it all."""
    stripped = text.strip()
    total = stripped.count("\n") + 1 if stripped else 0
    for line in stripped[:2000].splitlines():
        line = _CONTROL.sub("", line).strip()
        if line:
            return line, total
    return "(no output)", total


def _first_lines(text: str, count: int) -> tuple[str, int]:
    """The first `count` lines of text, and how many lines there are in all."""
    total = text.count("\n") + 1
    if total <= count:
        return text, total
    end = -1
    for _ in range(count):
        end = text.find("\n", end + 1)
    return text[:end], total


class MessageDelegate(QStyledItemDelegate):
    """Paints rows as cards with a role header; tool calls/results as compact, expandable lines."""

    copied = Signal(str)
    toggled = Signal(int)

    def __init__(self, view: QListView) -> None:
        super().__init__(view)
        self._view = view
        self._docs: OrderedDict[tuple, tuple[object, object, list[tuple[QRectF, str]]]] = OrderedDict()
        self._heights: dict[str, tuple[object, int, bool, int, bool]] = {}
        self._pending_resize: set[int] = set()
        self._relayout = QTimer(self)
        self._relayout.setSingleShot(True)
        self._relayout.timeout.connect(self._emit_size_changes)
        self._width = 0
        # The row being streamed: ((key, width), its plain document, the text in it).
        self._stream: tuple[tuple[str, int], object, str] | None = None
        self.update_fonts(view.font())

    def restyle(self) -> None:
        """Forget the laid-out documents (they carry the old scheme's code background) and repaint."""
        self._docs.clear()
        self._stream = None
        self._view.viewport().update()

    def update_fonts(self, font: QFont) -> None:
        self.body_font = QFont(font)
        self.header_font = QFont(font)
        self.header_font.setPointSizeF(font.pointSizeF() * 0.85)
        self.header_font.setBold(True)
        self.mono_font = monospace_font(font.pointSizeF() * 0.9)
        metrics = QFontMetrics(self.body_font)
        self._line_h = metrics.lineSpacing()
        self._char_w = max(1.0, metrics.averageCharWidth() * 1.05)
        mono_metrics = QFontMetrics(self.mono_font)
        self._mono_line_h = mono_metrics.lineSpacing()
        self._mono_char_w = max(1.0, mono_metrics.averageCharWidth())
        self._heights.clear()
        self._docs.clear()

    # --- geometry -------------------------------------------------------------------------------------------
    def _text_width(self) -> int:
        return max(120, min(self._view.viewport().width() - 2 * MARGIN_X, READING_WIDTH) - 2 * PAD_X)

    def _reading_inset(self) -> int:
        """How far each side the column is narrowed to READING_WIDTH on a wide viewport."""
        return max(0, (self._view.viewport().width() - 2 * MARGIN_X - READING_WIDTH) // 2)

    def _body(self, row: Row) -> tuple[str, bool, int]:
        """(text to render, monospace plain text?, lines hidden) for a row in its current state."""
        kind = row.kind
        if kind == "summary":
            record = row.record
            text = record.text
            if row.expanded and record.key_points:
                text += "\n\n" + "\n".join(f"- {point}" for point in record.key_points)
            if not row.expanded:
                text, total = _first_lines(text, SUMMARY_PREVIEW_LINES)
                return summary_markdown(text), False, max(0, total - SUMMARY_PREVIEW_LINES)
            return summary_markdown(text), False, 0
        message = row.message
        if kind == "tool_call":
            return _tool_call_details(message), True, 0
        if kind == "tool_result":
            text, total = _first_lines(clean_output(message.content) or "(no output)", EXPANDED_TOOL_LINES)
            return text, True, max(0, total - EXPANDED_TOOL_LINES)
        text = message.content
        if message.tool_calls:
            text += "\n\n" + "\n\n".join(f"`→ {line}`" for line in _tool_call_line(message).splitlines())
        if row.error:
            text = (text + "\n\n" if text else "") + f"**Error:** {row.error}"
        if not text and row.streaming:
            text = "…"
        return text, False, 0

    def _estimate(self, text: str, mono: bool, width: int) -> int:
        char_w = self._mono_char_w if mono else self._char_w
        line_h = self._mono_line_h if mono else self._line_h
        per_line = max(1, int(width / char_w))
        lines = 0
        for line in text.split("\n"):
            lines += max(1, math.ceil(len(line) / per_line)) if not mono else 1
        extra = text.count("```") * line_h // 2 if not mono else 0
        return lines * line_h + extra

    def _chrome(self, row: Row, hidden: int) -> int:
        """Height of everything around the body: margins, padding, header and the 'more' line."""
        if row.kind in ("tool_call", "tool_result"):
            return 2 * TOOL_MARGIN_Y + 2 * TOOL_PAD_Y + (self._line_h if hidden else 0)
        return 2 * MARGIN_Y + 2 * PAD_Y + HEADER_H + (self._line_h if hidden else 0)

    def sizeHint(self, option, index: QModelIndex) -> QSize:  # noqa: N802
        row: Row = index.data(RowRole)
        width = self._text_width()
        if width != self._width:
            self._width = width
            self._heights.clear()
        subject = row.message if row.message is not None else row.record
        cached = self._heights.get(row.key)
        if cached is not None and cached[0] is subject and cached[2] == row.expanded and cached[4] == row.streaming:
            return QSize(width, cached[3])
        if row.kind in ("tool_call", "tool_result") and not row.expanded:
            height = self._mono_line_h + self._chrome(row, 0)
        elif row.streaming and row.message is not None and not row.error:
            doc = self._streaming_document(row, width)[0]
            height = math.ceil(doc.size().height()) + self._chrome(row, 0)
        else:
            text, mono, hidden = self._body(row)
            height = self._estimate(text, mono, width - TOOL_INDENT) + self._chrome(row, hidden)
        self._heights[row.key] = (subject, width, row.expanded, height, row.streaming)
        return QSize(width, height)

    def _streaming_document(self, row: Row, width: int):
        """A reply being streamed, as plain text appended to one document: each flush costs what arrived, not
        the whole reply (it becomes Markdown once, when it is complete)."""
        text = row.message.content or "…"
        previous = self._stream[2] if self._stream is not None else ""
        tail = previous[-64:]
        if (self._stream is not None and self._stream[0] == (row.key, width) and len(text) >= len(previous)
                and text.startswith(tail, len(previous) - len(tail))):
            doc = self._stream[1]
            if len(text) > len(previous):
                cursor = QTextCursor(doc)
                cursor.movePosition(QTextCursor.MoveOperation.End)
                cursor.insertText(text[len(previous):])
        else:
            doc = plain_document(text, self.body_font, width)
        self._stream = ((row.key, width), doc, text)
        return doc, [], 0

    def _document(self, row: Row, width: int):
        if row.streaming and row.message is not None and not row.error:
            return self._streaming_document(row, width)
        text, mono, hidden = self._body(row)
        subject = row.message if row.message is not None else row.record
        key = (row.key, width, row.expanded, row.error)
        cached = self._docs.get(key)
        if cached is not None and cached[0] is subject and not row.streaming:
            self._docs.move_to_end(key)
            return cached[1], cached[2], hidden
        if mono:
            doc = plain_document(text, self.mono_font, width)
        else:
            doc = markdown_document(text, self.body_font, width)
        chips = self._code_chips(doc) if not mono else []
        self._docs[key] = (subject, doc, chips)
        if len(self._docs) > DOC_CACHE_SIZE:
            self._docs.popitem(last=False)
        return doc, chips, hidden

    def _code_chips(self, doc) -> list[tuple[QRectF, str]]:
        """Where each code block's Copy chip goes (document coordinates) and the code it copies."""
        chips = []
        layout = doc.documentLayout()
        block = doc.begin()
        run: list[str] = []
        top = None
        chip_left = doc.textWidth() - CODE_CHIP_GUTTER + 4  # in the code block's right gutter
        while block.isValid():
            if is_code_block(block):
                if not run:
                    top = layout.blockBoundingRect(block)
                run.append(block.text())
            elif run:
                chips.append((QRectF(chip_left, top.top() + 1, 44, 16), "\n".join(run)))
                run = []
            block = block.next()
        if run:
            chips.append((QRectF(chip_left, top.top() + 1, 44, 16), "\n".join(run)))
        return chips

    def _remember_height(self, row: Row, number: int, height: int) -> None:
        subject = row.message if row.message is not None else row.record
        cached = self._heights.get(row.key)
        if cached is not None and cached[0] is subject and cached[3] == height and cached[2] == row.expanded:
            return
        self._heights[row.key] = (subject, self._width, row.expanded, height, row.streaming)
        self._pending_resize.add(number)
        # A relayout walks every row of the list: a growing streamed reply asks for one at most every
        # STREAM_RELAYOUT_MS (its text is clipped to the old height meanwhile), other changes at once.
        if not row.streaming:
            self._relayout.start(0)
        elif not self._relayout.isActive():
            self._relayout.start(STREAM_RELAYOUT_MS)

    def _emit_size_changes(self) -> None:
        rows, self._pending_resize = self._pending_resize, set()
        model = self._view.model()
        for number in sorted(rows):
            if number < model.rowCount():
                self.sizeHintChanged.emit(model.index(number))

    # --- painting -------------------------------------------------------------------------------------------
    def paint(self, painter: QPainter, option, index: QModelIndex) -> None:
        row: Row = index.data(RowRole)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        if row.kind in ("tool_call", "tool_result"):
            self._paint_tool(painter, option, index, row)
        else:
            self._paint_card(painter, option, index, row)
        painter.restore()

    def _card_rect(self, option) -> QRect:
        inset = self._reading_inset()
        return option.rect.adjusted(MARGIN_X + inset, MARGIN_Y, -MARGIN_X - inset, -MARGIN_Y)

    def _paint_card(self, painter: QPainter, option, index: QModelIndex, row: Row) -> None:
        kind = row.kind
        width = self._text_width()
        doc, chips, hidden = self._document(row, width)
        body_h = math.ceil(doc.size().height())
        wanted = body_h + self._chrome(row, hidden)
        self._remember_height(row, index.row(), wanted)

        card = self._card_rect(option)
        background = {
            "user": theme.current.user_bubble, "assistant": theme.current.assistant_bubble, "system": theme.current.system_bubble,
            "summary": theme.current.summary_bubble,
        }.get(kind, theme.current.assistant_bubble)
        path = QPainterPath()
        path.addRoundedRect(QRectF(card), 10, 10)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        painter.fillPath(path, QColor(background))
        painter.setPen(QPen(QColor(theme.current.accent if selected else theme.current.border), 1.5 if selected else 1))
        painter.drawPath(path)

        # Header: role, time, badges.
        colour = QColor(theme.current.role_colours.get("summary" if kind == "summary" else row.message.role, theme.current.muted))
        header = QRect(card.left() + PAD_X, card.top() + PAD_Y - 2, card.width() - 2 * PAD_X, HEADER_H)
        painter.setFont(self.header_font)
        badges = self._badges(row)
        metrics = QFontMetrics(self.header_font)
        # The title gives way to the time and badges on a narrow card: elided, never drawn under them.
        title_width = header.width() - (metrics.horizontalAdvance(badges) + 12 if badges else 0)
        title = metrics.elidedText(self._title(row), Qt.TextElideMode.ElideRight, max(0, title_width))
        painter.setPen(colour)
        painter.drawText(header, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, title)
        painter.setPen(QColor(theme.current.muted))
        painter.drawText(header, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, badges)

        painter.translate(card.left() + PAD_X, card.top() + PAD_Y + HEADER_H)
        # Draw only what the viewport shows: a long row costs what is visible, not its whole length.
        top = card.top() + PAD_Y + HEADER_H
        first_y = max(0, -top)
        last_y = min(doc.size().height(), self._view.viewport().height() - top)
        doc.drawContents(painter, QRectF(0, first_y, width, max(0, last_y - first_y)))
        painter.setFont(self.header_font)
        for rect, _code in chips:
            painter.setPen(QPen(QColor(theme.current.border)))
            painter.setBrush(QColor(theme.current.surface))
            painter.drawRoundedRect(rect, 4, 4)
            painter.setPen(QColor(theme.current.muted))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, "Copy")
        if hidden:
            painter.setPen(QColor(theme.current.accent))
            painter.setFont(self.body_font)
            painter.drawText(QRectF(0, body_h, width, self._line_h), Qt.AlignmentFlag.AlignLeft,
                             f"Show all ({hidden} more lines)")

    def _title(self, row: Row) -> str:
        if row.record is not None:
            record = row.record
            count = len(record.covered)
            return (f"SUMMARY · depth {record.depth} · {count} messages · "
                    f"{record.tokens_before:,} → {record.tokens_after:,} tokens · {record.mode}")
        return {"user": "You", "assistant": "Assistant", "system": "System prompt"}.get(
            row.message.role, row.message.role.title())

    def _badges(self, row: Row) -> str:
        parts = []
        if row.record is not None:
            if row.record.fallback_used:
                parts.append("fallback")
            parts.append(time.strftime("%H:%M", time.localtime(row.record.created_at)))
            return "  ·  ".join(parts)
        message = row.message
        if message.pinned:
            parts.append("📌 pinned")
        if row.streaming:
            parts.append("streaming…")
        elif message.incomplete:
            parts.append("incomplete")
        parts.append(time.strftime("%H:%M", time.localtime(message.created_at)))
        return "  ·  ".join(parts)

    def _paint_tool(self, painter: QPainter, option, index: QModelIndex, row: Row) -> None:
        inset = self._reading_inset()
        box = option.rect.adjusted(MARGIN_X + inset + 10, TOOL_MARGIN_Y, -MARGIN_X - inset, -TOOL_MARGIN_Y)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        path = QPainterPath()
        path.addRoundedRect(QRectF(box), 6, 6)
        painter.fillPath(path, QColor(theme.current.tool_bubble))
        painter.setPen(QPen(QColor(theme.current.accent if selected else theme.current.border), 1))
        painter.drawPath(path)
        message = row.message
        calling = row.kind == "tool_call"
        line_rect = QRect(box.left() + 8, box.top() + TOOL_PAD_Y, box.width() - 16, self._mono_line_h)
        painter.setFont(self.mono_font)
        painter.setPen(QColor(theme.current.muted))
        painter.drawText(line_rect, Qt.AlignmentFlag.AlignLeft, "▾" if row.expanded else "▸")
        if not row.expanded:
            if calling:
                name, subject = message.tool_calls[0].name, _tool_call_line(message).partition("  ")[2]
                label = f"{len(message.tool_calls)} calls" if len(message.tool_calls) > 1 else ""
            else:
                name = message.name or "tool"
                first, total = _first_line_and_count(message.content)
                subject = first
                label = f"{total} lines" if total != 1 else "1 line"
            metrics = QFontMetrics(self.mono_font)
            painter.setPen(QColor(theme.current.role_colours["assistant"] if calling else theme.current.muted))
            arrow = "→ " if calling else "← "
            head = arrow + name
            painter.drawText(line_rect.adjusted(16, 0, 0, 0), Qt.AlignmentFlag.AlignLeft, head)
            label_w = metrics.horizontalAdvance(label) + 12 if label else 0
            text_left = 16 + metrics.horizontalAdvance(head + "  ")
            text_rect = line_rect.adjusted(text_left, 0, -label_w, 0)
            painter.setPen(QColor(theme.current.text))
            painter.drawText(text_rect, Qt.AlignmentFlag.AlignLeft,
                             metrics.elidedText(subject, Qt.TextElideMode.ElideRight, text_rect.width()))
            if label:
                painter.setPen(QColor(theme.current.muted))
                painter.drawText(line_rect, Qt.AlignmentFlag.AlignRight, label)
            return
        width = self._text_width() - TOOL_INDENT
        doc, _chips, hidden = self._document(row, width)
        body_h = math.ceil(doc.size().height())
        self._remember_height(row, index.row(), body_h + self._chrome(row, hidden))
        painter.save()
        painter.translate(box.left() + TOOL_INDENT, box.top() + TOOL_PAD_Y)
        painter.setClipRect(QRectF(0, 0, width, body_h))
        doc.drawContents(painter)
        painter.restore()
        if hidden:
            painter.setPen(QColor(theme.current.muted))
            painter.drawText(QRect(box.left() + TOOL_INDENT, box.top() + TOOL_PAD_Y + body_h, width, self._line_h),
                             Qt.AlignmentFlag.AlignLeft, f"[{hidden} more lines: copy the message to get them all]")

    # --- interaction ----------------------------------------------------------------------------------------
    def editorEvent(self, event, model, option, index) -> bool:  # noqa: N802
        if event.type() != QEvent.Type.MouseButtonRelease or event.button() != Qt.MouseButton.LeftButton:
            return False
        row: Row = index.data(RowRole)
        position = event.position().toPoint()
        if row.kind not in ("tool_call", "tool_result"):
            card = self._card_rect(option)
            local = position - QPoint(card.left() + PAD_X, card.top() + PAD_Y + HEADER_H)
            doc, chips, hidden = self._document(row, self._text_width())
            for rect, code in chips:
                if rect.contains(local.toPointF()):
                    QGuiApplication.clipboard().setText(code)
                    self.copied.emit("Code copied to the clipboard")
                    return True
            if row.kind == "summary" or hidden:
                if row.kind == "summary" or local.y() >= doc.size().height():
                    self.toggled.emit(index.row())
                    return row.kind != "summary"
            return False
        self.toggled.emit(index.row())
        return True


class ConversationView(QListView):
    """The chat flow. Signals carry the row's key (message id or 'summary:<record id>')."""

    pin_requested = Signal(str, bool)
    copy_requested = Signal(str)
    edit_requested = Signal(str)
    regenerate_requested = Signal(str)
    summarize_up_to_requested = Signal(str)
    summary_selected = Signal(str)
    status = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("conversation")
        self.conversation = ConversationModel(self)
        self.setModel(self.conversation)
        self.delegate = MessageDelegate(self)
        self.setItemDelegate(self.delegate)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.verticalScrollBar().setSingleStep(24)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setLayoutMode(QListView.LayoutMode.Batched)
        self.setBatchSize(200)
        self.setUniformItemSizes(False)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setMouseTracking(False)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._context_menu)
        # While `following`, the view stays at the end as rows are laid out (in batches) or grow (a streamed reply).
        self.following = False
        self.verticalScrollBar().rangeChanged.connect(self._follow)
        self.verticalScrollBar().actionTriggered.connect(self._user_scrolled)
        self.conversation.row_streamed.connect(self._repaint_row)
        self.delegate.toggled.connect(self._toggle)
        self.delegate.copied.connect(self.status)
        self.clicked.connect(self._clicked)

    def _repaint_row(self, number: int) -> None:
        self.viewport().update(self.visualRect(self.conversation.index(number)))

    def _toggle(self, number: int) -> None:
        self.conversation.toggle_expanded(number)

    def _clicked(self, index: QModelIndex) -> None:
        row = self.conversation.row_at(index.row())
        if row.record is not None:
            self.summary_selected.emit(row.record.id)

    def selected_row(self) -> Row | None:
        indexes = self.selectionModel().selectedIndexes() if self.selectionModel() else []
        return self.conversation.row_at(indexes[0].row()) if indexes else None

    def is_at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 40

    def scroll_to_end(self) -> None:
        self.following = True
        self.scrollToBottom()

    def _follow(self, _minimum: int, maximum: int) -> None:
        if self.following:
            self.verticalScrollBar().setValue(maximum)

    def _user_scrolled(self, _action: int) -> None:
        QTimer.singleShot(0, lambda: setattr(self, "following", self.is_at_bottom()))

    def wheelEvent(self, event) -> None:  # noqa: N802
        super().wheelEvent(event)
        self.following = self.is_at_bottom()

    def scrollTo(self, index, hint=QAbstractItemView.ScrollHint.EnsureVisible) -> None:  # noqa: N802
        self.following = False
        super().scrollTo(index, hint)

    def _context_menu(self, point) -> None:
        index = self.indexAt(point)
        if not index.isValid():
            return
        row = self.conversation.row_at(index.row())
        menu = QMenu(self)
        if row.message is not None:
            message = row.message
            menu.addAction("Copy message", lambda: self.copy_requested.emit(message.id))
            menu.addAction("Unpin" if message.pinned else "Pin (never summarize)",
                           lambda: self.pin_requested.emit(message.id, not message.pinned))
            if message.role != "system":
                menu.addAction("Summarize up to here", lambda: self.summarize_up_to_requested.emit(message.id))
            last_user = self._last_of("user")
            last_assistant = self._last_of("assistant")
            if last_user is not None and last_user.message.id == message.id:
                menu.addAction("Edit and resend", lambda: self.edit_requested.emit(message.id))
            if last_assistant is not None and last_assistant.message.id == message.id:
                menu.addAction("Regenerate reply", lambda: self.regenerate_requested.emit(message.id))
        else:
            menu.addAction("Show in the inspector", lambda: self.summary_selected.emit(row.record.id))
        menu.exec(self.viewport().mapToGlobal(point))

    def _last_of(self, role: str) -> Row | None:
        for row in reversed(self.conversation.rows()):
            if row.message is not None and row.message.role == role:
                return row
        return None
