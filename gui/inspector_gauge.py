"""What is sent: the token gauge (tokens by kind against the window, the policy's lines on it), the tokens by kind in
numbers, and the archived messages recalled for the last message."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QGridLayout, QLabel, QListWidgetItem, QSizePolicy, QVBoxLayout, QWidget

from ..core.context.engine import UsageReport, recalled_parts
from ..core.model.counted import counted
from ..core.settings import SummarizationPolicy
from . import theme
from .inspector_section import FittedList

KIND_LABELS = {
    "system": "System prompt",
    "tools": "Tool definitions",
    "summaries": "Summaries",
    "recalled": "Recalled",
    "messages": "Messages",
    "tool_outputs": "Tool outputs",
    "reserve_output": "Reserved for the reply",
}


def usage_level(ratio: float, policy: SummarizationPolicy) -> str:
    """'ok' below the reset ratio, 'near' up to the trigger ratio, 'over' at or past it."""
    if ratio >= policy.trigger_ratio:
        return "over"
    if ratio >= policy.reset_ratio:
        return "near"
    return "ok"


LEVEL_TEXT_STYLES = {"ok": "good", "near": "warning", "over": "error"}  # the style sheet's QLabel rules


class TokenGauge(QWidget):
    """A stacked bar: tokens by kind against the window, with marks at the reset and trigger ratios."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.usage: UsageReport | None = None
        self.policy = SummarizationPolicy()
        self.setMinimumHeight(26)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_usage(self, usage: UsageReport | None, policy: SummarizationPolicy) -> None:
        self.usage, self.policy = usage, policy
        self.update()

    @property
    def level(self) -> str:
        return usage_level(self.usage.ratio, self.policy) if self.usage else "ok"

    def paintEvent(self, _event) -> None:  # noqa: N802
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        bar = QRectF(1, 5, self.width() - 2, self.height() - 10)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(theme.current.gauge_track))
        painter.drawRoundedRect(bar, 5, 5)
        usage = self.usage
        if usage is None or usage.window <= 0:
            return
        scale = bar.width() / usage.window
        painter.save()
        painter.setClipRect(bar)
        x = bar.left()
        for kind in ("system", "tools", "summaries", "recalled", "messages", "tool_outputs"):
            width = usage.by_kind.get(kind, 0) * scale
            if width > 0:
                painter.setBrush(QColor(theme.current.kind_colours[kind]))
                painter.drawRect(QRectF(x, bar.top(), width, bar.height()))
                x += width
        reserve_w = usage.reserve_output * scale
        painter.setBrush(QColor(theme.current.kind_colours["reserve_output"]))
        painter.drawRect(QRectF(bar.right() - reserve_w, bar.top(), reserve_w, bar.height()))
        painter.restore()
        for mark in gauge_marks(usage, self.policy):
            x = self.mark_x(mark.ratio)
            painter.setPen(QPen(QColor(mark.colour), 2, mark.style))
            painter.drawLine(int(x), 1, int(x), self.height() - 1)

    def mark_x(self, ratio: float) -> float:
        """Where a share of the budget is on the bar (the bar is the whole window, the reserve at its end)."""
        usage = self.usage
        return 1 + (self.width() - 2) * usage.available * min(ratio, 1.0) / usage.window


@dataclass(frozen=True)
class GaugeMark:
    ratio: float
    colour: str
    style: Qt.PenStyle
    glyph: str  # how the legend draws the line: solid, dashed or dotted
    label: str


def gauge_marks(usage: UsageReport, policy: SummarizationPolicy) -> list[GaugeMark]:
    """Where the policy acts, as lines on the gauge: the floor no summary can remove, the target a summary brings
    usage down to, where summaries re-arm, and the trigger."""
    return [GaugeMark(usage.floor_ratio, theme.current.muted, Qt.PenStyle.DotLine, "┊",
                      f"floor {usage.floor_ratio:.0%}"),
            GaugeMark(policy.target_ratio, theme.LEVEL_OK, Qt.PenStyle.DashLine, "┆",
                      f"down to {policy.target_ratio:.0%}"),
            GaugeMark(policy.reset_ratio, theme.LEVEL_NEAR, Qt.PenStyle.SolidLine, "│",
                      f"re-arms below {policy.reset_ratio:.0%}"),
            GaugeMark(policy.trigger_ratio, theme.LEVEL_OVER, Qt.PenStyle.SolidLine, "│",
                      f"summarizes at {policy.trigger_ratio:.0%}")]


MARK_MEANINGS = ("the floor: the system prompt, pinned messages and the summaries, which no summary removes",
                 "the target: a summary takes the oldest messages needed to bring usage down to it",
                 "summaries re-arm once usage falls below it (or after enough new messages)",
                 "the trigger: at this share of the budget older messages are summarized")


def marks_legend(usage: UsageReport, policy: SummarizationPolicy) -> str:
    """The gauge's lines in words, each after its line drawn in its colour: '│ summarizes at 80% · ┆ down to 50%'."""
    marks = list(reversed(gauge_marks(usage, policy)))  # the trigger first: what the user meets first
    return " · ".join(f"<span style='color:{m.colour}'><b>{m.glyph}</b></span>&nbsp;{escape(m.label)}"
                      for m in marks)


class WhatIsSent(QWidget):
    """The next prompt's tokens by kind and the policy's lines in words; what the last message recalled."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.legend = QGridLayout()
        self.legend.setHorizontalSpacing(10)
        self.legend.setVerticalSpacing(2)
        self.legend_values: dict[str, QLabel] = {}
        self.legend_labels: dict[str, QLabel] = {}
        for row, kind in enumerate(KIND_LABELS):
            swatch = QLabel()
            swatch.setFixedSize(10, 10)
            swatch.setStyleSheet(f"background:{theme.current.kind_colours[kind]}; border-radius:2px;")
            value = QLabel("0")
            value.setAlignment(Qt.AlignmentFlag.AlignRight)
            self.legend_values[kind] = value
            self.legend_labels[kind] = QLabel(KIND_LABELS[kind])
            self.legend.addWidget(swatch, row, 0)
            self.legend.addWidget(self.legend_labels[kind], row, 1)
            self.legend.addWidget(value, row, 2)
        self.legend.setColumnStretch(1, 1)
        # The gauge is the next prompt, whose recall is chosen when the message is sent; the list below is the last
        # message's: side by side, "Recalled 0" and "Recalled for your last message: 13" read as a contradiction.
        self.legend_labels["recalled"].setToolTip(
            "Archived messages recalled into the next prompt: chosen when you send your message. The list below "
            "shows what was recalled for your last message")
        self.thresholds = QLabel("")
        self.thresholds.setObjectName("muted")
        self.thresholds.setWordWrap(True)
        self.thresholds.setTextFormat(Qt.TextFormat.RichText)
        self.recalled = FittedList()
        self.recalled.setToolTip("Archived messages put back into the prompt for your last message; click one to "
                                 "see it among the messages its summary replaced")
        # Each snippet on up to a few wrapped lines (when and who first): a one-line list showed only its header.
        self.recalled.setObjectName("recalled")
        self.recalled.setAccessibleName("Recalled for your last message")
        self.recalled.setAlternatingRowColors(True)  # where one snippet ends and the next begins
        self.recalled.setWordWrap(True)
        self.recalled_title = QLabel("Recalled for your last message")
        self.recalled_title.setObjectName("muted")
        self.recalled_title.setWordWrap(True)  # at the inspector's narrowest a long title would widen the panel
        # Only while something was recalled for this turn: an empty list would take room from what follows.
        self.recalled_box = QWidget()
        recalled_layout = QVBoxLayout(self.recalled_box)
        recalled_layout.setContentsMargins(0, 4, 0, 0)
        recalled_layout.addWidget(self.recalled_title)
        recalled_layout.addWidget(self.recalled)
        self.recalled_box.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addLayout(self.legend)
        layout.addWidget(self.thresholds)
        layout.addWidget(self.recalled_box)

    def show_usage(self, usage: UsageReport, policy: SummarizationPolicy) -> None:
        for kind, label in self.legend_values.items():
            value = usage.reserve_output if kind == "reserve_output" else usage.by_kind.get(kind, 0)
            label.setText(f"{value:,}")
        sends_tools = bool(usage.by_kind.get("tools"))  # a row for them only in a chat that sends some
        for widget in (self.legend_values["tools"], self.legend_labels["tools"],
                       self.legend.itemAtPosition(list(KIND_LABELS).index("tools"), 0).widget()):
            widget.setVisible(sends_tools)
        self.thresholds.setText(marks_legend(usage, policy) + ("" if policy.enabled else " · automatic summaries are off"))

    def show_recalled(self, recalled: list[tuple[str, str]]) -> None:
        self.recalled.clear()
        for message_id, snippet in recalled:
            item = QListWidgetItem(recalled_label(snippet))
            item.setData(Qt.ItemDataRole.UserRole, message_id)
            item.setToolTip(snippet)  # all of it, as the model reads it
            self.recalled.addItem(item)
        count = len(recalled)
        self.recalled_title.setText(f"Recalled for your last message: {counted(count, 'archived message')}")
        self.recalled_box.setVisible(bool(count))


RECALLED_LABEL_CHARS = 140


def recalled_label(snippet: str) -> str:
    """A recalled snippet for the list: when and who, then the start of its text ("8 May, 2023, 1:56 pm · Caroline:
    I went to a LGBTQ support group…"), without the bracketed header the model reads."""
    where, body = recalled_parts(snippet)
    text = cut(body, RECALLED_LABEL_CHARS)
    return f"{where} · {text}" if where else text


def cut(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 1] + "…"
