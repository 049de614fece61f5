"""`precis recover`: what can still be read of a damaged database, row by row around its damaged pages, written to
a new file that takes its place. The damaged file (with its write-ahead log) is kept beside it, renamed, whole.

A table is read in rowid order until a damaged page stops the read; the rows past it are found again by seeking
further ahead (a damaged page stops only the reads that pass through it), and the rows between by looking each one
up. A row SQLite cannot decode, or that the new file's constraints refuse, is left out and counted."""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .errors import StoreCorrupt, StoreError, StoreTooNew, StoreWriteError
from .opening import LOCK_NAME, _checked_mark, create_database_file, is_damage, migrate, migration_lock, readonly_uri
from .schema import SCHEMA_VERSION

# Parents before children, so that a child's reference is checked against what was recovered of its parent.
TABLES = ("chat", "setting", "message", "summary", "message_version", "prompt_setup")
RECOVERED_CHAT_TITLE = "Recovered messages"  # a chat whose own row was lost, made for its messages to belong to
SMALLEST_ROWID, LARGEST_ROWID = -(2 ** 63), 2 ** 63 - 1
# Each table's rows in words: (one, several).
TABLE_WORDS = {"chat": ("chat", "chats"), "setting": ("setting", "settings"), "message": ("message", "messages"),
               "summary": ("summary", "summaries"),
               "message_version": ("earlier version of a reply", "earlier versions of replies"),
               "prompt_setup": ("record of what was sent", "records of what was sent")}


@dataclass
class Recovery:
    """What `recover` kept, left out and where it put the damaged file."""

    kept: dict[str, int] = field(default_factory=dict)  # rows per table
    left_out: dict[str, int] = field(default_factory=dict)  # rows (or stretches of them) that could not be read
    chats_remade: int = 0  # chats whose own row was lost, remade under RECOVERED_CHAT_TITLE for their messages
    damaged_copy: Path | None = None

    def lost_anything(self) -> bool:
        return bool(self.chats_remade or any(self.left_out.values()))

    def report(self) -> list[str]:
        """What was kept, what could not be read and where the damaged file is, a sentence each (`precis recover`
        prints them; the window's Recover… shows them)."""
        kept = ", ".join(_count(self.kept[table], words) for table, words in TABLE_WORDS.items() if self.kept.get(table))
        lines = [f"Recovered {kept or 'nothing'}."]
        unread = [f"{self.left_out[table]:,} in the {words[1]}" for table, words in TABLE_WORDS.items()
                  if self.left_out.get(table)]
        if unread:
            lines.append(f"Could not be read (damaged rows, or stretches of them): {'; '.join(unread)}.")
        if self.chats_remade:
            lines.append(f"{_count(self.chats_remade, ('chat', 'chats'))} had lost their own record; their messages "
                         f"are kept in chats titled {RECOVERED_CHAT_TITLE!r}.")
        lines.append(f"The damaged file is kept as {self.damaged_copy}.")
        return lines


def _count(n: int, words: tuple[str, str]) -> str:
    return f"{n:,} {words[0] if n == 1 else words[1]}"


def recover(folder: Path, db_name: str, on_table: Callable[[int, str], object] | None = None) -> Recovery:
    """Replace the damaged database `folder/db_name` with what can still be read of it (see the module's text).
    Refuses a sound file, one from a newer Precis, and one of which not even the list of tables can be read.
    `on_table(n, table)` is told as the n-th of TABLES (from 0) begins to be read."""
    path = folder / db_name
    if not path.exists():
        raise StoreError(f"there is no database to recover at {path}")
    with migration_lock(folder / LOCK_NAME):
        _check_damaged(path)
        new = path.with_name(f"{path.name}.recovering")
        for suffix in ("", "-wal", "-shm"):  # what a recovery killed part way left
            Path(f"{new}{suffix}").unlink(missing_ok=True)
        create_database_file(new, stat.S_IMODE(path.stat().st_mode))
        try:
            migrate(new)
            recovery = _copy_readable(path, new, on_table or (lambda _n, _table: None))
            recovery.damaged_copy = _set_aside(path)
        except BaseException:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{new}{suffix}").unlink(missing_ok=True)
            raise
        os.replace(new, path)
        _checked_mark(path).unlink(missing_ok=True)
    return recovery


def _check_damaged(path: Path) -> None:
    """A StoreError unless the file is damaged and readable in part: sound, newer, or unreadable from its start."""
    try:
        with _reading(path) as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            problem = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise StoreWriteError(f"could not read {path}: {exc}; nothing was changed") from None
        raise StoreCorrupt(f"nothing of {path} can be read ({exc}): not even its list of tables. It was not "
                           "changed; restore a backup of the data folder.") from None
    if problem == "ok":
        raise StoreError(f"{path} is not damaged: there is nothing to recover")
    if version > SCHEMA_VERSION:
        raise StoreTooNew(f"{path} was written by a newer Precis (schema {version}; this one knows up to "
                          f"{SCHEMA_VERSION}). It was not changed; recover it with that Precis.")


class _reading:
    """A read-only connection to the damaged file, closed on leaving."""

    def __init__(self, path: Path):
        self.conn = sqlite3.connect(readonly_uri(path), uri=True)

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *_exc: object) -> None:
        self.conn.close()


def _copy_readable(path: Path, new: Path, on_table: Callable[[int, str], object]) -> Recovery:
    recovery = Recovery()
    target = sqlite3.connect(new, isolation_level=None)
    try:
        target.execute("PRAGMA foreign_keys=ON")
        target.execute("BEGIN IMMEDIATE")
        with _reading(path) as source:
            for n, table in enumerate(TABLES):
                on_table(n, table)
                _copy_table(source, target, table, recovery)
        _show_unarchived(target)
        target.execute("COMMIT")
        target.execute("INSERT INTO message_fts(message_fts) VALUES ('rebuild')")  # the search index, anew
    finally:
        target.close()
    return recovery


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    try:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    except sqlite3.DatabaseError:
        return []


def _copy_table(source: sqlite3.Connection, target: sqlite3.Connection, table: str, recovery: Recovery) -> None:
    wanted = set(_columns(target, table))  # an older file's columns that the schema still has; new ones default
    columns = [c for c in _columns(source, table) if c in wanted]
    recovery.kept[table] = recovery.left_out[table] = 0
    if not columns:  # an older file without this table, or its definition unreadable
        return
    names = ", ".join(columns)
    insert = f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})"
    has_rowid = _has_rowid(source, table)
    rows = _rows_around_damage(source, table, names, recovery) if has_rowid else _rows_until_damage(
        source, table, names, recovery)
    for row in rows:
        try:
            with _savepoint(target):
                if table in ("message", "summary"):
                    _chat_for(target, dict(zip(columns, row, strict=True)), recovery)
                target.execute(insert, row)
            recovery.kept[table] += 1
        except sqlite3.Error:  # a row the damage garbled past what the schema allows, or an orphaned version
            recovery.left_out[table] += 1


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    try:
        conn.execute(f"SELECT rowid FROM {table} LIMIT 0")
    except sqlite3.OperationalError:  # WITHOUT ROWID
        return False
    return True


class _savepoint:
    """One row's insert, undone alone if it fails."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("SAVEPOINT row")

    def __exit__(self, exc_type: object, *_rest: object) -> None:
        self.conn.execute("ROLLBACK TO row" if exc_type else "RELEASE row")
        if exc_type:
            self.conn.execute("RELEASE row")


def _rows_until_damage(source: sqlite3.Connection, table: str, names: str, recovery: Recovery) -> Iterator[tuple]:
    """A table without rowids (a small cache of what was sent), read in key order up to its first damaged page."""
    try:
        yield from source.execute(f"SELECT {names} FROM {table}")
    except sqlite3.DatabaseError:
        recovery.left_out[table] += 1


def _rows_around_damage(source: sqlite3.Connection, table: str, names: str, recovery: Recovery) -> Iterator[tuple]:
    """Every row of `table` that can be read, in rowid order, the damaged stretches skipped (each counted once)."""
    start = SMALLEST_ROWID  # the smallest rowid not yet read (or given up on)
    while True:
        try:
            for rowid, *row in source.execute(f"SELECT rowid, {names} FROM {table} WHERE rowid >= ? ORDER BY rowid",
                                              (start,)):
                start = rowid + 1
                yield tuple(row)
            return
        except sqlite3.DatabaseError:
            found = _next_readable(source, table, names, start, recovery)
            if found is None:
                return
            start, row_found = found
            if row_found is not None:
                yield row_found


def _next_readable(source: sqlite3.Connection, table: str, names: str, start: int,
                   recovery: Recovery) -> tuple[int, tuple | None] | None:
    """Past a scan stopped at rowid `start`: (the rowid to go on from, the row read just before it if any), or None
    when nothing further can be read. Seeks ever further ahead until a seek gets past the damage, then looks up each
    rowid in between, in order, for the first row that reads whole. A stretch of rows that could not be read is
    counted in `recovery.left_out` (a scan can stop at a row that reads whole when looked up alone)."""
    step = 1
    while True:
        ahead = min(start + step, LARGEST_ROWID)
        try:
            beyond = source.execute(f"SELECT rowid FROM {table} WHERE rowid >= ? ORDER BY rowid LIMIT 1",
                                    (ahead,)).fetchone()
            break
        except sqlite3.DatabaseError:
            if ahead == LARGEST_ROWID:
                recovery.left_out[table] += 1
                return None
            step *= 2
    last = beyond[0] if beyond else ahead
    unreadable = 0
    found: tuple[int, tuple | None] | None = None
    for rowid in range(start, last + 1):
        try:
            row = source.execute(f"SELECT {names} FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            unreadable += 1
            continue
        if row is not None:
            found = rowid + 1, tuple(row)
            break
    else:
        if beyond is not None:  # the row at `last` can be found but not read whole (a damaged overflow page)
            found = last + 1, None
    if unreadable or found is None:
        recovery.left_out[table] += 1
    return found


def _chat_for(target: sqlite3.Connection, row: dict, recovery: Recovery) -> None:
    """Make a chat for a message or summary whose chat's own row was lost, so that it is kept."""
    if target.execute("SELECT 1 FROM chat WHERE id = ?", (row["chat_id"],)).fetchone():
        return
    when = row.get("created_at") or time.time()
    target.execute("INSERT INTO chat (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
                   (row["chat_id"], RECOVERED_CHAT_TITLE, when, when))
    recovery.chats_remade += 1


def _show_unarchived(target: sqlite3.Connection) -> None:
    """A message archived by a summary that was lost is shown again: it would otherwise stay hidden for good."""
    target.execute("UPDATE message SET archived_by = NULL WHERE archived_by IS NOT NULL AND NOT EXISTS "
                   "(SELECT 1 FROM summary WHERE summary.chat_id = message.chat_id AND summary.id = message.archived_by)")


def _set_aside(path: Path) -> Path:
    """Keep the damaged file under another name (a second link to it: until the new file is renamed over it, the
    folder still has its database) and move its write-ahead log there too: SQLite would apply it to the new file."""
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        os.link(path, aside)
    except OSError as exc:
        raise StoreWriteError(f"could not keep the damaged {path} as {aside} ({exc.strerror or exc}); nothing was "
                              "changed") from None
    for suffix in ("-wal", "-shm"):
        try:
            os.replace(f"{path}{suffix}", f"{aside}{suffix}")
        except FileNotFoundError:
            continue
    return aside
