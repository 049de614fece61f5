"""The message model shared by the engine, providers, storage and the GUI."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call an assistant message makes to a tool."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message. Frozen: a change (pin, streamed text) makes a new object with the same id."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    # On a tool result: the call it answers and the tool's name.
    tool_call_id: str | None = None
    name: str | None = None
    id: str = field(default_factory=new_id)
    created_at: float = field(default_factory=time.time)
    pinned: bool = False
    # A reply whose stream was cut off or cancelled: kept, but marked.
    incomplete: bool = False
    # A reply that stopped at its token limit: the limit (it can be continued).
    cut_at: int | None = None
    # On a reply: what it was written from (context/sent_record.SentRecord, as encoded); None if not known.
    sent: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {self.role!r}")

    @property
    def says_nothing(self) -> bool:
        """An assistant turn with no text and no tool calls: a reply begun and not written yet (the window stores it
        empty as it starts), or stopped before its first word. Kept and shown, never sent to a model."""
        return self.role == "assistant" and not self.content.strip() and not self.tool_calls

    def sha256(self) -> str:
        """Fingerprint of what the message says, used to check that undo restores originals exactly."""
        payload = json.dumps(
            [self.role, self.content, self.name, self.tool_call_id,
             [[c.id, c.name, c.arguments] for c in self.tool_calls]],
            ensure_ascii=False, sort_keys=True,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def with_changes(self, **changes: Any) -> Message:
        return replace(self, **changes)
