"""A message card's header: its title, its badges (pinned, incomplete, the time), the action chips a hovered card
offers and the "‹ 2/3 ›" version switcher; where each is drawn and what is under a point. A part of MessageDelegate
(message_delegate.py), which gives it `header_font`, `card_rect`, `hovered` and its view."""

from __future__ import annotations

import time

from PySide6.QtCore import QModelIndex, QPoint, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QToolTip

from ..core.chat.rows import Row
from ..core.model.counted import counted
from . import theme
from .conversation_model import RowRole

PAD_X = 14
PAD_Y = 9
HEADER_H = 20
CHIP_H = 18
CHIP_GAP = 4
TITLE_ROOM = 150  # of a card's header, kept for its title and its versions' "‹ 2/3 ›" when chips are shown
# The actions a hovered message offers in its header, in the order shown (the view decides which apply).
ACTION_LABELS = {"copy": "Copy", "edit": "Edit", "regenerate": "Regenerate", "continue": "Continue", "pin": "Pin",
                 "unpin": "Unpin", "summarize": "Summarize up to here", "sent": "What was sent"}
ACTION_TIPS = {
    "copy": "Copy the message's text (Ctrl+C)",
    "edit": "Put your message back in the box; sending it makes a new version (‹ › pages back to this one)",
    "regenerate": "Write this reply again; the earlier one is kept as an alternative",
    "continue": "Have the model go on from where this reply stopped",
    "pin": "Always send this message; summaries never take it",
    "unpin": "Let summaries take this message again",
    "summarize": "Summarize the messages up to and including this one",
    "sent": "The prompt this reply was written from, part by part, as it was sent",
}


class CardHeader:
    def action_rects(self, card: QRect, actions: list[str]) -> list[tuple[QRect, str]]:
        """Where a hovered card's action chips go (viewport coordinates): right-aligned in its header."""
        metrics = QFontMetrics(self.header_font)
        top = card.top() + PAD_Y - 2 + (HEADER_H - CHIP_H) // 2
        widths = {action: metrics.horizontalAdvance(ACTION_LABELS[action]) + 14 for action in actions}
        # The last chips give way on a narrow card rather than cover the title (all stay in the context menu).
        room = card.width() - 2 * PAD_X - TITLE_ROOM
        shown = list(actions)
        while shown and sum(widths[a] + CHIP_GAP for a in shown) - CHIP_GAP > room:
            shown.pop()
        right = card.right() - PAD_X
        rects = []
        for action in reversed(shown):
            rects.append((QRect(right - widths[action], top, widths[action], CHIP_H), action))
            right -= widths[action] + CHIP_GAP
        return rects[::-1]

    def _paint_actions(self, painter: QPainter, actions: list[tuple[QRect, str]]) -> None:
        for rect, action in actions:
            painter.setPen(QPen(QColor(theme.current.border)))
            painter.setBrush(QColor(theme.current.surface))
            painter.drawRoundedRect(QRectF(rect), 4, 4)
            painter.setPen(QColor(theme.current.accent))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, ACTION_LABELS[action])

    def version_rects(self, card: QRect, index: QModelIndex) -> list[tuple[QRect, str, int | None]]:
        """"‹ 2/3 ›" after a regenerated reply's or an edited message's title: (rect, text, the version its click
        shows or None). The arrows work while it can switch (ConversationModel.can_switch)."""
        row: Row = index.data(RowRole)
        versions = index.model().versions_of(row.key) if row.message is not None and not row.streaming else None
        if versions is None:
            return []
        switchable = index.model().can_switch(index.row())
        metrics = QFontMetrics(self.header_font)
        left = card.left() + PAD_X + metrics.horizontalAdvance(self.title(row)) + 10
        top = card.top() + PAD_Y - 2 + (HEADER_H - CHIP_H) // 2
        label = f"{versions.shown + 1}/{len(versions.texts)}"
        label_w = metrics.horizontalAdvance(label) + 8
        last = len(versions.texts) - 1
        previous = versions.shown - 1 if switchable and versions.shown > 0 else None
        following = versions.shown + 1 if switchable and versions.shown < last else None
        return [(QRect(left, top, 16, CHIP_H), "‹", previous),
                (QRect(left + 16, top, label_w, CHIP_H), label, None),
                (QRect(left + 16 + label_w, top, 16, CHIP_H), "›", following)]

    def _paint_switcher(self, painter: QPainter, parts: list[tuple[QRect, str, int | None]]) -> None:
        for rect, text, target in parts:
            arrow = text in ("‹", "›")
            painter.setPen(QColor(theme.current.accent if arrow and target is not None else theme.current.muted))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)

    def version_at(self, option, index: QModelIndex, position: QPoint) -> int | None:
        """The version an enabled arrow under this point shows, if any."""
        for rect, _text, target in self.version_rects(self.card_rect(option), index):
            if target is not None and rect.contains(position):
                return target
        return None

    def action_at(self, option, index: QModelIndex, position: QPoint) -> str | None:
        """The hover action under a point of the viewport, if the row is hovered and shows one there."""
        if index.row() != self.hovered:
            return None
        for rect, action in self.action_rects(self.card_rect(option), self._view.row_actions(index.row())):
            if rect.contains(position):
                return action
        return None

    def helpEvent(self, event, view, option, index) -> bool:  # noqa: N802
        action = self.action_at(option, index, event.pos())
        if action is None:
            return super().helpEvent(event, view, option, index)
        QToolTip.showText(event.globalPos(), ACTION_TIPS[action], view)
        return True

    @staticmethod
    def title(row: Row) -> str:
        """What a row's header says it is: "You", "System prompt" (the chat's opening), "System" (a later marker)..."""
        if row.record is not None:
            record = row.record
            return (f"SUMMARY · depth {record.depth} · {counted(row.covered, 'message')} · "
                    f"{record.tokens_before:,} → {record.tokens_after:,} tokens · {record.kind}")
        return {"user": "You", "assistant": "Assistant", "system": "System prompt" if row.opening else "System"}.get(
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

