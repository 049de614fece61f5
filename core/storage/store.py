"""Persistence: chats, messages, summary records, settings and drafts in one SQLite file (SQLModel).

The file is `precis.db` in the data folder. Opening it takes a lock file next to it while it checks the schema
version (a newer one is refused, the file left untouched), copies a corrupt file aside before reporting it, and
runs the migrations; after that SQLite's own locking lets the window and any number of commands share the file.
Every write is one transaction: a crash or a full disk leaves the state before or after it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator
from pydantic import Field as PydanticField
from sqlalchemy import bindparam, event, func, text
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlmodel import Field, Session, SQLModel, create_engine, select, update

from ..context.policy import SummarizationPolicy, policy_errors
from ..context.recall import fts_or_query
from ..model.messages import Message, ToolCall
from ..model.records import SummaryRecord
from ..model.schema import setting_fields
from ..tools import RUN_TIMEOUT_SECONDS
from .paths import data_dir as resolve_data_dir

DB_NAME = "precis.db"
LOCK_NAME = "precis.lock"
BUSY_TIMEOUT_MS = 5000


# ---------------------------------------------------------------------------------------------------- errors

class StoreError(Exception):
    """A problem with the chat database, worded for the person using Precis."""


class StoreLocked(StoreError):
    pass


class StoreTooNew(StoreError):
    pass


class StoreCorrupt(StoreError):
    pass


class StoreWriteError(StoreError):
    pass


class ChatNotFound(StoreError):
    pass


class MessageNotFound(StoreError):
    pass


# -------------------------------------------------------------------------------------------------- schema

# Migrations are frozen SQL: step N takes a database at version N-1 to version N. Never edit a shipped step; add one.
MIGRATIONS: list[tuple[int, tuple[str, ...]]] = [
    (1, (
        """CREATE TABLE chat (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            settings TEXT NOT NULL DEFAULT '{}')""",
        """CREATE TABLE message (
            pk INTEGER PRIMARY KEY,
            id TEXT NOT NULL,
            chat_id TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            tool_calls TEXT,
            tool_call_id TEXT,
            name TEXT,
            pinned INTEGER NOT NULL DEFAULT 0,
            incomplete INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            token_count INTEGER,
            sha256 TEXT NOT NULL,
            archived_by TEXT,
            UNIQUE (chat_id, id),
            UNIQUE (chat_id, seq))""",
        """CREATE TABLE summary (
            pk INTEGER PRIMARY KEY,
            id TEXT NOT NULL,
            chat_id TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
            record TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at REAL NOT NULL,
            parent_id TEXT,
            depth INTEGER NOT NULL,
            UNIQUE (chat_id, id))""",
        """CREATE TABLE setting (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    )),
    # 2: search across chats, drafts that survive a restart, delete with undo.
    (2, (
        "ALTER TABLE chat ADD COLUMN deleted_at REAL",
        "ALTER TABLE chat ADD COLUMN draft TEXT NOT NULL DEFAULT ''",
        """CREATE VIRTUAL TABLE message_fts USING fts5(
            content, content='message', content_rowid='pk', tokenize='unicode61 remove_diacritics 2')""",
        """CREATE TRIGGER message_fts_insert AFTER INSERT ON message BEGIN
            INSERT INTO message_fts(rowid, content) VALUES (new.pk, new.content); END""",
        """CREATE TRIGGER message_fts_delete AFTER DELETE ON message BEGIN
            INSERT INTO message_fts(message_fts, rowid, content) VALUES ('delete', old.pk, old.content); END""",
        """CREATE TRIGGER message_fts_update AFTER UPDATE OF content ON message BEGIN
            INSERT INTO message_fts(message_fts, rowid, content) VALUES ('delete', old.pk, old.content);
            INSERT INTO message_fts(rowid, content) VALUES (new.pk, new.content); END""",
        "INSERT INTO message_fts(message_fts) VALUES ('rebuild')",
        "CREATE INDEX chat_updated ON chat(updated_at)",
    )),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


class ChatRow(SQLModel, table=True):
    __tablename__ = "chat"
    id: str = Field(primary_key=True)
    title: str
    created_at: float
    updated_at: float
    settings: str = "{}"
    deleted_at: float | None = None
    draft: str = ""


class MessageRow(SQLModel, table=True):
    __tablename__ = "message"
    pk: int | None = Field(default=None, primary_key=True)
    id: str
    chat_id: str = Field(foreign_key="chat.id")
    seq: int
    role: str
    content: str
    tool_calls: str | None = None
    tool_call_id: str | None = None
    name: str | None = None
    pinned: bool = False
    incomplete: bool = False
    created_at: float
    token_count: int | None = None
    sha256: str
    archived_by: str | None = None


class SummaryRow(SQLModel, table=True):
    __tablename__ = "summary"
    pk: int | None = Field(default=None, primary_key=True)
    id: str
    chat_id: str = Field(foreign_key="chat.id")
    record: str
    status: str
    created_at: float
    parent_id: str | None = None
    depth: int


MESSAGE = MessageRow.__table__


class SettingRow(SQLModel, table=True):
    __tablename__ = "setting"
    key: str = Field(primary_key=True)
    value: str


# ------------------------------------------------------------------------------------------- chat settings

# Setting names that would hold a secret. Keys live in the OS keyring, never in this file.
_SECRET_NAME = re.compile(r"api[_-]?key|secret|password|passwd|authorization|bearer|credential", re.IGNORECASE)


class ChatSettings(BaseModel):
    """Per-chat settings. Other keys are allowed (and kept) unless their name looks like a secret."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    system_prompt: str = PydanticField("", title="System prompt",
                                       description="Sent before the conversation as the model's instructions")
    context_window: int | None = PydanticField(None, ge=256, le=10_000_000, title="Context window",
                                               json_schema_extra={"unit": "tokens"},
                                               description="The budget; empty: the model's own window")
    reserve_output: int = PydanticField(512, ge=0, le=1_000_000, title="Tokens reserved for the reply",
                                        json_schema_extra={"unit": "tokens"},
                                        description="Kept free in the window for the model's answer")
    run_timeout: int = PydanticField(int(RUN_TIMEOUT_SECONDS), ge=1, le=86_400, title="/run time limit",
                                     json_schema_extra={"unit": "seconds"},
                                     description="A command run with /run is stopped after this long; "
                                                 "what it printed is kept")
    # Overrides of SummarizationPolicy fields for this chat.
    summarization: dict[str, Any] = PydanticField(default_factory=dict)

    @field_validator("summarization")
    @classmethod
    def _valid_policy(cls, value: dict[str, Any]) -> dict[str, Any]:
        errors = policy_errors(value)
        if errors:
            titles = {field.name: field.title for field in setting_fields(SummarizationPolicy)}
            raise ValueError("; ".join(f"{titles.get(field, field) or 'summarization'}: {reason}"
                                       for field, reason in errors.items()))
        return value

    @model_validator(mode="after")
    def _no_secrets(self) -> ChatSettings:
        for name in self.model_extra or {}:
            if _SECRET_NAME.search(name):
                raise ValueError(f"setting {name!r} looks like a secret; keys are kept in the OS keyring, not here")
        return self


@dataclass(frozen=True)
class ChatInfo:
    id: str
    title: str
    created_at: float
    updated_at: float
    settings: ChatSettings
    message_count: int
    deleted_at: float | None


@dataclass(frozen=True)
class SearchHit:
    chat_id: str
    chat_title: str
    message_id: str
    role: str
    snippet: str
    # The summary that hides this message from the model, if any.
    archived_by: str | None


# ------------------------------------------------------------------------------------------- conversions

def _calls_to_json(calls: Sequence[ToolCall]) -> str | None:
    if not calls:
        return None
    return json.dumps([{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls], ensure_ascii=False)


def _message_values(chat_id: str, message: Message) -> dict[str, Any]:
    return {
        "id": message.id, "chat_id": chat_id, "role": message.role, "content": message.content,
        "tool_calls": _calls_to_json(message.tool_calls), "tool_call_id": message.tool_call_id,
        "name": message.name, "pinned": message.pinned, "incomplete": message.incomplete,
        "created_at": message.created_at, "sha256": message.sha256(),
    }


def _message_from_row(id_: str, role: str, content: str, tool_calls: str | None, tool_call_id: str | None,
                      name: str | None, created_at: float, pinned: int, incomplete: int) -> Message:
    calls = tuple(ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"])
                  for c in json.loads(tool_calls)) if tool_calls else ()
    return Message(role=role, content=content, tool_calls=calls, tool_call_id=tool_call_id, name=name, id=id_,
                   created_at=created_at, pinned=bool(pinned), incomplete=bool(incomplete))


def _fts_query(text_: str) -> str:
    """Every word as a quoted phrase, so punctuation in what the user typed is never FTS syntax."""
    words = re.findall(r"\w+", text_)
    return " ".join('"' + w.replace('"', '""') + '"' for w in words)


# ------------------------------------------------------------------------------------------------ opening

MIGRATION_WAIT_SECONDS = 30


@contextmanager
def _migration_lock(path: Path) -> Iterator[None]:
    """Holds `precis.lock` while one process checks and migrates the file; others wait their turn.

    Only opening takes it: afterwards SQLite's own locking (WAL, busy timeout) lets readers run beside a writer
    and writers wait, so the window and any number of `precis` commands share one data folder.
    """
    try:
        fh = open(path, "a+")
    except OSError as exc:
        raise StoreWriteError(f"cannot open the lock file {path}: {exc.strerror or exc}") from None
    with fh:
        deadline = time.monotonic() + MIGRATION_WAIT_SECONDS
        while True:
            try:
                _lock_exclusive(fh)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise StoreLocked(f"{path} is still held by another Precis after {MIGRATION_WAIT_SECONDS} s "
                                      "(it is opening or upgrading the database); try again") from None
                time.sleep(0.05)
        yield


try:
    import fcntl

    def _lock_exclusive(fh: Any) -> None:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
except ImportError:  # Windows
    import msvcrt

    def _lock_exclusive(fh: Any) -> None:
        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)


def _copy_aside(path: Path) -> Path:
    """A copy of a damaged file, made once: a copy with the same size and time already there is reused.
    It is written under a temporary name and renamed, so a full disk leaves no partial copy."""
    stat = path.stat()
    for earlier in path.parent.glob(f"{path.name}.corrupt-*"):
        other = earlier.stat()
        if other.st_size == stat.st_size and int(other.st_mtime) == int(stat.st_mtime):
            return earlier
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    partial = aside.with_name(aside.name + ".partial")
    try:
        shutil.copy2(path, partial)
        partial.replace(aside)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise StoreCorrupt(f"{path} is damaged and could not be copied aside ({exc.strerror or exc}); "
                           "the file was not changed. Free some space or copy it yourself before repairing.") from None
    return aside


def _check_existing(path: Path) -> int:
    """Schema version of an existing file, read without changing it. A corrupt file is copied aside first."""
    try:
        conn = sqlite3.connect(_readonly_uri(path), uri=True)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            problem = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        problem = str(exc)
    if problem != "ok":
        aside = _copy_aside(path)
        raise StoreCorrupt(
            f"{path} is damaged ({problem}). A copy was saved as {aside}; the file was not changed. "
            "Move it away to start with an empty store, or restore a backup.")
    if version > SCHEMA_VERSION:
        raise StoreTooNew(
            f"{path} was written by a newer Precis (schema {version}; this one knows up to {SCHEMA_VERSION}). "
            "It was not changed; update Precis to open it.")
    return version


def migrate(path: Path) -> int:
    """Bring the file to SCHEMA_VERSION, one transaction per step. Returns the version it started at."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        start = conn.execute("PRAGMA user_version").fetchone()[0]
        if 0 < start < SCHEMA_VERSION:
            # Keep the file as it was before the first migration that touches real data.
            conn.execute("VACUUM INTO ?", (str(path.with_name(f"{path.name}.v{start}-backup")),))
        for version, statements in MIGRATIONS:
            if version <= start:
                continue
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in statements:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {version}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return start
    finally:
        conn.close()


def _readonly_uri(path: Path) -> str:
    """A read-only SQLite URI. In a folder we cannot write, WAL's side files cannot be made either: then the file
    is opened as immutable (nobody can be writing it through this folder)."""
    writable_folder = os.access(path.parent, os.W_OK)
    return f"{path.as_uri()}?mode=ro" + ("" if writable_folder else "&immutable=1")


def _make_engine(path: Path, read_only: bool) -> Engine:
    if read_only:
        engine = create_engine("sqlite://", creator=lambda: sqlite3.connect(
            _readonly_uri(path), uri=True, check_same_thread=False))
    else:
        engine = create_engine(f"sqlite:///{path}", connect_args={"check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        # Let SQLAlchemy's BEGIN below start every transaction, reads included (consistent snapshots).
        dbapi_conn.isolation_level = None
        pragmas = [f"busy_timeout={BUSY_TIMEOUT_MS}"]
        if not read_only:
            pragmas += ["journal_mode=WAL", "foreign_keys=ON", "synchronous=NORMAL"]
        for pragma in pragmas:
            dbapi_conn.execute(f"PRAGMA {pragma}")

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN")

    return engine


def open_store(data_dir: str | os.PathLike[str] | None = None) -> Store:
    """Open (creating or migrating) the store in `data_dir` (default: PRECIS_HOME or the user data folder).

    A store we may not write (a read-only folder or file) opens read-only when it is already current: reading
    commands work, and writes fail naming the file."""
    try:
        folder = resolve_data_dir(data_dir)
    except OSError as exc:
        raise StoreWriteError(f"cannot create the data folder {exc.filename or data_dir}: "
                              f"{exc.strerror or exc}") from None
    path = folder / DB_NAME
    exists = path.exists() and path.stat().st_size > 0
    writable = os.access(folder, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))
    if exists and not writable:
        version = _check_existing(path)
        if version != SCHEMA_VERSION:
            raise StoreWriteError(f"{path} needs an upgrade (schema {version} to {SCHEMA_VERSION}) but is "
                                  "read-only; make it writable once")
        return Store(path, read_only=True)
    with _migration_lock(folder / LOCK_NAME):
        if exists:
            _check_existing(path)
        try:
            migrate(path)
        except sqlite3.DatabaseError as exc:
            raise StoreWriteError(f"could not prepare {path}: {exc}; the file was left as it was") from None
    return Store(path)


# -------------------------------------------------------------------------------------------------- store

class Store:
    """All reads and writes of chats. Each method is one transaction on its own session."""

    def __init__(self, path: Path, *, read_only: bool = False):
        self.path = path
        self.read_only = read_only
        self.engine = _make_engine(path, read_only)

    # ---- lifecycle
    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, what: str) -> _WriteSession:
        if self.read_only:
            raise StoreWriteError(f"could not {what}: {self.path} is read-only. Nothing was changed.")
        return _WriteSession(self.engine, what)

    def _read(self) -> Session:
        return Session(self.engine)

    # ---- chats
    def create_chat(self, title: str = "New chat", settings: ChatSettings | Mapping[str, Any] | None = None) -> str:
        return self.import_chat(title, [], settings=settings)

    def _chat_row(self, session: Session, chat_id: str, *, deleted_ok: bool = False) -> ChatRow:
        row = session.get(ChatRow, chat_id)
        if row is None or (row.deleted_at is not None and not deleted_ok):
            raise ChatNotFound(f"no chat with id {chat_id}")
        return row

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
                 .order_by(ChatRow.updated_at.desc()))
        if not include_deleted:
            query = query.where(ChatRow.deleted_at.is_(None))
        with self._read() as session:
            return [self._chat_info(row, n) for row, n in session.exec(query).all()]

    def get_chat(self, chat_id: str) -> ChatInfo:
        with self._read() as session:
            row = self._chat_row(session, chat_id)
            count = session.exec(select(func.count()).where(MessageRow.chat_id == chat_id)).one()
            return self._chat_info(row, count)

    def find_chat(self, ref: str) -> ChatInfo:
        """A chat by id, unique id prefix, or exact title (how the command line names chats)."""
        chats = self.list_chats()
        for match in ([c for c in chats if c.id == ref], [c for c in chats if c.id.startswith(ref)],
                      [c for c in chats if c.title == ref]):
            if len(match) == 1:
                return match[0]
            if len(match) > 1:
                raise ChatNotFound(f"{ref!r} matches {len(match)} chats; give more of the id")
        raise ChatNotFound(f"no chat with id or title {ref!r} (see `precis chats`)")

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

    def restore_chat(self, chat_id: str) -> None:
        with self._write("restore the chat") as session:
            row = self._chat_row(session, chat_id, deleted_ok=True)
            row.deleted_at = None
            session.add(row)

    def purge_deleted(self, older_than: float = 0.0) -> int:
        """Remove chats deleted more than `older_than` seconds ago, with their messages and summaries."""
        cutoff = time.time() - older_than
        with self._write("remove deleted chats") as session:
            rows = session.exec(select(ChatRow).where(ChatRow.deleted_at.is_not(None),
                                                      ChatRow.deleted_at <= cutoff)).all()
            for row in rows:
                session.delete(row)
            return len(rows)

    # ---- drafts and global settings
    def get_draft(self, chat_id: str) -> str:
        with self._read() as session:
            return self._chat_row(session, chat_id).draft

    def set_draft(self, chat_id: str, draft: str) -> None:
        with self._write("save the draft") as session:
            session.exec(update(ChatRow).where(ChatRow.id == chat_id).values(draft=draft))

    def get_setting(self, key: str, default: Any = None) -> Any:
        with self._read() as session:
            row = session.get(SettingRow, key)
            return default if row is None else json.loads(row.value)

    def set_setting(self, key: str, value: Any) -> None:
        if _SECRET_NAME.search(key):
            raise ValueError(f"setting {key!r} looks like a secret; keys are kept in the OS keyring, not here")
        with self._write("save the setting") as session:
            session.merge(SettingRow(key=key, value=json.dumps(value, ensure_ascii=False)))

    # ---- messages
    def import_chat(self, title: str, messages: Sequence[Message], records: Sequence[SummaryRecord] = (),
                    archived_by: Mapping[str, str] | None = None,
                    settings: ChatSettings | Mapping[str, Any] | None = None) -> str:
        """A new chat with its messages and summary records, in one transaction: all of it or nothing."""
        valid = settings if isinstance(settings, ChatSettings) else ChatSettings.model_validate(dict(settings or {}))
        now = time.time()
        chat_id = Message(role="user").id
        archived_by = archived_by or {}
        with self._write("import the chat") as session:
            session.add(ChatRow(id=chat_id, title=title, created_at=now, updated_at=now,
                                settings=valid.model_dump_json()))
            session.flush()
            if messages:
                rows = [{**_message_values(chat_id, m), "seq": seq, "archived_by": archived_by.get(m.id)}
                        for seq, m in enumerate(messages)]
                session.connection().execute(MESSAGE.insert(), rows)
            for record in records:
                self._upsert_record(session, chat_id, record)
        return chat_id

    def add_message(self, chat_id: str, message: Message) -> None:
        self.add_messages(chat_id, [message])

    def add_messages(self, chat_id: str, messages: Sequence[Message]) -> None:
        """Append messages at the end of a chat."""
        with self._write("save the message") as session:
            row = self._chat_row(session, chat_id)
            start = session.exec(select(func.coalesce(func.max(MessageRow.seq), -1))
                                 .where(MessageRow.chat_id == chat_id)).one() + 1
            session.connection().execute(
                MESSAGE.insert(), [{**_message_values(chat_id, m), "seq": start + i} for i, m in enumerate(messages)])
            row.updated_at = time.time()
            session.add(row)

    def update_message(self, chat_id: str, message: Message) -> None:
        """Save a changed message (streamed text as it arrives, a pin, the `incomplete` mark). One cheap UPDATE.

        While a reply streams, save it with incomplete=True and clear the mark with the last save, so a crash
        leaves what was received, marked as cut off.
        """
        values = _message_values(chat_id, message)
        for key in ("id", "chat_id", "created_at"):
            del values[key]
        values["token_count"] = None
        with self._write("save the message") as session:
            result = session.execute(update(MessageRow)
                                     .where(MessageRow.chat_id == chat_id, MessageRow.id == message.id)
                                     .values(**values))
            if result.rowcount == 0:
                raise MessageNotFound(f"no message {message.id} in chat {chat_id}")

    def remove_last_message(self, chat_id: str, message_id: str) -> None:
        """Delete the newest message of a chat (regenerate, edit-and-resend), search index included.

        Refused for any other message, and for one a summary archived: older history is never deleted.
        """
        with self._write("remove the message") as session:
            row = self._chat_row(session, chat_id)
            newest = session.exec(select(MessageRow).where(MessageRow.chat_id == chat_id)
                                  .order_by(MessageRow.seq.desc()).limit(1)).first()
            if newest is None or newest.id != message_id:
                raise MessageNotFound(f"message {message_id} is not the newest message of chat {chat_id}; "
                                      "only the newest can be removed")
            if newest.archived_by is not None:
                raise MessageNotFound(f"message {message_id} is archived by summary {newest.archived_by}; "
                                      "undo the summary first")
            session.delete(newest)  # the delete trigger keeps the search index in step
            row.updated_at = time.time()
            session.add(row)

    def load_messages(self, chat_id: str) -> list[Message]:
        """Every message of a chat in order, archived ones included (the engine decides what the model sees)."""
        with self._read() as session:
            self._chat_row(session, chat_id, deleted_ok=True)
            # Plain driver rows: this is the hot path of opening a long chat.
            rows = session.connection().exec_driver_sql(
                "SELECT id, role, content, tool_calls, tool_call_id, name, created_at, pinned, incomplete "
                "FROM message WHERE chat_id = ? ORDER BY seq", (chat_id,))
            return [_message_from_row(*row) for row in rows.fetchall()]

    def archived_by(self, chat_id: str) -> dict[str, str]:
        """{message id: id of the summary that archived it} for archived messages."""
        with self._read() as session:
            rows = session.execute(select(MessageRow.id, MessageRow.archived_by)
                                   .where(MessageRow.chat_id == chat_id, MessageRow.archived_by.is_not(None)))
            return dict(rows.all())

    def token_counts(self, chat_id: str) -> dict[str, int]:
        """Cached token counts by message id (cleared when a message changes)."""
        with self._read() as session:
            rows = session.execute(select(MessageRow.id, MessageRow.token_count)
                                   .where(MessageRow.chat_id == chat_id, MessageRow.token_count.is_not(None)))
            return dict(rows.all())

    def save_token_counts(self, chat_id: str, counts: Mapping[str, int]) -> None:
        with self._write("save token counts") as session:
            session.connection().execute(
                update(MESSAGE).where(MESSAGE.c.chat_id == chat_id, MESSAGE.c.id == bindparam("mid"))
                .values(token_count=bindparam("n")), [{"mid": k, "n": v} for k, v in counts.items()])

    # ---- summaries
    def _upsert_record(self, session: Session, chat_id: str, record: SummaryRecord) -> None:
        values = {"id": record.id, "chat_id": chat_id, "record": record.model_dump_json(), "status": record.status,
                  "created_at": record.created_at, "parent_id": record.parent_id, "depth": record.depth}
        stmt = sqlite_insert(SummaryRow).values(**values)
        session.execute(stmt.on_conflict_do_update(
            index_elements=["chat_id", "id"],
            set_={k: stmt.excluded[k] for k in ("record", "status", "created_at", "parent_id", "depth")}))

    def save_summary_state(self, chat_id: str, records: Iterable[SummaryRecord],
                           archived_by: Mapping[str, str | None]) -> None:
        """Records (new or with a changed status) and which summary hides each given message: one transaction,
        so after a crash the chat is wholly before or wholly after a summarization or an undo."""
        with self._write("save the summary") as session:
            self._chat_row(session, chat_id, deleted_ok=True)
            for record in records:
                self._upsert_record(session, chat_id, record)
            if archived_by:
                session.connection().execute(
                    update(MESSAGE).where(MESSAGE.c.chat_id == chat_id, MESSAGE.c.id == bindparam("mid"))
                    .values(archived_by=bindparam("rid")),
                    [{"mid": mid, "rid": rid} for mid, rid in archived_by.items()])
            session.exec(update(ChatRow).where(ChatRow.id == chat_id).values(updated_at=time.time()))

    def save_summary(self, chat_id: str, record: SummaryRecord, archived_message_ids: Iterable[str],
                     merged: Iterable[SummaryRecord] = ()) -> None:
        """A new summary that archived these messages; `merged` are earlier records it folded in (now merged),
        whose messages it takes over."""
        merged = list(merged)
        archived = {mid: record.id for mid in archived_message_ids}
        if merged:
            previous = {r.id for r in merged}
            with self._read() as session:
                rows = session.execute(select(MessageRow.id).where(MessageRow.chat_id == chat_id,
                                                                   MessageRow.archived_by.in_(previous)))
                archived.update({mid: record.id for (mid,) in rows})
        self.save_summary_state(chat_id, [record, *merged], archived)

    def apply_undo(self, chat_id: str, record: SummaryRecord, archived_by: Mapping[str, str | None],
                   restored: Iterable[SummaryRecord] = ()) -> None:
        """Undo a summary: its record (status undone), records it had merged (active again) and the archive
        marks of the messages it released, in one transaction."""
        self.save_summary_state(chat_id, [record, *restored], archived_by)

    def load_records(self, chat_id: str) -> list[SummaryRecord]:
        """Every summary record of the chat, any status, oldest first."""
        with self._read() as session:
            rows = session.execute(select(SummaryRow.record).where(SummaryRow.chat_id == chat_id)
                                   .order_by(SummaryRow.created_at, SummaryRow.pk))
            return [SummaryRecord.model_validate_json(r) for (r,) in rows]

    # ---- search
    def search(self, query: str, limit: int = 20) -> list[SearchHit]:
        """Messages of all chats matching every word of `query` (archived ones too), best first."""
        match = _fts_query(query)
        if not match:
            return []
        sql = text("""
            SELECT m.chat_id, c.title, m.id, m.role, hit.snip, m.archived_by FROM (
                SELECT rowid AS pk, snippet(message_fts, 0, '[', ']', '…', 12) AS snip, rank
                FROM message_fts WHERE message_fts MATCH :match ORDER BY rank LIMIT :limit) AS hit
            JOIN message m ON m.pk = hit.pk JOIN chat c ON c.id = m.chat_id
            WHERE c.deleted_at IS NULL ORDER BY hit.rank""")
        with self._read() as session:
            rows = session.execute(sql, {"match": match, "limit": limit})
            return [SearchHit(*row) for row in rows]

    def search_archived(self, chat_id: str, query: str, limit: int = 20) -> list[str]:
        """Ids of this chat's archived messages matching any content word of `query`, best first (BM25): recall."""
        match = fts_or_query(query)
        if not match:
            return []
        sql = text("""
            SELECT m.id FROM message_fts JOIN message m ON m.pk = message_fts.rowid
            WHERE message_fts MATCH :match AND m.chat_id = :chat AND m.archived_by IS NOT NULL
            ORDER BY message_fts.rank LIMIT :limit""")
        with self._read() as session:
            return [mid for (mid,) in session.execute(sql, {"match": match, "chat": chat_id, "limit": limit})]



class _WriteSession:
    """One write transaction. A failed write (disk full, I/O error) rolls back and becomes a StoreWriteError."""

    def __init__(self, engine: Engine, what: str):
        self._session = Session(engine, expire_on_commit=False)
        self._what = what

    def __enter__(self) -> Session:
        self._session.begin()
        return self._session

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        try:
            if exc_type is None:
                try:
                    self._session.commit()
                except DBAPIError as err:
                    self._session.rollback()
                    raise _write_error(self._what, err) from None
            else:
                self._session.rollback()
                if isinstance(exc, DBAPIError):
                    raise _write_error(self._what, exc) from None
        finally:
            self._session.close()


def _write_error(what: str, err: DBAPIError) -> StoreError:
    reason = str(err.orig) if err.orig is not None else str(err)
    if "malformed" in reason or "not a database" in reason:
        return StoreCorrupt(f"could not {what}: the database is damaged ({reason}); nothing was changed")
    return StoreWriteError(f"could not {what}: {reason}. Nothing was changed; earlier data is safe.")


# ------------------------------------------------------------------------------------------ engine wiring

def attach_engine(store: Store, chat_id: str, engine: Any,
                  on_error: Callable[[StoreError], None] | None = None) -> Callable[[], None]:
    """Persist every summarization, merge and undo of `engine`, each in one transaction.

    The engine's records (status, depth, ...) and which record hides each message are compared with what was last
    saved, and only the differences are written. The engine swallows listener errors, so a failed save (disk
    full) goes to `on_error` for the caller to show; without one it is raised into the engine's log.
    Returns a function that detaches.
    """
    # What can change on a saved record is its status and its place in the chain; new records are new ids.
    def mark(record: SummaryRecord) -> tuple:
        return record.status, record.depth, record.parent_id

    saved_records = {r.id: mark(r) for r in engine.records}
    saved_archive = {m.id: engine.archived_by(m.id) for m in engine.messages}

    def on_event(_event: Any) -> None:
        changed = {r.id: (r, mark(r)) for r in engine.records if saved_records.get(r.id) != mark(r)}
        changed.setdefault(_event.record.id, (_event.record, mark(_event.record)))
        archive = {}
        for m in engine.messages:
            holder = engine.archived_by(m.id)
            if saved_archive.get(m.id) != holder:
                archive[m.id] = holder
        try:
            store.save_summary_state(chat_id, [record for record, _mark in changed.values()], archive)
        except StoreError as exc:
            if on_error is None:
                raise
            on_error(exc)
            return
        saved_records.update({rid: m for rid, (_record, m) in changed.items()})
        saved_archive.update(archive)

    return engine.subscribe(on_event)
