"""`precis recover`: a damaged database (pages overwritten in the middle) replaced by every row still readable, the
damaged file kept aside, and the store usable again."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from precis.core.model.messages import Message
from precis.core.model.records import CoveredMessage, SummaryRecord
from precis.core.storage.store import DB_NAME, StoreCorrupt, open_store

ROOT = Path(__file__).resolve().parents[2]
PAGE = 4096


def precis(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "precis.core.cli.main", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stored_messages(db: Path) -> dict[int, tuple]:
    """{pk: (chat, id, seq, role, content)} of every message, read straight from the file."""
    with sqlite3.connect(db) as conn:
        return {pk: rest for pk, *rest in conn.execute("SELECT pk, chat_id, id, seq, role, content FROM message")}


def pages_of(db: Path, table: str, kind: str) -> list[tuple[int, int]]:
    """(page number, cells) of the table's pages of a kind ('leaf', 'internal'), in page order."""
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT pageno, ncell FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY pageno",
                            (table, kind)).fetchall()


def overwrite(db: Path, pages: list[int]) -> None:
    """Random bytes over whole pages, as a failing disk or a stray write leaves them."""
    with open(db, "r+b") as fh:
        for page in pages:
            fh.seek((page - 1) * PAGE)
            fh.write(os.urandom(PAGE))


@pytest.fixture
def data(tmp_path) -> Path:
    """A store of two chats of 300 messages each, the first 100 of one summarized (archived by the summary)."""
    folder = tmp_path / "data"
    with open_store(folder) as store:
        for name in ("Lisbon trip", "Garden plans"):
            chat = store.create_chat(name)
            messages = [Message(role="user" if i % 2 == 0 else "assistant",
                                content=f"{name} note {i}: " + "the tram to Belem leaves at nine " * (i % 7 + 1))
                        for i in range(300)]
            store.add_messages(chat, messages)
        record = SummaryRecord(text="They planned the garden.",
                               covered=[CoveredMessage(id=m.id, sha256=m.sha256()) for m in messages[:100]])
        store.save_summary_state(chat, [record], {m.id: record.id for m in messages[:100]})
    with sqlite3.connect(folder / DB_NAME) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every row in the file itself, where the damage goes
    return folder


def test_a_database_damaged_in_the_middle_gives_back_every_message_on_its_sound_pages(data):
    db = data / DB_NAME
    before = stored_messages(db)
    leaves = pages_of(db, "message", "leaf")
    damaged = [leaves[len(leaves) // 3], leaves[2 * len(leaves) // 3]]  # two leaves in the middle, apart
    overwrite(db, [page for page, _cells in damaged])
    damaged_digest = digest(db)

    refused = precis("--data-dir", str(data), "chats")
    assert refused.returncode == 1 and "is damaged" in refused.stderr and "precis recover" in refused.stderr

    recovered = precis("--data-dir", str(data), "recover")
    assert recovered.returncode == 0, recovered.stderr
    after = stored_messages(db)
    lost = sum(cells for _page, cells in damaged)  # a table's leaf holds its rows: exactly those are gone
    assert len(after) == len(before) - lost
    assert all(before[pk] == row for pk, row in after.items())  # each as it was, in its chat at its place
    assert f"Recovered 2 chats, {len(after):,} messages, 1 summary" in recovered.stdout
    assert "2 in the messages" in recovered.stdout
    [kept] = data.glob(f"{DB_NAME}.damaged-*[0-9]")  # beside its -wal and -shm
    assert digest(kept) == damaged_digest and str(kept) in recovered.stdout

    with open_store(data) as store:  # sound again: opened, searched, summaries as they were
        chats = {c.title: c.id for c in store.list_chats()}
        assert sorted(chats) == ["Garden plans", "Lisbon trip"]
        garden = chats["Garden plans"]
        [record] = store.load_records(garden)
        assert record.text == "They planned the garden."
        archived = store.archived_by(garden)
        assert set(archived.values()) == {record.id} and set(archived) <= set(record.covered_ids)
        newest = max(after.values(), key=lambda row: (row[0] == garden, row[2]))
        assert any(hit.message_id == newest[1] for hit in store.search(newest[4].split(":")[0] + " " + "Belem"))
    assert precis("--data-dir", str(data), "export", "Lisbon trip", "--format", "md").returncode == 0

    again = precis("--data-dir", str(data), "recover")
    assert again.returncode == 1 and "is not damaged" in again.stderr


def test_messages_whose_chat_and_summary_were_lost_are_kept_in_a_chat_of_their_own_and_shown(data):
    db = data / DB_NAME
    before = stored_messages(db)
    [(chat_page, _cells)] = pages_of(db, "chat", "leaf")  # both chats' rows, on one page
    [(summary_page, _cells)] = pages_of(db, "summary", "leaf")
    overwrite(db, [chat_page, summary_page])
    with pytest.raises(StoreCorrupt):
        open_store(data)

    recovered = precis("--data-dir", str(data), "recover")
    assert recovered.returncode == 0, recovered.stderr
    assert "2 chats had lost their own record" in recovered.stdout
    assert stored_messages(db) == before  # not one message lost with them
    with open_store(data) as store:
        chats = store.list_chats()
        assert [c.title for c in chats] == ["Recovered messages"] * 2
        assert sorted(c.message_count for c in chats) == [300, 300]
        # The summary that hid the garden's first 100 messages is gone: they are shown again, not hidden for good.
        assert all(store.archived_by(c.id) == {} and store.load_records(c.id) == [] for c in chats)


def test_a_file_that_is_not_a_database_is_refused_and_left_as_it_was(tmp_path):
    (tmp_path / DB_NAME).write_text("my notes, saved over the database by mistake\n" * 100)
    before = digest(tmp_path / DB_NAME)
    refused = precis("--data-dir", str(tmp_path), "recover")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"nothing of {tmp_path / DB_NAME} can be read" in refused.stderr
    assert digest(tmp_path / DB_NAME) == before and not list(tmp_path.glob(f"{DB_NAME}.damaged-*"))
