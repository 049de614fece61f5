"""Read-only text windows: History (the summary chain and the recent messages of a chat) and the command list."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QTextEdit, QVBoxLayout, QWidget

from ..core.model.messages import Message
from .session import Snapshot


def history_markdown(snapshot: Snapshot) -> str:
    lines = ["# Summaries"]
    for record in snapshot.chain:
        lines.append(f"- depth {record.depth}, {len(snapshot.archived(record.id))} messages, "
                     f"{record.tokens_before:,} → {record.tokens_after:,} tokens: {record.text[:300]}")
    if not snapshot.chain:
        lines.append("- none yet")
    lines.append("\n# Recent messages")
    visible = [m for m in snapshot.messages if m.id not in snapshot.hidden]
    for message in visible[-20:]:
        text = message.content.strip().replace("\n", " ")[:200] or tool_line(message)
        lines.append(f"- **{message.role}**: {text}")
    return "\n".join(lines)


def tool_line(message: Message) -> str:
    if message.tool_calls:
        return ", ".join(f"{c.name} {c.arguments}" for c in message.tool_calls)[:200]
    return f"({message.name or 'tool'} output)"


def show_history(parent: QWidget, snapshot: Snapshot) -> QDialog:
    return show_text(parent, "History", history_markdown(snapshot))


def show_text(parent: QWidget, title: str, markdown: str) -> QDialog:
    """A non-modal window of read-only Markdown (History, the command list)."""
    dialog = QDialog(parent)
    dialog.setWindowTitle(title)
    dialog.resize(640, 520)
    view = QTextEdit(dialog)
    view.setReadOnly(True)
    view.setMarkdown(markdown)
    QVBoxLayout(dialog).addWidget(view)
    dialog.setModal(False)
    dialog.show()
    return dialog
