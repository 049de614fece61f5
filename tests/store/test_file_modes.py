"""The store keeps messages as written (a key pasted into one too): Precis makes its data folder and database
readable by the user alone, and leaves a mode the user chose alone."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from precis.core.model.messages import Message
from precis.core.storage.store import DB_NAME, open_store


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask():
    """The most permissive umask: what Precis makes private is private whatever the user's umask."""
    previous = os.umask(0)
    yield
    os.umask(previous)


def test_a_new_data_folder_and_database_are_readable_by_their_owner_alone(tmp_path, open_umask):
    folder = tmp_path / "new" / "precis"
    with open_store(folder) as store:
        chat_id = store.create_chat("keys")
        store.add_messages(chat_id, [Message(role="user", content="my key is sk-live-0123456789abcdef")])
        db = folder / DB_NAME
        side_files = [Path(f"{db}-wal"), Path(f"{db}-shm")]
        assert all(side.exists() for side in side_files)  # while the store is open
        assert mode(folder) == 0o700
        assert {side.name: mode(side) for side in [db, *side_files]} == {
            "precis.db": 0o600, "precis.db-wal": 0o600, "precis.db-shm": 0o600}


def test_a_store_copy_is_readable_by_its_owner_alone(tmp_path, open_umask):
    """`precis screenshot` works on a copy of the store: the same messages."""
    with open_store(tmp_path / "store") as store:
        store.create_chat("keys")
        (tmp_path / "copy").mkdir()
        copy = store.copy_to(tmp_path / "copy")
        copy.close()
    assert mode(tmp_path / "copy" / DB_NAME) == 0o600


def test_an_existing_folder_and_database_keep_the_mode_the_user_chose(tmp_path):
    folder = tmp_path / "shared"
    open_store(folder).close()
    folder.chmod(0o750)
    (folder / DB_NAME).chmod(0o640)
    with open_store(folder) as store:
        store.create_chat("for the group")
        assert mode(Path(f"{folder / DB_NAME}-wal")) == 0o640  # SQLite's side files follow the database
    assert (mode(folder), mode(folder / DB_NAME)) == (0o750, 0o640)
