"""The context inspector: what the model sees. A headline of the next prompt's tokens over the gauge; below it one
scroll of sections that fold away (what is sent, the summary chain, the selected summary); at the foot, the buttons
to summarize or undo, always in view."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from ..core.chat.rows import ArchivedRows
from ..core.context.prompt_parts import SUMMARY
from ..core.model.counted import counted
from ..core.model.messages import Message
from ..core.model.records import SummaryRecord, fold_description
from . import theme
from .controller import WAIT_FOR_SUMMARY
from .inspector_chain import SummaryChain
from .inspector_gauge import LEVEL_TEXT_STYLES, MARK_MEANINGS, TokenGauge, WhatIsSent, gauge_marks, usage_level
from .inspector_prompt import PromptView
from .inspector_record import ResultCard, SummaryDetails
from .inspector_section import Section


@dataclass(frozen=True)
class ActionState:
    """What the inspector's buttons can act on."""

    chat_open: bool = False
    summarizable: bool = False
    undoable: bool = False
    selected: Message | None = None


NO_SUMMARY_SELECTED = "Selected summary"
CONTENT_RIGHT_MARGIN = 8
MIN_WIDTH = 340


class Inspector(QFrame):
    summarize_requested = Signal(str)
    undo_requested = Signal()
    pin_requested = Signal()
    record_selected = Signal(str)
    message_selected = Signal(str)  # a recalled message: show it in the conversation
    folds_changed = Signal(list)  # the keys of the sections folded away, to be remembered
    prompt_shown = Signal(bool)  # the Prompt section unfolded (its parts are wanted) or folded away
    # (snapshot, record id): a summary's archived messages are wanted, made off this thread (Snapshot.archived_rows)
    # and handed to show_archive.
    archive_wanted = Signal(object, str)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        # At least MIN_WIDTH, and as wide as its buttons need in a large font (a fixed 340 px cut "Summarize now").
        hint = super().minimumSizeHint()
        return QSize(max(MIN_WIDTH, hint.width()), hint.height())

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("inspector")
        self._snapshot = None
        self._shown: SummaryRecord | None = None  # the record the details show
        self._reveal_pending: str | None = None  # an archived message to show once its summary's rows are made
        self._busy = False
        self._summarizing = False  # a summary or an undo of one is being made
        self._actions = ActionState()

        # The headline, always in view: the next prompt's tokens and the gauge.
        title = QLabel("Context")
        title.setObjectName("heading")
        self.exact_label = QLabel("")
        self.exact_label.setObjectName("muted")
        head = QHBoxLayout()
        head.addWidget(title)
        head.addStretch(1)
        head.addWidget(self.exact_label)
        self.total_label = QLabel("No chat open")
        bold = QFont(self.total_label.font())
        bold.setBold(True)
        self.total_label.setFont(bold)
        self.total_label.setWordWrap(True)  # "16,807 / 7,680 tokens (219%) · window 8,192" at the minimum width
        self.gauge = TokenGauge()

        # What is wrong and what happened, first in the scroll: over the budget; a summary made, with its Undo.
        self.over_budget = QLabel("")  # what is sent, what is cut, what the next message does, what to do
        self.over_budget.setObjectName("error")
        self.over_budget.setWordWrap(True)
        self.over_budget.hide()
        self.notice = QLabel("")
        self.notice.setObjectName("notice")
        self.notice.setWordWrap(True)
        self.notice_undo = QPushButton("Undo")
        self.notice_box = QWidget()
        notice_row = QHBoxLayout(self.notice_box)
        notice_row.setContentsMargins(0, 0, 0, 0)
        notice_row.addWidget(self.notice, 1)
        notice_row.addWidget(self.notice_undo, 0, Qt.AlignmentFlag.AlignTop)
        self.notice_box.hide()
        self.result_card = ResultCard()

        self.sent = WhatIsSent()
        self.thresholds = self.sent.thresholds
        self.legend_labels = self.sent.legend_labels
        self.legend_values = self.sent.legend_values
        self.recalled = self.sent.recalled
        self.recalled_box = self.sent.recalled_box
        self.recalled_title = self.sent.recalled_title
        self.recalled.itemClicked.connect(self._recalled_chosen)
        self.recalled.itemActivated.connect(self._recalled_chosen)
        self.chain = SummaryChain()
        self.details = SummaryDetails()
        self.summary_text = self.details.summary_text
        self.archived_view = self.details.archived_view
        self.before_text = self.details.before_text
        self.after_text = self.details.after_text
        self.archived_view.revealed.connect(self._scroll_to_archived)

        self.sent_section = Section("sent", "What is sent: tokens by kind", self.sent)
        self.prompt = PromptView()
        self.prompt.source_chosen.connect(self._prompt_source_chosen)
        self.prompt_section = Section("prompt", "The next prompt, as sent", self.prompt)
        # What the newest summary did, under the chain: above it, it put the chain below the fold at 1000×700.
        chain_box = QWidget()
        chain_layout = QVBoxLayout(chain_box)
        chain_layout.setContentsMargins(0, 0, 0, 0)
        chain_layout.setSpacing(6)
        chain_layout.addWidget(self.chain)
        chain_layout.addWidget(self.result_card)
        self.chain_section = Section("chain", "Summary chain", chain_box)
        self.record_section = Section("summary", NO_SUMMARY_SELECTED, self.details)
        content = QWidget()
        content.setObjectName("inspectorContent")
        content_layout = QVBoxLayout(content)
        content_layout.setContentsMargins(0, 0, CONTENT_RIGHT_MARGIN, 0)  # the numbers clear of the scroll bar
        content_layout.setSpacing(8)
        for widget in (self.over_budget, self.notice_box, self.sent_section, self.prompt_section, self.chain_section,
                       self.record_section):
            content_layout.addWidget(widget)
        content_layout.addStretch(1)  # a tall panel leaves its room under the sections, not between them
        # The one scroll of the panel: nothing in it scrolls on its own (each part is as tall as what it holds).
        self.scroll = QScrollArea()
        self.scroll.setObjectName("inspectorScroll")
        self.scroll.setAccessibleName("Context inspector")
        self.scroll.setWidget(content)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        # At the foot, always in view: summarize (with its optional instructions), undo, pin.
        self.instructions = QLineEdit()
        self.instructions.setPlaceholderText("Optional instructions for the summary")
        self.instructions.setAccessibleName("Instructions for the summary")
        self.summarize_button = QPushButton("Summarize now")
        self.summarize_button.setObjectName("primary")
        self.undo_button = QPushButton("Undo last")
        self.pin_button = QPushButton("Pin")
        controls = QWidget()
        controls_layout = QVBoxLayout(controls)
        controls_layout.setContentsMargins(0, 0, 0, 0)
        controls_layout.setSpacing(6)
        controls_layout.addWidget(self.instructions)
        buttons = QHBoxLayout()
        for button in (self.summarize_button, self.undo_button, self.pin_button):
            buttons.addWidget(button)
        controls_layout.addLayout(buttons)
        self.controls_section = Section("controls", "Summarize or undo", controls)
        self.sections = {s.key: s for s in (self.sent_section, self.prompt_section, self.chain_section,
                                            self.record_section, self.controls_section)}
        self.prompt_section.folded.connect(lambda _key, folded: self.prompt_shown.emit(not folded))
        for section in self.sections.values():
            section.folded.connect(lambda _key, _folded: self.folds_changed.emit(self.folded_sections()))

        # The headline and the buttons line up with the sections, whose right is clear of the scroll bar.
        gutter = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent) + CONTENT_RIGHT_MARGIN
        headline = QWidget()
        headline_layout = QVBoxLayout(headline)
        headline_layout.setContentsMargins(0, 0, gutter, 0)
        headline_layout.setSpacing(6)
        headline_layout.addLayout(head)
        headline_layout.addWidget(self.total_label)
        headline_layout.addWidget(self.gauge)
        self.controls_section.setContentsMargins(0, 0, gutter, 0)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 12, 6, 12)
        layout.setSpacing(6)
        layout.addWidget(headline)
        layout.addWidget(self.scroll, 1)
        layout.addWidget(self.controls_section)

        self.summarize_button.clicked.connect(
            lambda: self.summarize_requested.emit(self.instructions.text().strip()))
        self.undo_button.clicked.connect(self.undo_requested)
        self.notice_undo.clicked.connect(self.undo_requested)
        self.pin_button.clicked.connect(self.pin_requested)
        self.chain.itemSelectionChanged.connect(self._selection_changed)
        self._show_record(None)
        self._update_buttons()

    # ---- sections -------------------------------------------------------------------------------------------
    def folded_sections(self) -> list[str]:
        return [key for key, section in self.sections.items() if not section.expanded]

    def fold_sections(self, keys: list[str]) -> None:
        """Fold these sections away (as the user left them), unfold the others."""
        for key, section in self.sections.items():
            section.blockSignals(True)
            section.set_expanded(key not in keys)
            section.blockSignals(False)

    # ---- state --------------------------------------------------------------------------------------------
    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._update_buttons()

    def set_summarizing(self, summarizing: bool) -> None:
        """While a summary or an undo is being made, Summarize now and Undo wait for it: a second click made a second
        summary of what was left, or was refused as saving nothing."""
        self._summarizing = summarizing
        self._update_buttons()

    def set_actions(self, state: ActionState) -> None:
        self._actions = state
        self._update_buttons()

    def _update_buttons(self) -> None:
        """Each button is enabled only when it can act; its tooltip says what it does, or why it cannot."""
        state, busy = self._actions, self._busy or self._summarizing
        waiting = WAIT_FOR_SUMMARY if self._summarizing else "Wait for the reply to finish"
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
            # What is sent: over the budget only what fits goes (a red 129% once stood over 2,220 tokens sent).
            sent = usage.total if snapshot.over_budget is None else snapshot.over_budget.sent_tokens
            ratio = sent / usage.available
            self.total_label.setText(
                f"Next prompt: {sent:,} / {usage.available:,} tokens ({ratio:.0%}) · window {usage.window:,}")
            self.total_label.setToolTip("" if sent == usage.total else
                                        f"The chat's full text is {usage.total:,} tokens: only what fits is sent")
            cut = snapshot.over_budget is not None and bool(snapshot.over_budget.cut)  # messages left out or cut
            theme.style_as(self.total_label, LEVEL_TEXT_STYLES["over" if cut else usage_level(ratio, policy)])
            self.exact_label.setText("exact" if usage.exact else "estimated")
            self.exact_label.setToolTip(
                f"Estimated from their lengths for {counted(snapshot.counting, 'message')} not counted yet; being counted"
                if snapshot.counting else "Counted with the model's own tokenizer" if usage.exact else
                "Estimated offline with tiktoken, corrected by what the provider reports")
            self.sent.show_usage(usage, policy)
            self.gauge.setToolTip("Lines on the gauge, as shares of the budget:\n" + "\n".join(
                f"{mark.glyph} {mark.label}: {meaning}"
                for mark, meaning in zip(gauge_marks(usage, policy), MARK_MEANINGS, strict=True)))
        self.sent.show_recalled(snapshot.recalled)
        if snapshot.prompt is not None:
            self.prompt.show_parts(*snapshot.prompt, snapshot.prompt_request or "")
        note = snapshot.over_budget
        self.over_budget.setText("\n".join(note.lines()) if note else "")
        self.over_budget.setVisible(note is not None)
        self._fill_chain(snapshot.chain)

    def _fill_chain(self, chain: list[SummaryRecord]) -> None:
        count = len(chain)
        # An empty list under "none yet" was an empty box. Shown before it is filled: its rows take its width.
        self.chain.setVisible(bool(count))
        self.chain.set_records(list(reversed(chain)), self._messages, self._made)  # newest first
        self.chain_section.set_title(f"Summary chain · {counted(count, 'summary')}" if count
                                     else "Summary chain · none yet")
        # The shown record is gone (undone, merged): show none rather than text the model no longer sees.
        current = self.chain.selected_record()
        if current != self._shown:
            self._show_record(current)

    def _messages(self, record: SummaryRecord) -> int:
        """The original messages a summary stands for (a fold's are its summaries')."""
        return self._snapshot.archived_counts.get(record.id, 0) if self._snapshot else len(record.covered)

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
            self.record_section.set_expanded(True)
            self.reveal_archived(message_id)
        self.message_selected.emit(message_id)

    def reveal_archived(self, message_id: str) -> None:
        """The Archived tab at an archived message of the selected summary: now if its rows are made, else once they
        are."""
        self.details.setCurrentWidget(self.archived_view)
        if not self.archived_view.reveal(message_id):
            self._reveal_pending = message_id

    def _prompt_source_chosen(self, kind: str, source: str) -> None:
        """A part of the prompt chosen: its summary selected in the chain, or its message shown (archived: where
        it is kept)."""
        if kind == SUMMARY:
            self.select_record(source)
            self.record_section.set_expanded(True)
        else:
            self.message_selected.emit(source)

    def _scroll_to_archived(self, row: QRect) -> None:
        """An archived message asked for: the panel's scroll shows it (the archive does not scroll itself)."""
        view = self.archived_view
        view.doItemsLayout()
        centre = view.viewport().mapTo(self.scroll.widget(), row.center())
        self.scroll.ensureVisible(centre.x(), centre.y(), 0, self.scroll.viewport().height() // 2 - 10)

    def selected_record_id(self) -> str | None:
        return self.chain.selected_record_id()

    def select_record(self, record_id: str) -> None:
        self.chain.select_record(record_id)

    def _selection_changed(self) -> None:
        record = self.chain.selected_record()
        self._show_record(record)
        if record is not None:
            self.record_selected.emit(record.id)

    def _show_record(self, record: SummaryRecord | None) -> None:
        self._shown, self._reveal_pending = record, None
        self.details.show_record(record)
        self.record_section.set_title(NO_SUMMARY_SELECTED if record is None else
                                      f"Selected summary · depth {record.depth}")
        if record is not None and self._snapshot is not None:
            self.archive_wanted.emit(self._snapshot, record.id)

    def show_archive(self, archive: ArchivedRows) -> None:
        """A summary's archived messages, made off this thread: shown if it is still the one selected."""
        if self._shown is None or archive.record_id != self._shown.id:
            return
        self.details.show_archive(archive)
        pending, self._reveal_pending = self._reveal_pending, None
        if pending is not None:
            self.archived_view.reveal(pending)

    def show_notice(self, text: str) -> None:
        self.notice.setText(text)
        self.notice_box.show()

    def hide_notice(self) -> None:
        self.notice_box.hide()
