"""A summary in the inspector: the card of what a summarization did, and the selected summary's text, the archived
messages it replaced, and its originals above what the model reads instead."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtWidgets import QFrame, QLabel, QSizePolicy, QStyle, QTabWidget, QVBoxLayout, QWidget

from ..core.chat.rows import ArchivedRows
from ..core.model.counted import counted
from ..core.model.messages import Message
from ..core.model.records import SummaryRecord
from ..core.summary.summarizers import NO_ROOM
from . import theme
from .inspector_gauge import cut
from .inspector_section import FittedConversation, FittedText
from .markdown import markdown_literal, summary_markdown
from .wording import fallback_sentence

# "Before" shows the originals up to this many characters: a summary of 100,000 messages was 6 MB of text laid out on
# the window's thread (0.3 s to show, 0.13 s to clear after an undo); the Archived tab lists every one.
BEFORE_CHARS = 100_000


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
                cut(c.command, 24) + (f" → {c.exit_code}" if c.exit_code is not None else "")
                for c in facets.commands[:2]) + ("…" if len(facets.commands) > 2 else "")))
        if facets.decisions:
            lines.append("Decisions: " + escape("; ".join(cut(d, 60) for d in facets.decisions[:2])))
        if record.fallback_used:
            why = escape(record.fallback_reason or "the model could not summarize")
            said = (f"Your instructions could not be followed: the rules summarized instead ({why})"
                    if record.instructions else escape(fallback_sentence(record)))
            # No room for a narrative beside the trail is the rules' summary doing its job, not a failure to flag.
            expected = record.fallback_reason == NO_ROOM and not record.instructions
            lines.append(f"<span style='color:{theme.current.muted if expected else theme.current.error_text}'>{said}</span>")
        if failed:
            lines.append("Undo last brings the messages back as they were.")
        self.label.setText("<br>".join(lines))
        # The card shows the first few; the whole lists are in its tooltip (the Summary tab has them too).
        self.setToolTip("\n".join(
            (["Files modified:", *facets.files_modified] if facets.files_modified else [])
            + (["Commands:", *(c.command for c in facets.commands)] if facets.commands else [])))
        self.show()


class SummaryDetails(QTabWidget):
    """The selected summary: its text and facts, the archived messages, and before / after. Each page is as tall
    as what it holds and the inspector's scroll reads it; only the page shown counts for the height (a tab widget
    is as tall as its tallest page: the Summary tab had the archive's height under it)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.summary_text = FittedText()
        self.archived_view = FittedConversation()
        self.archived_view.setToolTip("The original messages this summary replaced (read-only)")
        self.before_text = FittedText()
        self.after_text = FittedText()
        # One above the other, each the panel's width: side by side each was about 170 px wide.
        before_after = QWidget()
        layout = QVBoxLayout(before_after)
        layout.setContentsMargins(0, 0, 0, 0)
        self.summary_text.setAccessibleName("Summary text")
        for title, text in (("After (what the model sees)", self.after_text), ("Before (the originals)", self.before_text)):
            text.setAccessibleName(title)
            label = QLabel(title)
            label.setObjectName("muted")
            layout.addWidget(label)
            layout.addWidget(text)
        # Short tab names, so all three fit the inspector's narrowest width; the tooltips say more.
        for widget, name, tip in ((self.summary_text, "Summary", "The summary's text, key points and facts"),
                                  (self.archived_view, "Archived", "The original messages this summary replaced"),
                                  (before_after, "After / before", "What the model reads, above the originals it replaced")):
            self.setTabToolTip(self.addTab(widget, name), tip)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.currentChanged.connect(self._size_to_page)
        self._size_to_page(self.currentIndex())

    def _size_to_page(self, shown: int) -> None:
        for number in range(self.count()):
            page = self.widget(number)
            ignored = QSizePolicy.Policy.Ignored
            page.setSizePolicy(QSizePolicy.Policy.Preferred if number == shown else ignored,
                               QSizePolicy.Policy.Fixed if number == shown else ignored)
        self.updateGeometry()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name): the tabs and the page shown
        page = self.currentWidget()
        frame = 2 * self.style().pixelMetric(QStyle.PixelMetric.PM_DefaultFrameWidth, None, self)
        return QSize(self.tabBar().sizeHint().width(),
                     self.tabBar().sizeHint().height() + frame + (page.sizeHint().height() if page else 0))

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return self.sizeHint()

    def event(self, event) -> bool:
        """A page's height changed (its text laid out, its rows): the tabs ask for the new height."""
        if event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()
        return super().event(event)

    def show_record(self, record: SummaryRecord | None) -> None:
        """The summary's text at once; its archived messages follow (show_archive) once made off this thread."""
        self.archived_view.rows_model.set_rows([])
        self.before_text.clear()
        if record is None:
            self.summary_text.setPlainText("Select a summary to see its text, facts and the messages it replaced.")
            self.after_text.clear()
            return
        self.summary_text.document().setMarkdown(record_markdown(record))
        self.after_text.setPlainText(record.text)

    def show_archive(self, archive: ArchivedRows) -> None:
        self.archived_view.rows_model.set_rows(archive.rows, archive.index)
        self.before_text.setPlainText(originals_text(archive.messages))


def originals_text(archived: list[Message]) -> str:
    """The originals as "Before" shows them: each with its role, up to BEFORE_CHARS (whole messages), then how many
    more there are."""
    shown, size = [], 0
    for message in archived:
        if size >= BEFORE_CHARS:
            rest = len(archived) - len(shown)
            shown.append(f"… and {counted(rest, 'more message')}: the Archived tab lists them all.")
            break
        shown.append(f"[{message.role}{' ' + message.name if message.name else ''}] {message.content}")
        size += len(shown[-1])
    return "\n\n".join(shown)


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
        ("Files modified", facets.files_modified), ("Files named", facets.files_named), ("Errors", facets.errors),
        ("Entities", facets.entities), ("Participants", facets.participants),
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
    if record.trail_coverage:
        meta.append("trail coverage: " + record.trail_coverage.describe())
    parts.append("_" + " · ".join(markdown_literal(m) for m in meta) + "_")
    return "\n\n".join(parts)
