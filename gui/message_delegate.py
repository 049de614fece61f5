"""Painting the conversation's rows: cards with a role header, compact expandable tool lines, summaries.

Only visible rows are rendered. A row's height is estimated cheaply from its text until it is first painted, then
the measured height replaces the estimate (changes are batched into one relayout). Rendered documents are kept in
a small LRU cache keyed by message id and checked against the frozen Message object, so a streamed reply only
re-renders its own row.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict

from PySide6.QtCore import QEvent, QModelIndex, QPoint, QPointF, QRect, QRectF, QSize, Qt, QTimer, Signal
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
from PySide6.QtWidgets import QListView, QStyle, QStyledItemDelegate

from ..core.chat.rows import Row
from ..core.model.counted import counted
from . import message_text, theme
from .conversation_model import RowRole
from .markdown import (
    CHIP_SPACING,
    COPY_LABEL,
    closed_fences,
    code_chip_gutter,
    copy_chip_font,
    copy_chip_size,
    is_code_block,
    markdown_document,
    monospace_font,
    plain_document,
    summary_markdown,
)
from .message_header import HEADER_H, PAD_X, PAD_Y, CardHeader
from .message_text import clean_output, first_line_and_count, first_lines, tool_call_details, tool_call_line
from .search_highlight import highlight_matches
from .wording import stop_mark

MARGIN_X = 18
# The chat column's widest card: lines stay readable on a wide screen; the column is centred.
READING_WIDTH = 800
MARGIN_Y = 5
TOOL_MARGIN_Y = 3
TOOL_PAD_Y = 6
TOOL_INDENT = 24
EXPANDED_TOOL_LINES = 400
SUMMARY_PREVIEW_LINES = 3
DOC_CACHE_SIZE = 300
STREAM_RELAYOUT_MS = 250

class MessageDelegate(CardHeader, QStyledItemDelegate):
    """Paints rows as cards with a role header; tool calls/results as compact, expandable lines."""

    copied = Signal(str)
    toggled = Signal(int)
    action_triggered = Signal(str, int)  # (action, row number): a hover action was clicked
    version_chosen = Signal(int, int)  # (row number, version position): an arrow of "‹ 1/2 ›" was clicked

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
        # The row under the mouse: its card shows the actions the view offers for it (view.row_actions).
        self.hovered: int | None = None
        # Words of the current search, as one pattern matching each word's prefix; their matches are highlighted.
        self.highlight: re.Pattern[str] | None = None
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
        self.chip_font = copy_chip_font(font)
        metrics = QFontMetrics(self.body_font)
        self._line_h = metrics.lineSpacing()
        self._char_w = max(1.0, metrics.averageCharWidth() * 1.05)
        mono_metrics = QFontMetrics(self.mono_font)
        self._mono_line_h = mono_metrics.lineSpacing()
        self._mono_char_w = max(1.0, mono_metrics.averageCharWidth())
        self._heights.clear()
        self._docs.clear()

    def forget_rows_gone(self) -> None:
        """After the rows were replaced (another chat, a summary): the heights and documents of rows no longer there
        go, and with them the messages they were checked against (all of another chat's, once scrolled through)."""
        model, heights = self._view.model(), self._heights
        if len(heights) > model.rowCount():  # else nothing can have gone; walked by the fewer, the rows
            self._heights = {row.key: heights[row.key] for row in model.rows() if row.key in heights}
        for key in [key for key in self._docs if model.row_of(key[0]) is None]:
            del self._docs[key]

    # --- geometry -------------------------------------------------------------------------------------------
    def _text_width(self) -> int:
        return max(120, min(self._view.viewport().width() - 2 * MARGIN_X, READING_WIDTH) - 2 * PAD_X)

    def _reading_inset(self) -> int:
        """How far each side the column is narrowed to READING_WIDTH on a wide viewport."""
        return max(0, (self._view.viewport().width() - 2 * MARGIN_X - READING_WIDTH) // 2)

    def body(self, row: Row) -> tuple[str, bool, int]:
        """(text to render, monospace plain text?, lines hidden) for a row in its current state."""
        kind = row.kind
        if kind == "summary":
            record = row.record
            text = record.text
            if row.expanded and (points := record.key_points_beside_text()):
                text += "\n\n" + "\n".join(f"- {point}" for point in points)
            if not row.expanded:
                text, total = first_lines(text, SUMMARY_PREVIEW_LINES)
                return summary_markdown(text), False, max(0, total - SUMMARY_PREVIEW_LINES)
            return summary_markdown(text), False, 0
        message = row.message
        if kind == "tool_call":
            return tool_call_details(message), True, 0
        if kind == "tool_result":
            text, total = first_lines(clean_output(message.content) or "(no output)", EXPANDED_TOOL_LINES)
            return text, True, max(0, total - EXPANDED_TOOL_LINES)
        text = closed_fences(message.content)
        if message.tool_calls:
            text += "\n\n" + "\n\n".join(f"`→ {line}`" for line in tool_call_line(message).splitlines())
        mark = f"**Error:** {row.error}" if row.error else None if row.streaming else stop_mark(message)
        if mark:  # the error is said once, as it happens; the stored mark for as long as the reply stays so
            text = (text + "\n\n" if text else "") + (mark if row.error else f"*{mark}*")
        if not text and row.streaming:
            text = "…"
        return text, False, 0

    def expandable(self, row: Row) -> bool:
        """Whether showing the row whole (or folding it again) changes it: a summary with lines hidden, a tool line."""
        return row.kind in ("tool_call", "tool_result") or (
            row.kind == "summary" and (row.expanded or self.body(row)[2] > 0))

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
            text, mono, hidden = self.body(row)
            height = self._estimate(text, mono, width - TOOL_INDENT) + self._chrome(row, hidden)
        self._heights[row.key] = (subject, width, row.expanded, height, row.streaming)
        return QSize(width, height)

    def _streaming_document(self, row: Row, width: int):
        """A reply being streamed, as plain text appended to one document: each flush costs what arrived, not
        the whole reply (it becomes Markdown once, when it is complete)."""
        text = row.message.content or row.waiting or "…"
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
        text, mono, hidden = self.body(row)
        subject = row.message if row.message is not None else row.record
        key = (row.key, width, row.expanded, row.error, self.highlight)
        cached = self._docs.get(key)
        if cached is not None and cached[0] is subject and not row.streaming:
            self._docs.move_to_end(key)
            return cached[1], cached[2], hidden
        if mono:
            doc = plain_document(text, self.mono_font, width)
        else:
            doc = markdown_document(text, self.body_font, width)
        chips = self._code_chips(doc) if not mono else []
        if self.highlight is not None:
            highlight_matches(doc, self.highlight)
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
        size = copy_chip_size(self.body_font)
        chip_left = doc.textWidth() - code_chip_gutter(self.body_font) + CHIP_SPACING  # in the code block's gutter
        while block.isValid():
            if is_code_block(block):
                if not run:
                    top = layout.blockBoundingRect(block)
                run.append(block.text())
            elif run:
                chips.append((QRectF(QPointF(chip_left, top.top() + 1), size), "\n".join(run)))
                run = []
            block = block.next()
        if run:
            chips.append((QRectF(QPointF(chip_left, top.top() + 1), size), "\n".join(run)))
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

    def card_rect(self, option) -> QRect:
        inset = self._reading_inset()
        return option.rect.adjusted(MARGIN_X + inset, MARGIN_Y, -MARGIN_X - inset, -MARGIN_Y)

    def _paint_card(self, painter: QPainter, option, index: QModelIndex, row: Row) -> None:
        kind = row.kind
        width = self._text_width()
        doc, chips, hidden = self._document(row, width)
        body_h = math.ceil(doc.size().height())
        wanted = body_h + self._chrome(row, hidden)
        self._remember_height(row, index.row(), wanted)

        card = self.card_rect(option)
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
        metrics = QFontMetrics(self.header_font)
        actions = self.action_rects(card, self._view.row_actions(index.row())) if index.row() == self.hovered else []
        if actions:  # hovered: the actions stand where the time and badges were
            right_part = header.right() - actions[0][0].left()
            self._paint_actions(painter, actions)
        else:
            badges = self._badges(row)
            right_part = metrics.horizontalAdvance(badges) if badges else 0
            painter.setPen(QColor(theme.current.muted))
            painter.drawText(header, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, badges)
        switcher = self.version_rects(card, index)
        if switcher:
            right_part += switcher[2][0].right() - header.left() - metrics.horizontalAdvance(self.title(row))
            self._paint_switcher(painter, switcher)
        # The title gives way to the time and badges on a narrow card: elided, never drawn under them.
        title_width = header.width() - (right_part + 12 if right_part else 0)
        title = metrics.elidedText(self.title(row), Qt.TextElideMode.ElideRight, max(0, title_width))
        painter.setPen(colour)
        painter.drawText(header, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, title)

        painter.translate(card.left() + PAD_X, card.top() + PAD_Y + HEADER_H)
        # Draw only what the viewport shows: a long row costs what is visible, not its whole length.
        top = card.top() + PAD_Y + HEADER_H
        first_y = max(0, -top)
        last_y = min(doc.size().height(), self._view.viewport().height() - top)
        doc.drawContents(painter, QRectF(0, first_y, width, max(0, last_y - first_y)))
        painter.setFont(self.chip_font)
        for rect, _code in chips:
            painter.setPen(QPen(QColor(theme.current.border)))
            painter.setBrush(QColor(theme.current.surface))
            painter.drawRoundedRect(rect, 4, 4)
            painter.setPen(QColor(theme.current.muted))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, COPY_LABEL)
        if hidden:
            painter.setPen(QColor(theme.current.accent))
            painter.setFont(self.body_font)
            painter.drawText(QRectF(0, body_h, width, self._line_h), Qt.AlignmentFlag.AlignLeft,
                             f"Show all ({counted(hidden, 'more line')})")

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
                mark, name, subject = "", message.tool_calls[0].name, message_text.call_subject(message.tool_calls[0])
                label = counted(len(message.tool_calls), "call") if len(message.tool_calls) > 1 else ""
            else:
                mark = message_text.outcome_mark(message)
                name = f"{mark} {message.name or 'tool'}"
                first, total = first_line_and_count(message.content)
                subject = first
                label = counted(total, "line")
            metrics = QFontMetrics(self.mono_font)
            painter.setPen(QColor(theme.current.role_colours["assistant"] if calling else theme.current.error_text
                                  if mark == message_text.FAILED_MARK else theme.current.muted))
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
                             Qt.AlignmentFlag.AlignLeft, f"[{counted(hidden, 'more line')}: copy the message to get them all]")

    # --- interaction ----------------------------------------------------------------------------------------
    def editorEvent(self, event, model, option, index) -> bool:  # noqa: N802
        if event.type() != QEvent.Type.MouseButtonRelease or event.button() != Qt.MouseButton.LeftButton:
            return False
        row: Row = index.data(RowRole)
        position = event.position().toPoint()
        action = self.action_at(option, index, position)
        if action is not None:
            self.action_triggered.emit(action, index.row())
            return True
        version = self.version_at(option, index, position)
        if version is not None:
            self.version_chosen.emit(index.row(), version)
            return True
        if row.kind not in ("tool_call", "tool_result"):
            card = self.card_rect(option)
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
