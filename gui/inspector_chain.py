"""The summary chain: each summary as a two-line entry, newest first, read at the panel's width (a table of eight
columns hid half of them behind a horizontal scroll bar below 1600 px). Everything in full is in its tooltip."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter
from PySide6.QtWidgets import QAbstractItemView, QListWidgetItem, QStyle, QStyledItemDelegate, QStyleOptionViewItem

from ..core.model.counted import counted
from ..core.model.records import SummaryRecord
from . import theme
from .inspector_section import FittedList

# What an entry says about its summary, (name, what it means): each is a line of the entry's tooltip.
CHAIN_FIELDS = (
    ("Depth", "Depth in the chain (1 is the oldest)"),
    ("Made", "When the summary was made"),
    ("Messages", "Original messages it replaced"),
    ("Tokens", "Context tokens before → after"),
    ("Mode", "How it was written (rule, llm or hybrid) and by whom: the rules, or the provider and model"),
    ("Fallback", "Whether the rule-based summary stood in for a failed LLM summary"),
    ("Redacted", "Secrets redacted"),
    ("Trail coverage", "Facts the rules extract from the originals (files, commands, errors, names, requests) "
                       "that the model still sees; the summarizer's own yardstick"),
)

RECORD_ID = Qt.ItemDataRole.UserRole


def compact_tokens(value: int) -> str:
    return f"{value / 1000:.1f}k" if value >= 1000 else str(value)


def chain_entry(record: SummaryRecord, messages: int, made: str) -> tuple[str, str, str]:
    """(first line, second line, tooltip) of a summary's entry: 'Depth 2 · 627 messages · 06:26', '141.3k → 3.7k
    tokens · rule · kept 61%'; `made` is its mode or what it folds ('fold of 2 summaries (llm, rule)')."""
    first = f"Depth {record.depth} · {counted(messages, 'message')} · " \
            f"{time.strftime('%H:%M', time.localtime(record.created_at))}"
    second = [f"{compact_tokens(record.tokens_before)} → {compact_tokens(record.tokens_after)} tokens", record.kind]
    if record.fallback_used:
        second.append("fallback")
    if record.redactions:
        second.append(f"{record.redactions} redacted")
    if record.trail_coverage is not None and sum(record.trail_coverage.total.values()):
        kept, total = sum(record.trail_coverage.kept.values()), sum(record.trail_coverage.total.values())
        second.append(f"kept {kept / total:.0%}")
    details = (
        f"depth {record.depth}",
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.created_at)),
        f"{messages:,}",
        f"{record.tokens_before:,} → {record.tokens_after:,}",
        f"{made}, written by {record.writer}",
        f"yes: {record.fallback_reason}" if record.fallback_used else "no",
        str(record.redactions),
        record.trail_coverage.describe() if record.trail_coverage else "not measured",
    )
    tooltip = "\n".join(f"{name}: {detail}" for (name, _meaning), detail in zip(CHAIN_FIELDS, details, strict=True))
    return first, " · ".join(second), tooltip


class ChainDelegate(QStyledItemDelegate):
    """An entry's first line in bold, its second muted; each elided to the width (all of it in the tooltip)."""

    PADDING = 6

    def sizeHint(self, option, _index: QModelIndex) -> QSize:  # noqa: N802 (Qt's name)
        lines = option.fontMetrics.lineSpacing() * 2 + 2
        return QSize(option.rect.width(), lines + 2 * self.PADDING)

    def paint(self, painter: QPainter, option, index: QModelIndex) -> None:
        style_option = QStyleOptionViewItem(option)
        self.initStyleOption(style_option, index)
        # From the model: the option's text has its newline made a line separator.
        first, _newline, second = index.data(Qt.ItemDataRole.DisplayRole).partition("\n")
        style_option.text = ""
        widget = option.widget
        style = widget.style() if widget else None
        if style is not None:  # the background and selection; it leaves a clip of one line's height behind
            painter.save()
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, style_option, painter, widget)
            painter.restore()
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        text_rect = option.rect.adjusted(self.PADDING + 2, self.PADDING, -self.PADDING, -self.PADDING)
        line = option.fontMetrics.lineSpacing()
        painter.save()
        bold = QFont(option.font)
        bold.setBold(True)
        for text, font, colour, top in (
                (first, bold, option.palette.highlightedText().color() if selected else QColor(theme.current.text), 0),
                (second, option.font, option.palette.highlightedText().color() if selected
                 else QColor(theme.current.muted), line + 2)):
            painter.setFont(font)
            painter.setPen(colour)
            rect = QRect(text_rect.left(), text_rect.top() + top, text_rect.width(), line)
            elided = painter.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, rect.width())
            painter.drawText(rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, elided)
        painter.restore()


class SummaryChain(FittedList):
    """The chain of summaries, newest first; selecting one shows it below."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("summaryChain")
        self.setAccessibleName("Summary chain")
        self.setItemDelegate(ChainDelegate(self))
        self.setUniformItemSizes(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setAlternatingRowColors(True)
        self.setToolTip("The summaries the model reads instead of the older messages, newest first")
        self.records: list[SummaryRecord] = []

    def set_records(self, records: list[SummaryRecord], messages: Callable[[SummaryRecord], int],
                    made: Callable[[SummaryRecord], str]) -> None:
        """Show `records` (newest first), keeping the selected one selected if it is still there; quietly (no
        selection signal): the caller shows what is selected."""
        selected = self.selected_record_id()
        self.records = list(records)
        self.blockSignals(True)
        self.clear()
        for record in self.records:
            first, second, tooltip = chain_entry(record, messages(record), made(record))
            item = QListWidgetItem(f"{first}\n{second}")
            item.setToolTip(tooltip)
            item.setData(RECORD_ID, record.id)
            self.addItem(item)
        ids = [r.id for r in self.records]
        if selected in ids:
            self.setCurrentRow(ids.index(selected))
        self.blockSignals(False)

    def selected_record_id(self) -> str | None:
        items = self.selectedItems()
        return items[0].data(RECORD_ID) if items else None

    def selected_record(self) -> SummaryRecord | None:
        record_id = self.selected_record_id()
        return next((r for r in self.records if r.id == record_id), None)

    def select_record(self, record_id: str) -> None:
        ids = [r.id for r in self.records]
        if record_id in ids:
            self.setCurrentRow(ids.index(record_id))
