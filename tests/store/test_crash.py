"""kill -9 of a real process in the middle of a write, then reopen: nothing lost, no half state."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from precis.core.storage.store import open_store

ROOT = Path(__file__).resolve().parents[2]

SUMMARIZER_SCRIPT = """
import sys, time
from sqlalchemy import event
from precis.core.model.messages import Message
from precis.core.model.records import CoveredMessage, SummaryRecord
from precis.core.storage.store import open_store

# Fault injection: the real transaction pauses (and says so) right after its last statement, before COMMIT,
# so the parent can kill it at exactly that point.
store = open_store(sys.argv[1])
chat = store.create_chat("crash")
messages = [Message(role="user", content=f"message {i}") for i in range(400)]
store.add_messages(chat, messages)
pause = {"on": False}

@event.listens_for(store.engine, "commit")  # runs just before the COMMIT is sent
def _pause_before_commit(conn):
    if pause["on"]:
        print("in transaction", flush=True)
        time.sleep(60)

for n in range(3):
    batch = messages[n * 100:(n + 1) * 100]
    record = SummaryRecord(text=f"summary {n}", covered=[CoveredMessage(id=m.id, sha256=m.sha256()) for m in batch])
    pause["on"] = n == 2
    store.save_summary_state(chat, [record], {m.id: record.id for m in batch})
    print("saved", n, flush=True)
"""

STREAM_SCRIPT = """
import sys
from precis.core.model.messages import Message
from precis.core.storage.store import open_store

store = open_store(sys.argv[1])
chat = store.create_chat("stream")
store.add_message(chat, Message(role="user", content="tell me a long story"))
reply = Message(role="assistant", incomplete=True)
store.add_message(chat, reply)
for i in range(100000):
    reply = reply.with_changes(content=reply.content + f"<{i}>")
    store.update_message(chat, reply)
    print(i, flush=True)
"""


def start(script: str, data_dir: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), str(data_dir)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)


def kill(process: subprocess.Popen) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait()


@pytest.mark.slow
def test_kill_in_the_middle_of_a_summarization_leaves_the_state_before_it(tmp_path):
    process = start(SUMMARIZER_SCRIPT, tmp_path)
    lines = []
    while (line := process.stdout.readline().strip()) != "in transaction":
        assert line, "the script ended without reaching the third summary"
        lines.append(line)
    kill(process)
    assert lines == ["saved 0", "saved 1"]

    with open_store(tmp_path) as store:
        [chat] = store.list_chats()
        messages = store.load_messages(chat.id)
        records = store.load_records(chat.id)
        archived = store.archived_by(chat.id)
    assert len(messages) == 400
    assert [r.text for r in records] == ["summary 0", "summary 1"]
    # Exactly the messages of the two committed summaries are archived, each by its own record.
    assert archived == {c.id: r.id for r in records for c in r.covered}
    assert len(archived) == 200


def test_kill_while_a_reply_streams_keeps_what_was_received_marked_incomplete(tmp_path):
    process = start(STREAM_SCRIPT, tmp_path)
    for _ in range(300):
        last = int(process.stdout.readline())
    kill(process)

    with open_store(tmp_path) as store:
        [chat] = store.list_chats()
        user, reply = store.load_messages(chat.id)
    assert user.content == "tell me a long story"
    assert reply.incomplete
    # Every chunk reported saved is there, in order, whole; the writer may have saved more while this test read
    # its reports (they wait in the pipe), never a part of one.
    saved = reply.content.count("<")
    assert saved > last and reply.content == "".join(f"<{i}>" for i in range(saved))


# Fault injection: a `precis` command as typed (argv[2:]), in a process whose write transaction pauses (and says so)
# just before its COMMIT once a statement beginning with argv[1] ran in it, so the parent can kill it at that point.
PAUSED_COMMAND_SCRIPT = """
import sys, time
from sqlalchemy import event
from sqlalchemy.engine import Engine
from precis.core.cli.main import main

pause_after, ran = sys.argv[1], {"it": False}

@event.listens_for(Engine, "before_cursor_execute")
def _note(conn, cursor, statement, parameters, context, executemany):
    ran["it"] = ran["it"] or statement.lstrip().startswith(pause_after)

@event.listens_for(Engine, "commit")
def _pause_before_commit(conn):
    if ran["it"]:
        print("in transaction", flush=True)
        time.sleep(60)

sys.exit(main(sys.argv[2:]))
"""


def kill_paused(pause_after: str, *argv: str) -> None:
    """Run `precis argv` until its write reaches the commit after `pause_after`, then kill -9 it there."""
    process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(PAUSED_COMMAND_SCRIPT), pause_after, *argv],
                               cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "in transaction"
    kill(process)


def summaries_state(data_dir: Path) -> tuple:
    with open_store(data_dir) as store:
        [chat] = store.list_chats()
        return ([(r.id, r.status) for r in store.load_records(chat.id)], store.archived_by(chat.id))


@pytest.mark.slow
def test_kill_in_the_middle_of_an_undo_leaves_the_summary_and_undo_still_works(tmp_path):
    from precis.core.cli.main import main

    from tests.conftest import TRANSCRIPTS_DIR

    data = str(tmp_path)
    assert main(["--data-dir", data, "import", str(TRANSCRIPTS_DIR / "claudecode_session.jsonl")]) == 0
    for up_to in ("100", "300"):
        assert main(["--data-dir", data, "summarize", "claudecode_session", "--mode", "rule", "--up-to", up_to]) == 0
    before = summaries_state(tmp_path)
    assert [status for _id, status in before[0]] == ["active", "active"] and len(before[1]) == 300

    # The undo's last write: the archive marks of the messages it brings back.
    kill_paused("UPDATE message SET archived_by", "--data-dir", data, "undo-summary", "claudecode_session")
    assert summaries_state(tmp_path) == before  # nothing of the undo: both summaries, every archive mark

    assert main(["--data-dir", data, "undo-summary", "claudecode_session"]) == 0  # and it can be done again
    records, archived = summaries_state(tmp_path)
    assert [status for _id, status in records] == ["active", "undone"]
    assert set(archived) == {mid for mid, rid in before[1].items() if rid == records[0][0]} and len(archived) == 100


@pytest.mark.slow
def test_kill_in_the_middle_of_importing_a_long_transcript_leaves_no_part_of_it(tmp_path):
    from precis.core.cli.main import main

    from tests.conftest import TRANSCRIPTS_DIR

    data = str(tmp_path)
    transcript = TRANSCRIPTS_DIR / "claudecode_session.jsonl"
    assert main(["--data-dir", data, "import", str(TRANSCRIPTS_DIR / "sweagent_1.jsonl")]) == 0
    with open_store(tmp_path) as store:
        [kept] = store.list_chats()
    # Past the messages' rows, as the search index is filled: the import's last statement.
    kill_paused("INSERT INTO message_fts(rowid", "--data-dir", data, "import", str(transcript))
    with open_store(tmp_path) as store:
        assert store.list_chats() == [kept]
        assert store.search("spotter") == []  # not one of its messages, nor its search index
    assert main(["--data-dir", data, "import", str(transcript)]) == 0  # imported whole the next time
    with open_store(tmp_path) as store:
        assert sorted(c.message_count for c in store.list_chats()) == sorted([kept.message_count, 649])
