"""The Store's summary records and archive marks, and attach_engine, which saves an engine's summarizations
as they happen."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Set
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, col, select, update

from ..model.records import SummaryRecord
from .database import StoreBase
from .errors import StoreConflict, StoreError, StoreWriteError
from .schema import MESSAGE, ChatRow, MessageRow, SummaryRow

if TYPE_CHECKING:
    from .store import Store


class SummaryTable(StoreBase):
    """Store's summary methods (a part of Store, through StoreBase)."""

    def archived_by(self, chat_id: str) -> dict[str, str]:
        """{message id: id of the summary that archived it} for archived messages."""
        with self._read() as session:
            rows = session.execute(select(MessageRow.id, MessageRow.archived_by)
                                   .where(MessageRow.chat_id == chat_id, col(MessageRow.archived_by).is_not(None)))
            return {key: value for key, value in rows}

    def _upsert_record(self, session: Session, chat_id: str, record: SummaryRecord) -> None:
        values = {"id": record.id, "chat_id": chat_id, "record": record.model_dump_json(), "status": record.status,
                  "created_at": record.created_at, "parent_id": record.parent_id, "depth": record.depth}
        # Values given at execution, not in the statement: SQLAlchemy's statement cache would keep the last
        # record's JSON (one entry per covered message) alive for as long as the store is open.
        stmt = sqlite_insert(SummaryRow)
        session.connection().execute(stmt.on_conflict_do_update(
            index_elements=["chat_id", "id"],
            set_={k: stmt.excluded[k] for k in ("record", "status", "created_at", "parent_id", "depth")}), values)

    def save_summary_state(self, chat_id: str, records: Iterable[SummaryRecord],
                           archived_by: Mapping[str, str | None], active_before: Set[str] | None = None,
                           what: str = "save the summary") -> None:
        """Records (new or with a changed status) and which summary hides each given message: one transaction,
        so after a crash the chat is wholly before or wholly after a summarization or an undo.

        `active_before`: the chat's active summaries the change was made from. If the store's differ, another
        Precis (the window, a command) summarized or undid meanwhile, and saving would stack a second summary on
        the same messages or undo one twice: StoreConflict, nothing written. `what` is the change, as an error
        names it ('could not undo the summary: ... is read-only')."""
        with self._write(what) as session:
            self._chat_row(session, chat_id, deleted_ok=True)
            if active_before is not None:
                stored = set(session.exec(select(SummaryRow.id).where(SummaryRow.chat_id == chat_id,
                                                                      SummaryRow.status == "active")).all())
                if stored != set(active_before):
                    raise StoreConflict(f"could not {what}: another Precis summarized this chat or undid "
                                        f"one of its summaries meanwhile ({self.path}). Nothing was changed; "
                                        "open the chat again to see its summaries as they are now.")
            for record in records:
                self._upsert_record(session, chat_id, record)
            if archived_by:
                session.connection().execute(
                    update(MESSAGE).where(MESSAGE.c.chat_id == chat_id, MESSAGE.c.id == bindparam("mid"))
                    .values(archived_by=bindparam("rid")),
                    [{"mid": mid, "rid": rid} for mid, rid in archived_by.items()])
            session.exec(update(ChatRow).where(col(ChatRow.id) == chat_id).values(updated_at=time.time()))

    def load_records(self, chat_id: str) -> list[SummaryRecord]:
        """Every summary record of the chat, any status, oldest first."""
        with self._read() as session:
            rows = session.execute(select(SummaryRow.record).where(SummaryRow.chat_id == chat_id)
                                   .order_by(col(SummaryRow.created_at), col(SummaryRow.pk)))
            return [SummaryRecord.model_validate_json(r) for (r,) in rows]


def attach_engine(store: Store, chat_id: str, engine: Any,
                  on_error: Callable[[StoreError], None] | None = None) -> Callable[[], None]:
    """Persist every summarization, merge and undo of `engine`, each in one transaction.

    The engine's records (status, depth, ...) are compared with what was last saved, and only the differences are
    written, with which record now hides each message the event's records cover (a summary's own range, a merge's
    or an undone merge's whole range): no event looks at the rest of the chat. A save is refused (StoreConflict)
    when another Precis changed the chat's summaries since the engine was restored or last saved. Every failed save
    (disk full, read-only, a record that cannot be written) is a StoreError: given to `on_error` for the caller to
    show, or without one raised from the engine's call that made the change. Returns a function that detaches.
    """
    # What can change on a saved record is its status and its place in the chain; new records are new ids.
    def mark(record: SummaryRecord) -> tuple:
        return record.status, record.depth, record.parent_id

    saved_records = {r.id: mark(r) for r in engine.records}
    unsaved: set[str] = set()  # messages of events whose save failed: written with the next one

    def on_event(event: Any) -> None:
        if event.kind == "declined":  # nothing was kept: nothing to save
            return
        changed = {r.id: (r, mark(r)) for r in engine.records if saved_records.get(r.id) != mark(r)}
        changed.setdefault(event.record.id, (event.record, mark(event.record)))
        touched = unsaved | set(engine.archive.covered(event.record))
        archive = {mid: engine.archived_by(mid) for mid in touched}
        what = "undo the summary" if event.kind == "undone" else "save the summary"
        try:
            store.save_summary_state(chat_id, [record for record, _mark in changed.values()], archive,
                                     active_before={rid for rid, m in saved_records.items() if m[0] == "active"},
                                     what=what)
        except Exception as exc:  # any failure, not only the store's: a record JSON or SQLite cannot hold
            unsaved.update(touched)
            failure = exc if isinstance(exc, StoreError) else StoreWriteError(
                f"could not {what}: {exc}. Nothing was changed.")
            if on_error is None:
                raise failure  # the store's own error, or this one with it as its context
            on_error(failure)
            return
        unsaved.clear()
        saved_records.update({rid: m for rid, (_record, m) in changed.items()})

    return engine.subscribe(on_event)
