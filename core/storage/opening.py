"""Opening the SQLite file: the lock file held while one process checks and migrates it, the version check, a
corrupt file's copy set aside, the mark that spares a sound file its next check, and the migrations."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from .errors import StoreCorrupt, StoreLocked, StoreTooNew, StoreUnreadable, StoreWriteError
from .schema import MIGRATIONS, SCHEMA_VERSION

LOCK_NAME = "precis.lock"

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


if sys.platform == "win32":
    import msvcrt

    def _lock_exclusive(fh: IO[str]) -> None:
        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
else:
    import fcntl

    def _lock_exclusive(fh: IO[str]) -> None:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


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


def empty_file_notice(path: Path) -> str | None:
    """What to tell the user about a database file of 0 bytes (a failed copy, a full disk), said once as the store
    opens; None for any other. SQLite takes such a file for a new database, and deletes a write-ahead log beside it
    unread: when the folder shows the file held chats (that log, the mark of a sound non-empty file, a backup or a
    damaged file's copy), the empty file and its log are moved aside first, where nothing deletes them."""
    try:
        if path.stat().st_size:
            return None
    except OSError:
        return None
    said = f"{path} is empty (0 bytes): starting a new database"
    signs = _signs_of_chats(path)
    if not signs:
        return f"{said}."
    aside = path.with_name(f"{path.name}.empty-{time.strftime('%Y%m%d-%H%M%S')}")
    kept = []
    for suffix in ("", "-wal", "-shm"):
        try:
            os.replace(f"{path}{suffix}", f"{aside}{suffix}")  # a rename: it needs no room on a full disk
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StoreWriteError(f"{path} is empty (0 bytes) but the folder shows it held chats "
                                  f"({'; '.join(signs)}); it could not be moved aside ({exc.strerror or exc}), "
                                  "so nothing was changed. Restore a backup, or move it away yourself.") from None
        kept.append(f"{aside}{suffix}")
    return (f"{said}, though the folder shows it held chats ({'; '.join(signs)}). What was there is kept as "
            f"{' and '.join(kept)}: restore a backup of the data folder to get the chats back.")


def _signs_of_chats(path: Path) -> list[str]:
    """What beside an empty database file says it once held chats."""
    signs = []
    with contextlib.suppress(OSError):
        if Path(f"{path}-wal").stat().st_size:
            signs.append(f"its write-ahead log {path.name}-wal holds {Path(f'{path}-wal').stat().st_size:,} bytes")
    with contextlib.suppress(OSError, UnicodeDecodeError, ValueError, IndexError):
        size = int(_checked_mark(path).read_text().split()[2])
        if size:
            signs.append(f"Precis last saw it at {size:,} bytes")
    copies = sorted(p.name for pattern in (f"{path.name}.v*-backup", f"{path.name}.corrupt-*", f"{path.name}.empty-*")
                    for p in path.parent.glob(pattern))
    if copies:
        signs.append(f"earlier copies: {', '.join(copies)}")
    return signs


def check_existing(path: Path) -> int:
    """Schema version of an existing file, read without changing it. A corrupt file is copied aside first.

    The whole file is read through (`PRAGMA quick_check`, the cost of reading it: 0.06 s at 100,000 messages, half
    of a search) only when it may have changed since it was last checked or Precis last closed it."""
    checked = is_checked(path)
    try:
        conn = sqlite3.connect(readonly_uri(path), uri=True)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            problem = "ok" if checked else conn.execute("PRAGMA quick_check(1)").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise StoreUnreadable(
                f"could not read {path}: {exc} ({exc.sqlite_errorname}). It was not found damaged: the disk may be "
                f"full or failing, or its side file {path.name}-shm cannot be written. Nothing was changed; free "
                "some space and try again.") from None
        problem = str(exc)
    if problem != "ok":
        aside = _copy_aside(path)
        raise StoreCorrupt(
            f"{path} is damaged ({problem}). A copy was saved as {aside}; the file was not changed. "
            "`precis recover` keeps what can still be read of it; or restore a backup.")
    if not checked:
        mark_checked(path)
    if version > SCHEMA_VERSION:
        raise StoreTooNew(
            f"{path} was written by a newer Precis (schema {version}; this one knows up to {SCHEMA_VERSION}). "
            "It was not changed; update Precis to open it, or export its chats read-only meanwhile (`precis export CHAT`, "
            "or Export chats… in the window's box).")
    return version


def is_damage(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite found the file itself damaged (or not a database at all), rather than failing to read or
    write it: a full disk or an I/O error says nothing of the file, which must then be neither copied aside nor
    called damaged."""
    return exc.sqlite_errorname.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))


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


def readonly_uri(path: Path) -> str:
    """A read-only SQLite URI. In a folder we cannot write, WAL's side files cannot be made: if they are there (a
    window open elsewhere, or one that crashed) SQLite reads the changes still in the WAL through them; if not, the
    file is opened as immutable (nobody can be writing it through this folder)."""
    wal_files = all(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-shm"))
    writable_folder = os.access(path.parent, os.W_OK)
    return f"{path.as_uri()}?mode=ro" + ("" if writable_folder or wal_files else "&immutable=1")
