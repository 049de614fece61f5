"""The connections to the SQLite file underneath the Store: its engine (read-only or not), the write transaction,
the bulk page cache, the watch on other processes' changes, and what every part of the Store shares (StoreBase)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session, create_engine

from ..settings import SUMMARIZATION_KEY
from .errors import ChatNotFound, StoreCorrupt, StoreError, StoreLocked, StoreWriteError
from .opening import readonly_uri
from .schema import ChatRow

# How long a write waits for another writer (the window, another `precis` command) before giving up. Writes run off
# the GUI thread, so waiting costs the window nothing; a long import elsewhere takes seconds.
BUSY_TIMEOUT_MS = 30_000
WRITE_OPTION = "precis_write"  # a connection's execution option: its transaction is a WriteSession's
NO_WAIT_OPTION = "precis_no_wait"  # ... and it gives up at once if another program is writing
# An import keeps up to this much of the file in SQLite's page cache rather than the default 2 MiB. With less, the
# transaction's changed pages spill to the WAL and are read back, and the inserts into the (chat, message id) index,
# at random places as ids are random, miss the cache more often the longer the chat: inserting the rows of 100,000
# messages cost 9.4 us each against 6.5 us at 10,000 (7.6 us with this cache). The connection gets its usual cache
# back when it returns to the pool, so reading a long chat later does not keep it in memory twice.
BULK_CACHE_KIB = 65_536
_CACHE_BEFORE_BULK = "precis_cache_size"  # a pooled connection's info: its cache size before use_bulk_cache


def make_engine(path: Path, read_only: bool) -> Engine:
    if read_only:
        engine = create_engine("sqlite://", creator=lambda: sqlite3.connect(
            readonly_uri(path), uri=True, check_same_thread=False))
    else:
        engine = create_engine(f"sqlite:///{path}", connect_args={"check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        # Let SQLAlchemy's BEGIN below start every transaction, reads included (consistent snapshots).
        dbapi_conn.isolation_level = None
        pragmas = [f"busy_timeout={BUSY_TIMEOUT_MS}"]
        if not read_only:
            # secure_delete: what is deleted (a chat removed for good, a summary undone) is overwritten with zeros
            # rather than left readable in the file's free pages.
            pragmas += ["journal_mode=WAL", "foreign_keys=ON", "synchronous=NORMAL", "secure_delete=ON"]
        for pragma in pragmas:
            dbapi_conn.execute(f"PRAGMA {pragma}")

    @event.listens_for(engine, "checkin")
    def _on_checkin(dbapi_conn: sqlite3.Connection | None, record: Any) -> None:
        cache_size = record.info.pop(_CACHE_BEFORE_BULK, None)
        if cache_size is not None and dbapi_conn is not None:
            dbapi_conn.execute(f"PRAGMA cache_size={cache_size}")

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A write takes the write lock at once, waiting up to the busy timeout for another writer: a read that
        # later turns into a write (merge, get then update) would instead fail at once with "database is locked".
        options = conn.get_execution_options()
        if not options.get(WRITE_OPTION):
            conn.exec_driver_sql("BEGIN")
        elif options.get(NO_WAIT_OPTION):
            conn.exec_driver_sql("PRAGMA busy_timeout=0")
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            finally:
                conn.exec_driver_sql(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        else:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def use_bulk_cache(session: Session) -> None:
    """Give the session's connection the page cache of a bulk write (BULK_CACHE_KIB) until it returns to the pool."""
    connection = session.connection()
    if _CACHE_BEFORE_BULK not in connection.info:
        connection.info[_CACHE_BEFORE_BULK] = connection.exec_driver_sql("PRAGMA cache_size").scalar()
        connection.exec_driver_sql(f"PRAGMA cache_size=-{BULK_CACHE_KIB}")


class ChangeWatch:
    """Whether the chats changed since the last look, whoever changed them (another `precis` process, or this one).

    Cheap enough to ask on a timer: `PRAGMA data_version` on a connection of its own changes only when another
    connection commits, and only then is the small chat table read (count, newest update, deletions), with the global
    summarization settings, which every open chat follows. Writes that leave those alone (a reply's text saved as it
    streams, until its last save) do not count as a change.
    """

    def __init__(self, path: Path, read_only: bool):
        uri = readonly_uri(path) if read_only else f"{path.as_uri()}?mode=rw"
        self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self._version = self._data_version()
        self._chats = self._chat_rows()

    def _data_version(self) -> int:
        return self._conn.execute("PRAGMA data_version").fetchone()[0]

    def _chat_rows(self) -> tuple:
        return self._conn.execute("SELECT count(*), max(updated_at), count(deleted_at), total(deleted_at), "
                                  "(SELECT value FROM setting WHERE key = ?) FROM chat", (SUMMARIZATION_KEY,)).fetchone()

    def chats_changed(self) -> bool:
        version = self._data_version()
        if version == self._version:
            return False
        self._version = version
        chats, self._chats = self._chats, self._chat_rows()
        return chats != self._chats

    def close(self) -> None:
        self._conn.close()


def waiting_words(what: str, path: Path) -> str:
    """What a write waiting for another program's write lock tells the user, naming the file."""
    return f"Waiting to {what}: another program is writing to the database {path} (up to {BUSY_TIMEOUT_MS // 1000} s)…"


class WriteSession:
    """One write transaction. A failed write (disk full, I/O error) rolls back and becomes a StoreWriteError. It
    waits for another writer up to the busy timeout, or not at all (`wait=False`, for what is only a cache).
    `on_wait` is told (waiting_words, on the writing thread) when another writer holds the lock, before waiting."""

    def __init__(self, engine: Engine, what: str, path: Path, *, wait: bool = True,
                 on_wait: Callable[[str], object] | None = None):
        self._engine = engine
        self._session = Session(engine, expire_on_commit=False)
        self._what = what
        self._path = path
        self._wait = wait
        self._on_wait = on_wait

    def __enter__(self) -> Session:
        if self._wait and self._on_wait is not None:
            try:
                return self._begin(wait=False)
            except StoreLocked:  # another program is writing: say so, then wait for it as any write does
                self._on_wait(waiting_words(self._what, self._path))
                self._session = Session(self._engine, expire_on_commit=False)
        return self._begin(wait=self._wait)

    def _begin(self, *, wait: bool) -> Session:
        try:
            self._session.begin()
            self._session.connection(execution_options={WRITE_OPTION: True, NO_WAIT_OPTION: not wait})
        except DBAPIError as err:  # another writer kept the write lock past the busy timeout (or held it: no wait)
            self._session.close()
            raise write_error(self._what, err, self._path) from None
        return self._session

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        try:
            if exc_type is None:
                try:
                    self._session.commit()
                except DBAPIError as err:
                    self._session.rollback()
                    raise write_error(self._what, err, self._path) from None
            else:
                self._session.rollback()
                if isinstance(exc, DBAPIError):
                    raise write_error(self._what, exc, self._path) from None
        finally:
            self._session.close()


def write_error(what: str, err: DBAPIError, path: Path) -> StoreError:
    reason = str(err.orig) if err.orig is not None else str(err)
    if "locked" in reason or "busy" in reason:
        return StoreLocked(f"could not {what}: {path} is busy (another program kept it locked for over "
                           f"{BUSY_TIMEOUT_MS // 1000} s). Nothing was changed; try again.")
    if "malformed" in reason or "not a database" in reason:
        return StoreCorrupt(f"could not {what}: {path} is damaged ({reason}); nothing was changed")
    return StoreWriteError(f"could not {what}: {reason} (writing {path}). Nothing was changed; earlier data is safe.")


def sqlite_connection(connection: Connection) -> sqlite3.Connection:
    """The sqlite3 connection under a SQLAlchemy one, for what only it does (a backup, a blob read)."""
    raw = connection.connection.driver_connection
    assert isinstance(raw, sqlite3.Connection), "make_engine's engines are sqlite3's (pysqlite)"
    return raw


class StoreBase:
    """What every part of the Store (the chats in store.py, message_table, summary_table, version_table) works
    through: the file, its engine, a session to read, a write transaction, a chat's row."""

    def __init__(self, path: Path, *, read_only: bool = False):
        self.path = path
        self.read_only = read_only
        self.engine = make_engine(path, read_only)
        # Told when a write finds another program writing, before it waits for it (see WriteSession): the window
        # says so at once rather than after the busy timeout.
        self.on_wait: Callable[[str], object] | None = None

    def _write(self, what: str, *, wait: bool = True) -> WriteSession:
        if self.read_only:
            raise StoreWriteError(f"could not {what}: {self.path} is read-only. Nothing was changed.")
        return WriteSession(self.engine, what, self.path, wait=wait, on_wait=self.on_wait)

    def _read(self) -> Session:
        return Session(self.engine)

    def _chat_row(self, session: Session, chat_id: str, *, deleted_ok: bool = False) -> ChatRow:
        row = session.get(ChatRow, chat_id)
        if row is None:
            raise ChatNotFound(f"no chat with id {chat_id}")
        if row.deleted_at is not None and not deleted_ok:  # by the window, or another one on this folder
            raise ChatNotFound(f"the chat {row.title!r} ({chat_id}) was deleted")
        return row
