"""Summary records written before trail coverage had that name in the code (their JSON says "retention") still
load with it, from the database and from an exported file, and are saved under the new name from then on."""

from __future__ import annotations

import json
import sqlite3

from precis.core.model.messages import Message
from precis.core.model.records import CoveredMessage, SummaryRecord
from precis.core.storage.exporters import export_jsonl
from precis.core.storage.interchange import read_interchange_chat
from precis.core.storage.store import DB_NAME, open_store
from precis.core.summary.trail_coverage import check_coverage

MESSAGES = [Message(role="user", content="Please fix `load_config` in src/app/config.py"),
            Message(role="assistant", content="Ran `pytest -q` and it failed with KeyError (exit 1).")]


def summarized_record() -> SummaryRecord:
    record = SummaryRecord(text="Fixed src/app/config.py.",
                           covered=[CoveredMessage(id=m.id, sha256=m.sha256()) for m in MESSAGES])
    record.trail_coverage = check_coverage(MESSAGES, record.text)
    assert sum(record.trail_coverage.total.values()) and record.trail_coverage.missing  # something to lose
    return record


def test_a_record_saved_with_the_old_field_name_loads_its_trail_coverage(tmp_path):
    record = summarized_record()
    with open_store(tmp_path) as store:
        chat = store.create_chat("config fix")
        store.add_messages(chat, MESSAGES)
        store.save_summary_state(chat, [record], {m.id: record.id for m in MESSAGES})
    # The record as an earlier Precis wrote it: the same JSON with the field under its old name.
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        (saved,) = db.execute("SELECT record FROM summary").fetchone()
        old = json.loads(saved)
        old["retention"] = old.pop("trail_coverage")
        db.execute("UPDATE summary SET record = ?", (json.dumps(old),))
    with open_store(tmp_path) as store:
        (loaded,) = store.load_records(chat)
        assert loaded.trail_coverage == record.trail_coverage
        store.save_summary_state(chat, [loaded], {})
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        (saved,) = db.execute("SELECT record FROM summary").fetchone()
    assert "trail_coverage" in json.loads(saved) and "retention" not in json.loads(saved)


def test_an_exported_chat_with_the_old_field_name_imports_its_trail_coverage():
    record = summarized_record()
    exported = [json.loads(line) for line in "".join(
        export_jsonl(MESSAGES, [record], {m.id: record.id for m in MESSAGES})).splitlines()]
    (summary,) = [summary for line in exported for summary in line.get("summaries", [])]
    summary["retention"] = summary.pop("trail_coverage")  # as an earlier Precis exported it
    (imported,) = read_interchange_chat([json.dumps(line) for line in exported], "old-export.jsonl").records
    assert imported.trail_coverage == record.trail_coverage
