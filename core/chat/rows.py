"""The conversation's flow: a row per message, or a summary standing where the messages it archived were.

Built on the chat's worker from its snapshot (a long chat's rows took the window's thread a fifth of a second) and
shown as they are by the window's list model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..context.engine import ContextEngine
from ..model.messages import Message
from ..model.records import SummaryRecord


@dataclass
class Row:
    """One row of the flow: a message, or a summary standing where the messages it archived were."""

    message: Message | None = None
    record: SummaryRecord | None = None
    covered: int = 0  # a summary's: the messages it stands for (a fold's are its summaries' messages)
    expanded: bool = False
    # The chat's opening system message, its system prompt; a later one (a session or date marker) is conversation.
    opening: bool = False
    # Set while a reply streams into this row; before its first text, what the wait is ("Reading the prompt…").
    streaming: bool = False
    waiting: str = ""
    error: str | None = None
    _key: str = field(init=False, default="")

    def __post_init__(self) -> None:
        if self.message is not None:
            self._key = self.message.id
        elif self.record is not None:
            self._key = f"summary:{self.record.id}"
        else:
            raise ValueError("a row shows a message or a summary")

    @property
    def key(self) -> str:
        return self._key

    @property
    def kind(self) -> str:
        if self.record is not None or self.message is None:  # a summary's row (__post_init__: one of the two)
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


@dataclass(frozen=True)
class ArchivedRows:
    """The messages a summary archived, as the inspector's Archived tab shows them: made off the window's thread (a
    100,000-message summary's rows took it a tenth of a second)."""

    record_id: str
    messages: list[Message]
    rows: list[Row]
    index: dict[str, int]  # row_index of rows


def archived_rows(record_id: str, messages: list[Message]) -> ArchivedRows:
    """A row per archived message, oldest first."""
    rows = [Row(message=message) for message in messages]
    return ArchivedRows(record_id, messages, rows, row_index(rows))


def row_index(rows: list[Row]) -> dict[str, int]:
    """Row number by key."""
    return {row.key: number for number, row in enumerate(rows)}


def can_switch_version(role: str, later_roles: Iterable[str]) -> bool:
    """Whether a message can show another of its versions, given the roles of the messages after it: the user's
    last message (what came after it is its branch, switched with it), or the last message (a reply). The messages
    after an older one answer the version it shows."""
    if role == "user":
        return "user" not in later_roles
    return next(iter(later_roles), None) is None


def switchable_start(engine: ContextEngine, message_id: str) -> int:
    """Where the message is in the engine's chat, if its version can change: can_switch_version, and nothing from it
    on is inside a summary (older history never changes). ValueError saying why not."""
    messages = engine.messages
    start = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].id == message_id), None)
    if start is None or not can_switch_version(messages[start].role, (m.role for m in messages[start + 1:])):
        raise ValueError("only the last reply or your last message can change: what came after an older one "
                         "answers the version it shows")
    if any(engine.is_archived(m.id) for m in messages[start:]):
        raise ValueError("the message or its reply is inside a summary; undo the summary to change it")
    return start


def hidden_messages(engine: ContextEngine) -> dict[str, str]:
    """{message id: id of the active summary hiding it from the model}, by the engine's own rule."""
    return {m.id: holder for m in engine.messages
            if engine.is_archived(m.id) and (holder := engine.archived_by(m.id)) is not None}
