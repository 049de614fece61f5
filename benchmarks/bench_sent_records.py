"""What each reply's record of what it was written from costs: the database of a 10,000-message chat with a record on
every reply against the same chat without, and the time to rebuild a reply's prompt from its record.

Run: python benchmarks/bench_sent_records.py [MESSAGES] [coding] [plain]   (10,000 messages and both kinds of chat by
default; about ten minutes for each at 10,000 on 2 cores)
Goal: the records add under 1% to the database (issue 26). The chat is written as the window writes it: each reply's
prompt assembled by the engine at an 8k window (summaries made as they fall due) and its record kept.
"""

from __future__ import annotations

import json
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precis.core.chat.sent_prompts import keep_sent, sent_prompt  # noqa: E402
from precis.core.context.engine import Budget, ContextEngine  # noqa: E402
from precis.core.model.messages import Message, new_id  # noqa: E402
from precis.core.settings import SummarizationPolicy  # noqa: E402
from precis.core.storage.paths import DB_NAME  # noqa: E402
from precis.core.storage.store import attach_engine, open_store  # noqa: E402

from benchmarks.bench_store import sample_messages  # noqa: E402

CONVERSATION = Path(__file__).resolve().parents[1] / "tests" / "data" / "conversations" / "locomo_1.jsonl"
GOAL_SHARE = 0.01


def conversation_messages(count: int) -> list[Message]:
    """A real plain conversation (LoCoMo's first), repeated with fresh ids to `count` messages."""
    rows = [json.loads(line) for line in CONVERSATION.read_text(encoding="utf-8").splitlines() if line.strip()]
    pool = [Message(role=r["role"], content=r["content"]) for r in rows]
    return [pool[n % len(pool)].with_changes(id=new_id()) for n in range(count)]


def written(messages: list[Message], folder: Path, with_records: bool) -> tuple[int, list[str], float]:
    """The database's size after writing the chat message by message as the window does (with or without each
    reply's record), the replies' ids, and the seconds keeping the records took."""
    keeping = 0.0
    replies: list[str] = []
    with open_store(folder) as store:
        chat = store.create_chat("bench")
        engine = ContextEngine(Budget(8192), SummarizationPolicy(mode="rule"))
        attach_engine(store, chat, engine)
        for message in messages:
            if message.role == "assistant":
                replies.append(message.id)
                if with_records:
                    prompt = engine.assemble()  # the reply's prompt, assembled whether or not a record is kept
                    start = time.perf_counter()
                    sent = keep_sent(store, chat, engine, prompt)
                    keeping += time.perf_counter() - start
                    message = message.with_changes(sent=sent)
            store.add_message(chat, message)
            engine.append(message)
    size = sum(path.stat().st_size for path in folder.glob(f"{DB_NAME}*"))
    return size, replies, keeping


def tables(folder: Path) -> dict[str, tuple[int, int]]:
    """{table or index: (bytes of its pages, bytes unused in them)} of the database in `folder` (SQLite's dbstat)."""
    with sqlite3.connect(folder / DB_NAME) as database:
        rows = database.execute("SELECT name, sum(pgsize), sum(unused) FROM dbstat GROUP BY name").fetchall()
    return {name: (size, unused) for name, size, unused in rows}


def record_fields(folder: Path) -> tuple[int, dict[str, int]]:
    """The replies with a record, and the characters of their records by field (the module's doc says the form;
    split here by its marks, not by its own code)."""
    names = {"": "recalled places", "~": "summaries", "^": "pins", "#": "settings' key", "!": "factor"}
    sizes = dict.fromkeys(["checksum", *names.values()], 0)
    with sqlite3.connect(folder / DB_NAME) as database:
        records = [sent for (sent,) in database.execute("SELECT sent FROM message WHERE sent IS NOT NULL")]
    for record in records:
        sizes["checksum"] += 5
        pieces = re.split(r"([~^#!])", record[5:])
        sizes[names[""]] += len(pieces[0])
        for mark, text in zip(pieces[1::2], pieces[2::2], strict=True):
            sizes[names[mark]] += 1 + len(text)
    return len(records), sizes


def breakdown(without: Path, with_: Path) -> str:
    """Where the records' bytes go: their fields, a reply's share of the settings kept (prompt_setup), and the room
    the message table's pages leave unused (rows grow when a summary archives them, and split their pages)."""
    replies, sizes = record_fields(with_)
    before, after = tables(without), tables(with_)
    grown = {name: (after[name][0] - before.get(name, (0, 0))[0], after[name][1] - before.get(name, (0, 0))[1])
             for name in after if after[name] != before.get(name)}
    fields = ", ".join(f"{name} {size / replies:.1f}" for name, size in sizes.items())
    pages = ", ".join(f"{name} {size / replies:+.1f} ({unused / replies:+.1f} unused)"
                      for name, (size, unused) in sorted(grown.items(), key=lambda item: -item[1][0]))
    return (f"  a record: {sum(sizes.values()) / replies:.1f} characters ({fields}); pages grown, bytes a reply: "
            f"{pages}")


def rebuild_times(folder: Path, replies: list[str]) -> list[float]:
    """Seconds to rebuild what replies across the chat were written from (a worker's time: never the GUI thread's)."""
    from precis.core.storage.chats import restore_engine

    times = []
    with open_store(folder) as store:
        chat = store.list_chats()[0].id
        engine, _ = restore_engine(store, chat, default_window=8192)
        engine.count_exactly(engine.messages)  # as opening the chat in the window does, before any reply is asked
        for reply in replies[:: max(len(replies) // 10, 1)]:
            start = time.perf_counter()
            sent_prompt(store, chat, engine, reply)
            times.append(time.perf_counter() - start)
    return times


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    kinds = {"coding sessions": sample_messages, "plain conversation": conversation_messages}
    wanted = sys.argv[2:] or list(kinds)
    for kind, make in kinds.items():
        if kind.split()[0] not in [w.split()[0] for w in wanted]:
            continue
        messages = make(count)
        with tempfile.TemporaryDirectory() as without, tempfile.TemporaryDirectory() as with_:
            plain, _, _ = written(messages, Path(without), with_records=False)
            recorded, replies, keeping = written(messages, Path(with_), with_records=True)
            times = rebuild_times(Path(with_), replies)
            fields = breakdown(Path(without), Path(with_))
        share = (recorded - plain) / plain
        print(f"{kind}, {count:,} messages, {len(replies):,} replies: database {plain / 1e6:.1f} MB without records, "
              f"{recorded / 1e6:.1f} MB with ({share:+.2%}; goal < {GOAL_SHARE:.0%}); keeping a record: mean "
              f"{keeping / max(len(replies), 1) * 1000:.2f} ms a reply; rebuilding one: median "
              f"{statistics.median(times) * 1000:.0f} ms, slowest {max(times) * 1000:.0f} ms\n{fields}")


if __name__ == "__main__":
    main()
