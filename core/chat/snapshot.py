"""What a face (the window, the terminal) is given of a chat at one moment: copies, never the engine's live objects."""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field, replace

from ..context.budget import DraftRoom, OverBudget
from ..context.engine import EngineEvent, UsageReport
from ..context.prompt_parts import PromptPart
from ..model.bulk import collector_paused
from ..model.messages import Message
from ..model.records import SummaryRecord
from ..settings import SummarizationPolicy
from ..storage.chats import effective_policy, with_overrides
from ..storage.store import Store, Versions
from .rows import ArchivedRows, Row, archived_rows, build_rows, row_index
from .unsaved import UnsavedReply


@dataclass(frozen=True)
class Snapshot:
    """What the GUI shows of a chat at one moment: copies, never the engine's live objects.

    The worker thread keeps changing the engine's records (merge, undo, trail coverage), so the chain holds deep copies
    and the GUI never reads a half-updated record.
    """

    chat_id: str
    messages: list[Message]
    # message id -> id of the active summary hiding it from the model (pinned and system messages are never hidden)
    hidden: dict[str, str]
    chain: list[SummaryRecord]
    usage: UsageReport | None
    policy: SummarizationPolicy
    events: list[EngineEvent] = field(default_factory=list)
    # Whether "Summarize now" has anything to take (the engine's own rule).
    summarizable: bool = False
    # (message id, snippet) of the archived messages recalled into the prompt for the newest user message.
    recalled: list[tuple[str, str]] = field(default_factory=list)
    # Over the budget: what is sent, cut, what the next message does and what to do (None while it fits).
    over_budget: OverBudget | None = None
    # What the composer measures a draft against: the prompt as sent, and when the policy summarizes.
    draft_room: DraftRoom | None = None
    # message id -> the versions of a regenerated reply or an edited message (the message holds the one shown)
    versions: dict[str, Versions] = field(default_factory=dict)
    # fold id -> the kinds of the summaries it folds, oldest first (for the inspector's Mode column)
    folded: dict[str, list[str]] = field(default_factory=dict)
    # Only the chat's last rows, for the first paint (ChatSession.load_rows); the whole chat follows.
    partial: bool = False
    # With those first rows: the chat's unsent draft, read off the window's thread.
    draft: str | None = None
    # The next prompt part by part, and its tokens (prompt_parts), while the window shows it; else None.
    prompt: tuple[list[PromptPart], int] | None = None
    # With it, the request the provider would send for it, as JSON (never an API key).
    prompt_request: str | None = None
    # How many messages' counts are stand-ins from their lengths, still being counted (ChatSession.count_exactly).
    counting: int = 0
    # The last reply, if its last save failed: shown whole, stored in part (ChatSession.save_unsaved).
    unsaved: UnsavedReply | None = None
    # The conversation's rows, built here on the worker (a long chat's took the window's thread a fifth of a second)
    # when what is archived changed since the last snapshot; else None (the rows shown still hold). Handed to the view.
    rows: list[Row] | None = None
    row_index: dict[str, int] | None = None  # of rows, made with them
    # record id -> how many messages it hides, counted where the snapshot is made (the worker): the inspector's
    # chain counted them with a pass over every message per summary on the window's thread.
    archived_counts: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "archived_counts", dict(Counter(self.hidden.values())))

    def archived(self, record_id: str) -> list[Message]:
        return [m for m in self.messages if self.hidden.get(m.id) == record_id]

    def archived_rows(self, record_id: str) -> ArchivedRows:
        """The Archived tab's rows for a summary: a pass over the chat's messages, for the worker to make. They live
        while the summary is selected: made and frozen with the collector paused (at 100,000 messages their row
        objects set off a full pass of 60-100 ms, the window waiting for the lock, each time one was selected)."""
        with collector_paused(freeze=True):
            return archived_rows(record_id, self.archived(record_id))


@dataclass(frozen=True)
class ReplyResult:
    message: Message
    snapshot: Snapshot
    # Why the reply stopped early, if it did (cancelled, cut off, failed).
    problem: str | None = None
    cut_at: int | None = None  # the reply's token limit, when it stopped there (a complete reply, cut short)
    stopped: bool = False  # the user stopped it (Stop, Esc): what arrived is kept, and nothing failed
    # False when nothing arrived before it failed or was stopped: no reply was kept (ChatSession._not_answered), and
    # `message` is the reply it would have replaced (a regenerated one's earlier text), else the empty placeholder.
    kept: bool = True

    @property
    def unsaved(self) -> UnsavedReply | None:
        """The reply's last save failed: it is shown whole, stored in part."""
        unsaved = self.snapshot.unsaved
        return unsaved if unsaved is not None and unsaved.message_id == self.message.id else None

    @property
    def failure(self) -> str | None:
        """What went wrong, to be shown as an error beside the reply: not the user's own Stop."""
        return None if self.stopped else self.problem


def copied_event(event: EngineEvent) -> EngineEvent:
    return replace(event, record=copied_record(event.record))


def copied(chain: list[SummaryRecord]) -> list[SummaryRecord]:
    return [copied_record(record) for record in chain]


def copied_record(record: SummaryRecord) -> SummaryRecord:
    """A copy for the GUI thread, which the engine's later changes (status, trail coverage, ...) do not touch. The list of
    messages it covers is shared: it never changes once made, and copied it was a model per message of a long chat,
    on every snapshot (about 35 MB and a quarter of a second at 100,000 messages)."""
    return copy.deepcopy(record, {id(record.covered): record.covered})


def first_rows(store: Store, chat_id: str, overrides: dict, count: int) -> Snapshot:
    """ChatSession.load_rows: the chat's last `count` messages with the summaries that archived them, read straight
    from the store."""
    messages = store.load_last_messages(chat_id, count)
    active = [r for r in store.load_records(chat_id) if r.status == "active"]
    archived_by = store.archived_by(chat_id) if active else {}
    active_ids = {r.id for r in active}
    # As the engine's rule (Archive.is_archived): a pinned message is never hidden. (The chat's opening, also
    # never hidden, is not among the last rows of a chat long enough to have summaries.)
    hidden = {m.id: archived_by[m.id] for m in messages
              if archived_by.get(m.id) in active_ids and not m.pinned}
    settings = with_overrides(store.get_chat(chat_id).settings, overrides)
    rows = build_rows(messages, active, hidden)
    return Snapshot(chat_id, messages, hidden, active, None, effective_policy(store, settings),
                    versions=store.versions(chat_id), partial=True, rows=rows, row_index=row_index(rows),
                    draft=store.get_draft(chat_id))
