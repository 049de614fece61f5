"""Persistence: chats, messages, summary records, settings and drafts in one SQLite file (SQLModel).

The file is `precis.db` in the data folder. Opening it takes a lock file next to it while it checks the schema
version (a newer one is refused, the file left untouched), copies a corrupt file aside before reporting it, and
runs the migrations; after that SQLite's own locking lets the window and any number of commands share the file.
Every write is one transaction: a crash or a full disk leaves the state before or after it.

One Store API, split by concern: errors.py (the store's errors), schema.py (migrations and rows), opening.py (the
lock file, the version check, a corrupt file set aside, migrating), database.py (the engine, the write transaction,
StoreBase: what every part works through), message_table.py (messages, token counts, search), summary_table.py
(summary records, archive marks, attach_engine), version_table.py (a regenerated reply's versions); this module
holds the chats, their settings, drafts, global settings and open_store. The errors are importable from here too.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import bindparam, func
from sqlmodel import col, select, update

from ..model.messages import Message
from ..model.records import SummaryRecord
from ..model.titles import NEW_CHAT_TITLE
from ..settings import SECRET_NAME, SUMMARIZATION_KEY, ChatSettings
from .database import BUSY_TIMEOUT_MS, ChangeWatch, sqlite_connection
from .errors import (  # the Store's API names them too
    ChatNotFound,
    MessageNotFound,
    StoreConflict,
    StoreCorrupt,
    StoreError,
    StoreLocked,
    StoreTooNew,
    StoreWriteError,
)
from .message_table import MessageTable, SearchHit, bulk_insert, insert_messages
from .opening import (
    LOCK_NAME,
    check_existing,
    create_database_file,
    empty_file_notice,
    file_identity,
    mark_checked,
    migrate,
    migration_lock,
)
from .paths import DB_NAME
from .paths import data_dir as resolve_data_dir
from .schema import CHAT, SCHEMA_VERSION, ChatRow, MessageRow, SettingRow, SummaryRow
from .summary_table import SummaryTable, attach_engine
from .version_table import Branches, BranchMessage, Versions, VersionTable

log = logging.getLogger("precis.store")

@dataclass(frozen=True)
class ChatFingerprint:
    """A stored chat as an open chat's engine holds it (Store.chat_fingerprint): equal unless the chat changed."""

    messages: int
    newest_id: str | None
    newest_sha256: str | None
    records: int
    active_records: int
    pinned: frozenset[str]  # the ids of the pinned messages
    settings: ChatSettings  # as stored, without a session's overrides
    summarization: dict  # the global summarization settings as stored (Settings → Summarization, in any window)


@dataclass(frozen=True)
class ChatInfo:
    id: str
    title: str
    created_at: float
    updated_at: float
    settings: ChatSettings
    message_count: int
    deleted_at: float | None


# The fewest characters of a chat's id that name it (as git's shortest abbreviation): fewer are a number typed.
MIN_ID_PREFIX = 4


def open_store(data_dir: str | os.PathLike[str] | None = None, *, newer_read_only: bool = False) -> Store:
    """Open (creating or migrating) the store in `data_dir` (default: PRECIS_HOME or the user data folder).

    A store we may not write (a read-only folder or file) opens read-only when it is already current: reading
    commands work, and writes fail naming the file. One a newer Precis wrote is refused (StoreTooNew), or with
    `newer_read_only` opened read-only for what this one can read of it (listing, exporting): never written."""
    try:
        folder = resolve_data_dir(data_dir)
    except OSError as exc:
        # mkdir's "File exists" for a file where the folder should be reads as if the folder were there.
        why = "it is a file, not a folder" if isinstance(exc, FileExistsError) else exc.strerror or exc
        raise StoreWriteError(f"cannot create the data folder {exc.filename or data_dir}: {why}") from None
    path = folder / DB_NAME
    exists = path.exists() and path.stat().st_size > 0
    writable = os.access(folder, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))
    if exists and not writable:
        version = _version_allowing_newer(path, newer_read_only)
        if version > SCHEMA_VERSION:
            return _newer(path)
        if version != SCHEMA_VERSION:
            raise StoreWriteError(f"{path} needs an upgrade (schema {version} to {SCHEMA_VERSION}) but is "
                                  "read-only; make it writable once")
        return Store(path, read_only=True)
    with migration_lock(folder / LOCK_NAME):
        if exists and _version_allowing_newer(path, newer_read_only) > SCHEMA_VERSION:
            return _newer(path)
        notice = empty_file_notice(path)  # under the lock: another Precis may have just made it a database
        try:
            migrate(path)
        except sqlite3.DatabaseError as exc:
            raise StoreWriteError(f"could not prepare {path}: {exc}; the file was left as it was") from None
    store = Store(path)
    store.opening_notice = notice
    return store


def _version_allowing_newer(path: Path, newer_read_only: bool) -> int:
    """check_existing, with a newer schema's version returned rather than refused when `newer_read_only`."""
    try:
        return check_existing(path)
    except StoreTooNew:
        if not newer_read_only:
            raise
        return SCHEMA_VERSION + 1


def _newer(path: Path) -> Store:
    store = Store(path, read_only=True)
    store.opening_notice = (f"{path} was written by a newer Precis: opened read-only, to list and export what this "
                            "one can read of it. It is not changed.")
    return store


# -------------------------------------------------------------------------------------------------- store

class Store(MessageTable, SummaryTable, VersionTable):
    """All reads and writes of chats. Each method is one transaction on its own session."""

    def __init__(self, path: Path, *, read_only: bool = False):
        super().__init__(path, read_only=read_only)
        self._watch: ChangeWatch | None = None
        self._file = file_identity(path)
        # What opening found that the user should hear once (open_store: an empty file): the window's status bar,
        # the commands' stderr.
        self.opening_notice: str | None = None

    # ---- lifecycle
    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        self.engine.dispose()
        # What this store wrote left the file sound; if the file was replaced meanwhile, the next opening checks it.
        if not self.read_only and file_identity(self.path) == self._file:
            mark_checked(self.path)

    def copy_to(self, folder: Path) -> Store:
        """A copy of this store, as committed now (what is still in its WAL included), opened in `folder`: work
        done on the copy (a screenshot opening a chat, which may summarize it) leaves this store as it was."""
        path = Path(folder) / DB_NAME
        create_database_file(path)
        target = sqlite3.connect(path)
        try:
            with self.engine.connect() as conn:
                sqlite_connection(conn).backup(target)
        except sqlite3.Error as exc:
            raise StoreWriteError(f"could not copy {self.path} to {path}: {exc}") from None
        finally:
            target.close()
        return Store(path)

    def chats_changed(self) -> bool:
        """Whether any chat was added, renamed, deleted or given messages or summaries, or the global summarization
        settings changed, since the last call (the first call starts watching), by this process or another on the same
        data folder. Cheap: ask it on a timer."""
        try:
            if self._watch is None:
                self._watch = ChangeWatch(self.path, self.read_only)
                return False
            return self._watch.chats_changed()
        except sqlite3.Error as exc:  # a busy or vanished file: no news this time, the next look may succeed
            log.warning("could not look for changes to %s: %s", self.path, exc)
            return False

    def chat_fingerprint(self, chat_id: str) -> ChatFingerprint:
        """What an open chat's engine is compared with to tell whether another process changed the chat since it was
        loaded: added to it, finished its last reply, summarized, pinned or unpinned, changed its settings or the
        global summarization settings. One query; the pinned messages are read from every row of the chat (28 ms at
        100,000 messages, 3 ms without; benchmarks/bench_store.py fingerprint)."""
        sql = """SELECT (SELECT count(*) FROM message WHERE chat_id = ?1),
                        (SELECT id FROM message WHERE chat_id = ?1 ORDER BY seq DESC LIMIT 1),
                        (SELECT sha256 FROM message WHERE chat_id = ?1 ORDER BY seq DESC LIMIT 1),
                        (SELECT count(*) FROM summary WHERE chat_id = ?1),
                        (SELECT count(*) FROM summary WHERE chat_id = ?1 AND status = 'active'),
                        (SELECT json_group_array(id) FROM message WHERE chat_id = ?1 AND pinned),
                        (SELECT settings FROM chat WHERE id = ?1),
                        (SELECT value FROM setting WHERE key = ?2)"""
        with self._read() as session:
            messages, newest_id, newest_sha256, records, active, pinned, settings, summarization = session.connection(
            ).exec_driver_sql(sql, (chat_id, SUMMARIZATION_KEY)).one()
        return ChatFingerprint(messages, newest_id, newest_sha256, records, active, frozenset(json.loads(pinned)),
                               ChatSettings.model_validate_json(settings or "{}"), json.loads(summarization or "{}"))

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- chats
    def create_chat(self, title: str = NEW_CHAT_TITLE, settings: ChatSettings | Mapping[str, Any] | None = None) -> str:
        return self.import_chat(title, [], settings=settings)

    def _chat_info(self, row: ChatRow, count: int) -> ChatInfo:
        return ChatInfo(id=row.id, title=row.title, created_at=row.created_at, updated_at=row.updated_at,
                        settings=ChatSettings.model_validate_json(row.settings), message_count=count,
                        deleted_at=row.deleted_at)

    def list_chats(self, *, include_deleted: bool = False) -> list[ChatInfo]:
        """Chats, most recently updated first."""
        counts = (select(MessageRow.chat_id, func.count().label("n"))
                  .group_by(MessageRow.chat_id).subquery())
        query = (select(ChatRow, func.coalesce(counts.c.n, 0))
                 .outerjoin(counts, counts.c.chat_id == ChatRow.id)
                 .order_by(col(ChatRow.updated_at).desc()))
        if not include_deleted:
            query = query.where(col(ChatRow.deleted_at).is_(None))
        with self._read() as session:
            return [self._chat_info(row, n) for row, n in session.exec(query).all()]

    def get_chat(self, chat_id: str) -> ChatInfo:
        with self._read() as session:
            row = self._chat_row(session, chat_id)
            count = session.exec(select(func.count()).where(MessageRow.chat_id == chat_id)).one()
            return self._chat_info(row, count)

    def find_chat(self, ref: str) -> ChatInfo:
        """A chat by id, exact title, or unique id prefix of MIN_ID_PREFIX characters or more (how the command line
        names chats: `precis history 0` took the one chat whose id began with 0)."""
        if not ref.strip():
            raise ChatNotFound("no chat given: name one by its id, the start of its id, or its title "
                               "(see `precis chats`)")
        chats = self.list_chats()
        started = [c for c in chats if c.id.startswith(ref)] if len(ref) >= MIN_ID_PREFIX else []
        for match in ([c for c in chats if c.id == ref], [c for c in chats if c.title == ref], started):
            if len(match) == 1:
                return match[0]
            if len(match) > 1:
                shown = ", ".join(f"{c.id[:12]} ({c.title})" for c in match[:5])
                more = f" and {len(match) - 5} more" if len(match) > 5 else ""
                raise ChatNotFound(f"{ref!r} matches {len(match)} chats: {shown}{more}; give more of the id")
        short = (f"; the start of an id names a chat from {MIN_ID_PREFIX} characters on"
                 if len(ref) < MIN_ID_PREFIX and any(c.id.startswith(ref) for c in chats) else "")
        raise ChatNotFound(f"no chat with id or title {ref!r}{short} (see `precis chats`)")

    def rename_chat(self, chat_id: str, title: str) -> None:
        with self._write("rename the chat") as session:
            row = self._chat_row(session, chat_id)
            row.title, row.updated_at = title, time.time()
            session.add(row)

    def update_chat_settings(self, chat_id: str, settings: ChatSettings | Mapping[str, Any]) -> ChatSettings:
        valid = settings if isinstance(settings, ChatSettings) else ChatSettings.model_validate(dict(settings))
        with self._write("save the chat settings") as session:
            row = self._chat_row(session, chat_id)
            row.settings, row.updated_at = valid.model_dump_json(), time.time()
            session.add(row)
        return valid

    def delete_chat(self, chat_id: str) -> None:
        """Hide a chat; `restore_chat` undoes it until `purge_deleted` removes it for good."""
        with self._write("delete the chat") as session:
            row = self._chat_row(session, chat_id)
            row.deleted_at = time.time()
            session.add(row)

    def delete_untouched_chat(self, chat_id: str) -> bool:
        """Hide a chat still as create_chat made it (no message, no draft, its title and settings as made): one the
        user made and left. Checked in the write itself, so a chat another Precis began to use meanwhile (a terminal
        chat, `precis chat --chat`) stays. Whether it was hidden."""
        with self._write("remove the empty chat") as session:
            row = self._chat_row(session, chat_id)
            messages = session.exec(select(func.count()).where(MessageRow.chat_id == chat_id)).one()
            untouched = (not messages and not row.draft.strip() and row.title == NEW_CHAT_TITLE
                         and ChatSettings.model_validate_json(row.settings) == ChatSettings())
            if untouched:
                row.deleted_at = time.time()
                session.add(row)
            return untouched

    def restore_chat(self, chat_id: str) -> None:
        """Bring back a deleted chat, as updated now: at the top of the list, and a change chats_changed sees even
        when it follows the deletion before the watcher looked (the chat rows would read as they did before both)."""
        with self._write("restore the chat") as session:
            row = self._chat_row(session, chat_id, deleted_ok=True)
            row.deleted_at, row.updated_at = None, time.time()
            session.add(row)

    def purge_deleted(self, deleted_before: float) -> int:
        """Remove for good the chats deleted before `deleted_before` (a time.time()), with their messages, versions,
        summaries and search index entries: their text is overwritten in the file (secure_delete) and the write-ahead
        log that held it is emptied. How many chats; 0 on a read-only store."""
        if self.read_only:
            return 0
        with self._write("remove deleted chats for good") as session:
            rows = session.exec(select(ChatRow).where(col(ChatRow.deleted_at).is_not(None),
                                                      col(ChatRow.deleted_at) < deleted_before)).all()
            for row in rows:
                session.delete(row)
            removed = len(rows)
            if removed:  # the index's segments still hold the words of what was deleted until they are merged
                session.flush()
                session.connection().exec_driver_sql("INSERT INTO message_fts(message_fts) VALUES ('optimize')")
        if removed:
            with self.engine.connect() as connection:
                sqlite_connection(connection).execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return removed

    # ---- drafts and global settings
    def get_draft(self, chat_id: str) -> str:
        with self._read() as session:
            return self._chat_row(session, chat_id).draft

    def set_draft(self, chat_id: str, draft: str) -> None:
        with self._write("save the draft") as session:
            # The draft at execution, not in the statement (see update_message): a pasted log would stay cached.
            chats = CHAT
            session.connection().execute(update(chats).where(chats.c.id == bindparam("of_id")),
                                         {"draft": draft, "of_id": chat_id})

    def get_setting(self, key: str, default: Any = None) -> Any:
        with self._read() as session:
            row = session.get(SettingRow, key)
            return default if row is None else json.loads(row.value)

    def set_setting(self, key: str, value: Any) -> None:
        if SECRET_NAME.search(key):
            raise ValueError(f"setting {key!r} looks like a secret; keys are kept in the OS keyring, not here")
        with self._write("save the setting") as session:
            session.merge(SettingRow(key=key, value=json.dumps(value, ensure_ascii=False)))

    # ---- messages
    def import_chat(self, title: str, messages: Sequence[Message], records: Sequence[SummaryRecord] = (),
                    archived_by: Mapping[str, str] | None = None,
                    settings: ChatSettings | Mapping[str, Any] | None = None,
                    versions: Mapping[str, Versions] | None = None,
                    branches: Mapping[str, Branches] | None = None) -> str:
        """A new chat with its messages, summary records, the versions of its messages that have them (by message
        id; the message's content is the version shown) and the branches of those versions not shown (by message id,
        then version place), in one transaction: all of it or nothing."""
        return self.import_chats([NewChat(title, messages, records, archived_by, settings, versions, branches)])[0]

    def import_chats(self, chats: Sequence[NewChat]) -> list[str]:
        """New chats (as import_chat makes one), all in one transaction: every one of them or none. Their ids."""
        now = time.time()
        ids = []
        with self._write("import the chats" if len(chats) > 1 else "import the chat" if chats and chats[0].messages
                         else "create the chat") as session, bulk_insert(session):
            for chat in chats:
                settings = chat.settings
                valid = settings if isinstance(settings, ChatSettings) else \
                    ChatSettings.model_validate(dict(settings or {}))
                chat_id = Message(role="user").id
                ids.append(chat_id)
                session.add(ChatRow(id=chat_id, title=chat.title, created_at=chat.created_at or now,
                                    updated_at=chat.updated_at or chat.created_at or now,
                                    settings=valid.model_dump_json()))
                session.flush()
                insert_messages(session, chat_id, chat.messages, 0, chat.archived_by)
                if chat.versions:
                    self._insert_versions(session, chat_id, [m for m in chat.messages if m.id in chat.versions],
                                          chat.versions, chat.branches or {})
                for record in chat.records:
                    self._upsert_record(session, chat_id, record)
        return ids


@dataclass(frozen=True)
class NewChat:
    """A chat to import: its title and messages, what else its file kept of it, and when it was made and last
    changed (None: now)."""

    title: str
    messages: Sequence[Message]
    records: Sequence[SummaryRecord] = ()
    archived_by: Mapping[str, str] | None = None  # message id -> id of the record that archived it
    settings: ChatSettings | Mapping[str, Any] | None = None
    versions: Mapping[str, Versions] | None = None
    branches: Mapping[str, Branches] | None = None
    created_at: float | None = None
    updated_at: float | None = None


__all__ = ["BUSY_TIMEOUT_MS", "DB_NAME", "LOCK_NAME", "SCHEMA_VERSION", "BranchMessage", "Branches", "ChatInfo",
           "ChatNotFound", "ChatRow", "ChatSettings", "MessageNotFound", "MessageRow", "NewChat", "SearchHit", "SettingRow", "Store",
           "StoreConflict", "StoreCorrupt", "StoreError", "StoreLocked", "StoreTooNew", "StoreWriteError", "SummaryRow",
           "Versions", "attach_engine", "migrate", "open_store"]
