"""The context inspector: what the model sees (token gauge), the summary chain, and the archived originals."""

from __future__ import annotations

import time
from dataclasses import dataclass
from html import escape

from PySide6.QtCore import QEvent, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..core.chat.rows import Row
from ..core.context.engine import UsageReport, recalled_parts
from ..core.model.messages import Message
from ..core.model.records import SummaryRecord, fold_description
from ..core.settings import SummarizationPolicy
from . import theme
from .conversation import ConversationView
from .markdown import SafeDocument, markdown_literal, summary_markdown
from .wording import fallback_sentence

KIND_LABELS = {
    "system": "System prompt",
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


LEVEL_COLOURS = {"ok": theme.LEVEL_OK, "near": theme.LEVEL_NEAR, "over": theme.LEVEL_OVER}


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
        for kind in ("system", "summaries", "recalled", "messages", "tool_outputs"):
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


class ResultCard(QFrame):
    """What a summarization did: messages and tokens before -> after, files, commands, decisions."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("resultCard")
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.addWidget(self.label)
        self.hide()

    def show_record(self, record: SummaryRecord, automatic: bool, messages: int | None = None) -> None:
        facets = record.facets
        result = record.result(messages)
        figures = escape(result.describe())
        failed = result.saves_nothing or result.saves_little
        if failed:  # not a success: say so in the error colour
            figures = f"<span style='color:{theme.current.error_text}'>{figures}</span>"
        verdict = " saved almost nothing" if result.saves_little else ""
        lines = [f"<b>{'Automatic summary' if automatic else 'Summary'} (depth {record.depth}){verdict}</b>", figures]
        if facets.files_modified:
            names = [path.rstrip("/").rsplit("/", 1)[-1] for path in facets.files_modified]
            more = f" and {len(names) - 4} more" if len(names) > 4 else ""
            lines.append(f"Files modified ({len(names)}): " + escape(", ".join(names[:4]) + more))
        if facets.commands:
            lines.append(f"Commands ({len(facets.commands)}): " + escape(", ".join(
                _cut(c.command, 24) + (f" → {c.exit_code}" if c.exit_code is not None else "")
                for c in facets.commands[:2]) + ("…" if len(facets.commands) > 2 else "")))
        if facets.decisions:
            lines.append("Decisions: " + escape("; ".join(_cut(d, 60) for d in facets.decisions[:2])))
        if record.fallback_used:
            why = escape(record.fallback_reason or "the model could not summarize")
            said = (f"Your instructions could not be followed: the rules summarized instead ({why})"
                    if record.instructions else escape(fallback_sentence(record)))
            lines.append(f"<span style='color:{theme.current.error_text}'>{said}</span>")
        if failed:
            lines.append("Undo last brings the messages back as they were.")
        self.label.setText("<br>".join(lines))
        # The card shows the first few; the whole lists are in its tooltip (the Summary tab has them too).
        self.setToolTip("\n".join(
            (["Files modified:", *facets.files_modified] if facets.files_modified else [])
            + (["Commands:", *(c.command for c in facets.commands)] if facets.commands else [])))
        self.show()


def _cut(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


# (header, what it means): short headers so the whole table fits the panel; the meaning is the header's tooltip.
CHAIN_COLUMNS = (
    ("#", "Depth in the chain (1 is the oldest)"),
    ("Time", "When the summary was made"),
    ("Msgs", "Original messages it replaced"),
    ("Tokens", "Context tokens before → after"),
    ("Mode", "How it was written (rule, llm or hybrid) and by whom: the rules, or the provider and model"),
    ("Fallback", "Whether the rule-based summary stood in for a failed LLM summary"),
    ("Redact.", "Secrets redacted"),
    ("Trail coverage", "Facts the rules extract from the originals (files, commands, errors, names, requests) "
                       "that the model still sees; the summarizer's own yardstick (hover for what is missing)"),
)

CHAIN_ROWS_SHOWN = 4  # rows of the summary chain in view without scrolling it: a chain at the default depth, 3, fits


def retention_share(record: SummaryRecord) -> str:
    """'84/137 (61%)': facts of the originals the model still sees, all kinds together."""
    if record.retention is None:
        return ""
    kept, total = sum(record.retention.kept.values()), sum(record.retention.total.values())
    return f"{kept}/{total} ({kept / total:.0%})" if total else "nothing to keep"


def compact_tokens(value: int) -> str:
    return f"{value / 1000:.1f}k" if value >= 1000 else str(value)


@dataclass(frozen=True)
class ActionState:
    """What the inspector's buttons can act on."""

    chat_open: bool = False
    summarizable: bool = False
    undoable: bool = False
    selected: Message | None = None


class FittingScroll(QScrollArea):
    """A scroll area asking for its content's height at its width: a plain one's size hint stays what it was at the
    first layout (no numbers, no notice yet), so the part below took room the gauge's lines needed and they
    scrolled. (A panel too short for it scrolls it: the chain below keeps at least its rows.)"""

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        hint = super().sizeHint()
        content = self.widget()
        height = content.heightForWidth(self.viewport().width()) if content.hasHeightForWidth() else -1
        height = height if height >= 0 else content.sizeHint().height()
        hint.setHeight(height + 2 * self.frameWidth())
        return hint

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt's name); QScrollArea filters its widget
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()
        return super().eventFilter(watched, event)


class Inspector(QFrame):
    summarize_requested = Signal(str)
    undo_requested = Signal()
    pin_requested = Signal()
    record_selected = Signal(str)
    message_selected = Signal(str)  # a recalled message: show it in the conversation

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("inspector")
        self.setMinimumWidth(340)
        self._records: list[SummaryRecord] = []
        self._snapshot = None
        self._shown: SummaryRecord | None = None  # the record the detail tabs show

        title = QLabel("Context")
        title.setObjectName("heading")
        self.exact_label = QLabel("")
        self.exact_label.setObjectName("muted")
        head = QHBoxLayout()
        head.addWidget(title)
        head.addStretch(1)
        head.addWidget(self.exact_label)

        self.gauge = TokenGauge()
        self.total_label = QLabel("No chat open")
        bold = QFont(self.total_label.font())
        bold.setBold(True)
        self.total_label.setFont(bold)
        self.total_label.setWordWrap(True)  # "16,807 / 7,680 tokens (219%) · window 8,192" at the minimum width
        self.legend = QGridLayout()
        self.legend.setHorizontalSpacing(10)
        self.legend.setVerticalSpacing(2)
        self._legend_values: dict[str, QLabel] = {}
        self.legend_labels: dict[str, QLabel] = {}
        for row, kind in enumerate(KIND_LABELS):
            swatch = QLabel()
            swatch.setFixedSize(10, 10)
            swatch.setStyleSheet(f"background:{theme.current.kind_colours[kind]}; border-radius:2px;")
            value = QLabel("0")
            value.setAlignment(Qt.AlignmentFlag.AlignRight)
            self._legend_values[kind] = value
            self.legend_labels[kind] = QLabel(KIND_LABELS[kind])
            self.legend.addWidget(swatch, row, 0)
            self.legend.addWidget(self.legend_labels[kind], row, 1)
            self.legend.addWidget(value, row, 2)
        # The gauge is the next prompt, whose recall is chosen when the message is sent; the list below is the last
        # message's: side by side, "Recalled 0" and "Recalled for your last message: 13" read as a contradiction.
        self.legend_labels["recalled"].setToolTip(
            "Archived messages recalled into the next prompt: chosen when you send your message. The list below "
            "shows what was recalled for your last message")
        self.thresholds = QLabel("")
        self.thresholds.setObjectName("muted")
        self.thresholds.setWordWrap(True)
        self.thresholds.setTextFormat(Qt.TextFormat.RichText)
        self.recalled = QListWidget()
        self.recalled.setToolTip("Archived messages put back into the prompt for your last message; click one to "
                                 "see it among the messages its summary replaced")
        # Each snippet on up to a few wrapped lines (when and who first): a one-line list showed only its header.
        self.recalled.setObjectName("recalled")
        self.recalled.setAlternatingRowColors(True)  # where one snippet ends and the next begins
        self.recalled.setWordWrap(True)
        self.recalled.setResizeMode(QListWidget.ResizeMode.Adjust)
        self.recalled.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.recalled.setMaximumHeight(150)
        self.recalled.itemClicked.connect(self._recalled_chosen)
        self.recalled.itemActivated.connect(self._recalled_chosen)
        # Over the budget: what is sent, what is cut, what the next message does, what to do.
        self.over_budget = QLabel("")
        self.over_budget.setObjectName("error")
        self.over_budget.setWordWrap(True)
        self.over_budget.hide()

        self.notice = QLabel("")
        self.notice.setObjectName("notice")
        self.notice.setWordWrap(True)
        self.notice_undo = QPushButton("Undo")
        notice_row = QHBoxLayout()
        notice_row.addWidget(self.notice, 1)
        notice_row.addWidget(self.notice_undo)
        self.notice_box = QWidget()
        self.notice_box.setLayout(notice_row)
        notice_row.setContentsMargins(0, 0, 0, 0)
        self.notice_box.hide()
        self.result_card = ResultCard()

        self.instructions = QLineEdit()
        self.instructions.setPlaceholderText("Optional instructions for the summary")
        self.summarize_button = QPushButton("Summarize now")
        self.summarize_button.setObjectName("primary")
        self.undo_button = QPushButton("Undo last")
        self.pin_button = QPushButton("Pin")
        self._busy = False
        self._actions = ActionState()
        actions = QHBoxLayout()
        actions.addWidget(self.summarize_button)
        actions.addWidget(self.undo_button)
        actions.addWidget(self.pin_button)

        chain_title = QLabel("Summary chain")
        chain_title.setObjectName("heading")
        self.chain = QTableWidget(0, len(CHAIN_COLUMNS))
        self.chain.setHorizontalHeaderLabels([header for header, _tip in CHAIN_COLUMNS])
        for column, (_header, tip) in enumerate(CHAIN_COLUMNS):
            self.chain.horizontalHeaderItem(column).setToolTip(tip)
        self.chain.setWordWrap(True)
        self.chain.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.chain.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.chain.verticalHeader().hide()
        self.chain.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.chain.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.chain.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.chain.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.chain.horizontalHeader().setStretchLastSection(True)
        self.chain.setShowGrid(False)
        self.chain.setAlternatingRowColors(True)

        self.details = QTabWidget()
        self.summary_text = QTextEdit()
        self.summary_text.setDocument(SafeDocument(self.summary_text))
        self.summary_text.setReadOnly(True)
        self.archived_view = ConversationView(editable=False)
        self.archived_view.setToolTip("The original messages this summary replaced (read-only)")
        self.before_text = QTextEdit()
        self.before_text.setDocument(SafeDocument(self.before_text))
        self.before_text.setReadOnly(True)
        self.after_text = QTextEdit()
        self.after_text.setDocument(SafeDocument(self.after_text))
        self.after_text.setReadOnly(True)
        before_after = QSplitter(Qt.Orientation.Horizontal)
        before_after.addWidget(_titled("Before (originals)", self.before_text))
        before_after.addWidget(_titled("After (what the model sees)", self.after_text))
        # Short tab names, so all three fit the inspector's narrowest width; the tooltips say more.
        for widget, name, tip in ((self.summary_text, "Summary", "The summary's text, key points and facts"),
                                  (self.archived_view, "Archived", "The original messages this summary replaced"),
                                  (before_after, "Before / after", "The originals beside what the model reads")):
            self.details.setTabToolTip(self.details.addTab(widget, name), tip)

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 8, 0)  # the numbers keep clear of the scroll bar beside them
        top_layout.setSpacing(6)
        top_layout.addLayout(head)
        top_layout.addWidget(self.total_label)
        top_layout.addWidget(self.gauge)
        top_layout.addWidget(self.over_budget)
        # Tokens by kind and the policy's thresholds fold away (▸) to leave room on a short screen.
        self.breakdown = QWidget()
        breakdown_layout = QVBoxLayout(self.breakdown)
        breakdown_layout.setContentsMargins(0, 0, 0, 0)
        breakdown_layout.setSpacing(6)
        breakdown_layout.addLayout(self.legend)
        breakdown_layout.addWidget(self.thresholds)
        self.breakdown_toggle = QToolButton()
        self.breakdown_toggle.setText("Tokens by kind")
        self.breakdown_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.breakdown_toggle.setAutoRaise(True)
        self.breakdown_toggle.setCheckable(True)
        self.breakdown_toggle.toggled.connect(self._fold_breakdown)
        self.breakdown_toggle.setChecked(True)
        top_layout.addWidget(self.breakdown_toggle)
        top_layout.addWidget(self.breakdown)
        # Only while something was recalled for this turn: an empty list would take room from what follows.
        self.recalled_box = _titled("Recalled for your last message", self.recalled)
        self.recalled_title = self.recalled_box.findChild(QLabel)
        self.recalled_box.hide()
        top_layout.addWidget(self.recalled_box)
        top_layout.addWidget(self.notice_box)
        top_layout.addWidget(self.result_card)
        top_layout.addStretch(1)  # a tall panel leaves its room under them, not between the gauge's lines

        # The upper part scrolls when the window is too short for all of it (1000×700 with a notice, a result
        # card and the over-budget text), instead of clipping its text or making the window taller.
        top_scroll = FittingScroll()
        top_scroll.setWidget(top)
        top_scroll.setWidgetResizable(True)
        top_scroll.setFrameShape(QFrame.Shape.NoFrame)
        top_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        top_scroll.setMinimumHeight(160)
        # The summary chain, Summarize now, Undo last and Pin stay in view under it: inside it, the tokens by kind
        # put the chain below the fold at 1000×700 and 1500×950, and a notice and the recalled list the buttons at
        # 1400×900.
        upper = QWidget()
        upper_layout = QVBoxLayout(upper)
        upper_layout.setContentsMargins(0, 0, 8, 6)
        upper_layout.setSpacing(6)
        upper_layout.addWidget(top_scroll)
        upper_layout.addWidget(chain_title)
        # The part above gets the height it asks for (when there is room), the chain what is left, never less
        # than its rows (_fit_chain): its own size hint, taller, took room the part above needed at 1920×1080.
        self.chain.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)
        upper_layout.addWidget(self.chain, 1)
        upper_layout.addWidget(self.instructions)
        upper_layout.addLayout(actions)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(upper)
        splitter.addWidget(self.details)
        splitter.setStretchFactor(0, 3)  # the gauge, notices and chain take more than the summary's text
        splitter.setStretchFactor(1, 2)
        splitter.setSizes([360, 240])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 12, 14, 12)
        layout.addWidget(splitter)

        self.summarize_button.clicked.connect(
            lambda: self.summarize_requested.emit(self.instructions.text().strip()))
        self.undo_button.clicked.connect(self.undo_requested)
        self.notice_undo.clicked.connect(self.undo_requested)
        self.pin_button.clicked.connect(self.pin_requested)
        self.chain.itemSelectionChanged.connect(self._selection_changed)
        self._show_record(None)
        self._update_buttons()
        self._fit_chain()  # its room before any chat opens

    def _fold_breakdown(self, shown: bool) -> None:
        self.breakdown.setVisible(shown)
        self.breakdown_toggle.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self.breakdown_toggle.setToolTip("Hide the tokens by kind" if shown else "Show the tokens by kind")

    # ---- state --------------------------------------------------------------------------------------------
    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._update_buttons()

    def set_actions(self, state: ActionState) -> None:
        self._actions = state
        self._update_buttons()

    def _update_buttons(self) -> None:
        """Each button is enabled only when it can act; its tooltip says what it does, or why it cannot."""
        state, busy = self._actions, self._busy
        waiting = "Wait for the reply to finish"
        if not state.chat_open:
            summarize = undo = pin = "No chat is open"
        else:
            summarize = (waiting if busy else None if state.summarizable else
                         "Nothing to summarize yet: the most recent messages are always kept verbatim")
            undo = waiting if busy else None if state.undoable else "No summary to undo in this chat"
            pin = None if state.selected is not None else "Select a message in the conversation to pin it"
        pinned = state.selected is not None and state.selected.pinned
        self.pin_button.setText("Unpin" if pinned else "Pin")
        for button, reason, action in (
            (self.summarize_button, summarize, "Summarize the older messages now (instructions above are optional)"),
            (self.undo_button, undo, "Undo the latest summary: its messages come back exactly"),
            (self.notice_undo, undo, "Undo this summary: its messages come back exactly"),
            (self.pin_button, pin, "Let the selected message be summarized again" if pinned else
             "Keep the selected message verbatim: it is never summarized"),
        ):
            button.setEnabled(reason is None)
            button.setToolTip(reason or action)
        self.instructions.setEnabled(summarize is None)

    def show_snapshot(self, snapshot) -> None:
        self._snapshot = snapshot
        usage, policy = snapshot.usage, snapshot.policy
        self.gauge.set_usage(usage, policy)
        if usage is None:
            self.total_label.setText("Counting tokens…")
            self.exact_label.setText("")
        else:
            level = usage_level(usage.ratio, policy)
            self.total_label.setText(
                f"Next prompt: {usage.total:,} / {usage.available:,} tokens ({usage.ratio:.0%}) · window {usage.window:,}")
            self.total_label.setStyleSheet(f"color: {LEVEL_COLOURS[level]};")
            self.exact_label.setText("exact" if usage.exact else "estimated")
            self.exact_label.setToolTip(
                f"Estimated from their lengths for {snapshot.counting:,} messages not counted yet; being counted"
                if snapshot.counting else "Counted with the model's own tokenizer" if usage.exact else
                "Estimated offline with tiktoken, corrected by what the provider reports")
            for kind, label in self._legend_values.items():
                value = usage.reserve_output if kind == "reserve_output" else usage.by_kind.get(kind, 0)
                label.setText(f"{value:,}")
            self.thresholds.setText(marks_legend(usage, policy)
                                    + ("" if policy.enabled else " · automatic summaries are off"))
            self.gauge.setToolTip("Lines on the gauge, as shares of the budget:\n" + "\n".join(
                f"{mark.glyph} {mark.label}: {meaning}"
                for mark, meaning in zip(gauge_marks(usage, policy), MARK_MEANINGS, strict=True)))
        self.recalled.clear()
        for message_id, snippet in snapshot.recalled:
            item = QListWidgetItem(recalled_label(snippet))
            item.setData(Qt.ItemDataRole.UserRole, message_id)
            item.setToolTip(snippet)  # all of it, as the model reads it
            self.recalled.addItem(item)
        count = len(snapshot.recalled)
        self.recalled_title.setText(f"Recalled for your last message: {count} archived message{'s' * (count != 1)}")
        self.recalled_box.setVisible(bool(count))
        note = snapshot.over_budget
        self.over_budget.setText("\n".join(note.lines()) if note else "")
        self.over_budget.setVisible(note is not None)
        self._fill_chain(snapshot.chain)

    def _fill_chain(self, chain: list[SummaryRecord]) -> None:
        selected = self.selected_record_id()
        self._records = list(reversed(chain))  # newest first
        self.chain.blockSignals(True)
        self.chain.setRowCount(len(self._records))
        for row, record in enumerate(self._records):
            retention = record.retention.describe() if record.retention else ""
            values = (
                (str(record.depth), f"depth {record.depth}"),
                (time.strftime("%H:%M", time.localtime(record.created_at)),
                 time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.created_at))),
                (str(len(self._snapshot.archived(record.id)) if self._snapshot else len(record.covered)), ""),
                (f"{compact_tokens(record.tokens_before)} → {compact_tokens(record.tokens_after)}",
                 f"{record.tokens_before:,} → {record.tokens_after:,} tokens"),
                # Who wrote it is in the tooltip and the Summary tab: a model's name in the cell crowded out the
                # columns after it.
                (record.kind, f"{self._made(record)}, written by {record.writer}"),
                ("yes" if record.fallback_used else "no", record.fallback_reason or ""),
                (str(record.redactions), ""),
                # The share in the cell; the counts by kind and what is missing in the tooltip.
                (retention_share(record), retention),
            )
            for column, (value, tip) in enumerate(values):
                item = QTableWidgetItem(value)
                item.setToolTip(tip or value)
                self.chain.setItem(row, column, item)
        ids = [r.id for r in self._records]
        if selected in ids:
            self.chain.selectRow(ids.index(selected))
        else:
            # The shown record is gone (undone, merged): show none rather than text the model no longer sees.
            self.chain.clearSelection()
        self.chain.blockSignals(False)
        current = next((r for r in self._records if r.id == self.selected_record_id()), None)
        if current != self._shown:
            self._show_record(current)
        self._fit_chain()

    def _fit_chain(self) -> None:
        """At least as tall as its rows, up to CHAIN_ROWS_SHOWN (one row's room when empty): a short panel scrolls
        the part above instead."""
        chain = self.chain
        chain.resizeRowsToContents()
        rows = [chain.rowHeight(row) for row in range(min(chain.rowCount(), CHAIN_ROWS_SHOWN))]
        chain.setMinimumHeight(chain.horizontalHeader().sizeHint().height() + 2 * chain.frameWidth()
                             + sum(rows or [chain.verticalHeader().defaultSectionSize()])
                             + chain.horizontalScrollBar().sizeHint().height())  # the narrowest width scrolls it

    def _made(self, record: SummaryRecord) -> str:
        """Its mode, or for a fold what it folds: 'fold of 2 summaries (llm, rule)'."""
        if not record.merged_ids:
            return record.mode
        kinds = self._snapshot.folded.get(record.id) if self._snapshot else None
        return fold_description(kinds) if kinds else record.kind  # the first paint's rows come before the engine

    def _recalled_chosen(self, item: QListWidgetItem) -> None:
        """Show a recalled message where it is kept: its summary selected in the chain, the Archived tab open at
        it (and the conversation at the summary, or at the message if it is no longer archived)."""
        message_id = item.data(Qt.ItemDataRole.UserRole)
        record_id = self._snapshot.hidden.get(message_id) if self._snapshot else None
        if record_id is not None:
            self.select_record(record_id)
            self.details.setCurrentWidget(self.archived_view)
            self.archived_view.reveal(message_id)
        self.message_selected.emit(message_id)

    def selected_record_id(self) -> str | None:
        rows = self.chain.selectionModel().selectedRows() if self.chain.selectionModel() else []
        return self._records[rows[0].row()].id if rows and rows[0].row() < len(self._records) else None

    def select_record(self, record_id: str) -> None:
        ids = [r.id for r in self._records]
        if record_id in ids:
            self.chain.selectRow(ids.index(record_id))

    def _selection_changed(self) -> None:
        record_id = self.selected_record_id()
        record = next((r for r in self._records if r.id == record_id), None)
        self._show_record(record)
        if record is not None:
            self.record_selected.emit(record.id)

    def _show_record(self, record: SummaryRecord | None) -> None:
        self._shown = record
        if record is None:
            self.summary_text.setPlainText("Select a summary to see its text, facts and the messages it replaced.")
            self.archived_view.conversation.set_rows([])
            self.before_text.clear()
            self.after_text.clear()
            return
        self.summary_text.document().setMarkdown(record_markdown(record))
        archived = self._snapshot.archived(record.id) if self._snapshot else []
        self.archived_view.conversation.set_rows([Row(message=m) for m in archived])
        self.before_text.setPlainText("\n\n".join(f"[{m.role}{' ' + m.name if m.name else ''}] {m.content}"
                                                  for m in archived))
        self.after_text.setPlainText(record.text)

    def show_notice(self, text: str) -> None:
        self.notice.setText(text)
        self.notice_box.show()

    def hide_notice(self) -> None:
        self.notice_box.hide()


RECALLED_LABEL_CHARS = 140


def recalled_label(snippet: str) -> str:
    """A recalled snippet for the list: when and who, then the start of its text ("8 May, 2023, 1:56 pm · Caroline:
    I went to a LGBTQ support group…"), without the bracketed header the model reads."""
    where, body = recalled_parts(snippet)
    text = _cut(body, RECALLED_LABEL_CHARS)
    return f"{where} · {text}" if where else text


def _titled(title: str, widget: QWidget) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    label = QLabel(title)
    label.setObjectName("muted")
    label.setWordWrap(True)  # at the inspector's narrowest a long title would widen the panel past its edge
    layout.addWidget(label)
    layout.addWidget(widget)
    return box


def record_markdown(record: SummaryRecord) -> str:
    """A summary's text, key points and facets, for reading."""
    facets = record.facets
    parts = ["#### Summary text (what the model reads)", summary_markdown(record.text),
             "#### Facts kept with it"]
    if record.fallback_used:  # first, where it is seen: why the rules wrote it and not the model
        parts.insert(1, f"**{markdown_literal(fallback_sentence(record))}**")
    if record.key_points:
        parts.append("**Key points**\n\n" + "\n".join(f"- {markdown_literal(p)}" for p in record.key_points))
    listed = (
        ("Decisions", facets.decisions), ("Unresolved questions", facets.unresolved_questions),
        ("User requests", facets.user_requests), ("Files read", facets.files_read),
        ("Files modified", facets.files_modified), ("Errors", facets.errors), ("Entities", facets.entities),
        ("Participants", facets.participants),
    )
    for title, items in listed:
        if items:
            parts.append(f"**{title}**\n\n" + "\n".join(f"- {markdown_literal(i)}" for i in items[:30]))
    if facets.action_items:
        parts.append("**Action items**\n\n" + "\n".join(
            f"- {markdown_literal(a.task)}" + (f" ({a.owner})" if a.owner else "") + (f", due {a.due}" if a.due else "")
            for a in facets.action_items))
    if facets.commands:
        parts.append("**Commands**\n\n" + "\n".join(
            f"- `{c.command[:120]}`" + (f" → exit {c.exit_code}" if c.exit_code is not None else "")
            + (f" ×{c.count}" if c.count > 1 else "") for c in facets.commands[:30]))
    if facets.tool_usage:
        parts.append("**Tool usage**\n\n" + "\n".join(f"- {t.tool}: {t.count}" for t in facets.tool_usage))
    meta = [f"mode {record.kind}", f"written by {record.writer}", f"trigger {record.trigger}", f"{record.duration_ms:.0f} ms",
            f"{record.tokens:,} tokens", f"summarizer used {record.summarizer_tokens:,} tokens"]
    if record.instructions:
        meta.append(f"instructions: {record.instructions}")
    if record.retention:
        meta.append("trail coverage: " + record.retention.describe())
    parts.append("_" + " · ".join(markdown_literal(m) for m in meta) + "_")
    return "\n\n".join(parts)
