"""The Store's messages: appending, streaming updates, loading, cached token counts and
full-text search across chats."""

from __future__ import annotations

import itertools
import json
import logging
import re
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import bindparam, func, text
from sqlmodel import Session, select, update

from ..context.recall_index import fts_or_query
from ..model.bulk import collector_paused
from ..model.messages import Message, Role, ToolCall
from .database import StoreBase, sqlite_connection, use_bulk_cache
from .errors import MessageNotFound, StoreError
from .schema import MESSAGE, MessageRow
from .snippet import SCAN_BYTES, query_stems, snippet

log = logging.getLogger("precis.store")


@dataclass(frozen=True)
class SearchHit:
    chat_id: str
    chat_title: str
    message_id: str
    role: str
    snippet: str
    # The summary that hides this message from the model, if any.
    archived_by: str | None


def _calls_to_json(calls: Sequence[ToolCall]) -> str | None:
    if not calls:
        return None
    return json.dumps([{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls], ensure_ascii=False)


def message_values(chat_id: str, message: Message) -> dict[str, Any]:
    return {
        "id": message.id, "chat_id": chat_id, "role": message.role, "content": message.content,
        "tool_calls": _calls_to_json(message.tool_calls), "tool_call_id": message.tool_call_id,
        "name": message.name, "pinned": message.pinned, "incomplete": message.incomplete,
        "cut_at": message.cut_at, "sent": message.sent, "created_at": message.created_at, "sha256": message.sha256(),
    }


# The columns message_from_row takes, in its order.
MESSAGE_COLUMNS = "id, role, content, tool_calls, tool_call_id, name, created_at, pinned, incomplete, cut_at, sent"


def message_from_row(id_: str, role: str, content: str, tool_calls: str | None, tool_call_id: str | None,
                      name: str | None, created_at: float, pinned: int, incomplete: int, cut_at: int | None,
                      sent: str | None = None) -> Message:
    # Interned: a long chat's roles and tool names are a handful of strings, not one copy per message.
    calls = tuple(ToolCall(id=c["id"], name=sys.intern(c["name"]), arguments=c["arguments"])
                  for c in json.loads(tool_calls)) if tool_calls else ()
    # The role as it was stored, from a Message: one of Role's.
    return Message(role=cast(Role, sys.intern(role)), content=content, tool_calls=calls, tool_call_id=tool_call_id,
                   name=sys.intern(name) if name else name, id=id_, created_at=created_at, pinned=bool(pinned),
                   incomplete=bool(incomplete), cut_at=cut_at, sent=sent)


def search_words(text_: str) -> list[str]:
    """The words `search` looks for in what the user typed (none: nothing to search for)."""
    return re.findall(r"\w+", text_)


def _fts_query(text_: str) -> str:
    """Every word as a quoted prefix ("kickbox" finds "kickboxing"), so punctuation in what the user typed is never
    FTS syntax."""
    return " ".join('"' + w.replace('"', '""') + '"*' for w in search_words(text_))


# Rows are inserted this many at a time (all in the caller's one transaction), so importing 100,000 messages never
# holds every row's values at once.
INSERT_BATCH = 2000
_INSERT_COLUMNS = ("id", "chat_id", "seq", "role", "content", "tool_calls", "tool_call_id", "name", "pinned",
                   "incomplete", "cut_at", "sent", "created_at", "sha256", "archived_by")
_INSERT_SQL = (f"INSERT INTO message ({', '.join(_INSERT_COLUMNS)}) "
               f"VALUES ({', '.join('?' * len(_INSERT_COLUMNS))})")


# FTS5's usual setting: merge the index's segments a little with every write once a level has this many.
FTS5_AUTOMERGE = 4


@contextmanager
def bulk_insert(session: Session) -> Iterator[None]:
    """An import's messages inserted within the block, in the session's transaction: a large page cache (until the
    connection returns to the pool) and FTS5's merging off until the block ends. Merging as it writes makes one
    large insert a log-structured merge of everything inserted so far, n log n: indexing cost 2.6 us a message at
    10,000 and 3.1 at 100,000 with it, 2.6 at both without. Later writes merge the import's segments as usual."""
    use_bulk_cache(session)
    connection = session.connection()
    connection.exec_driver_sql("INSERT INTO message_fts(message_fts, rank) VALUES ('automerge', 0)")
    yield
    # Only on success: a failed import rolls back, the setting with it.
    connection.exec_driver_sql(f"INSERT INTO message_fts(message_fts, rank) VALUES ('automerge', {FTS5_AUTOMERGE})")


def insert_messages(session: Session, chat_id: str, messages: Iterable[Message], first_seq: int,
                    archived_by: Mapping[str, str] | None = None) -> None:
    """Insert messages at seq first_seq, first_seq+1, ... within the session's transaction: plain driver rows in
    batches, then all of them into the search index in one statement (the only place messages are added, so the
    only place they are indexed, as message_searched gives them; changes and deletions reach the index through
    triggers)."""
    archived_by = archived_by or {}
    connection = session.connection()
    numbered = enumerate(messages, start=first_seq)
    while batch := list(itertools.islice(numbered, INSERT_BATCH)):
        rows = []
        for seq, message in batch:
            values = {**message_values(chat_id, message), "seq": seq, "archived_by": archived_by.get(message.id)}
            rows.append(tuple(values[c] for c in _INSERT_COLUMNS))
        connection.exec_driver_sql(_INSERT_SQL, rows)
    connection.exec_driver_sql("INSERT INTO message_fts(rowid, content) SELECT m.pk, searched.content FROM message m "
                               "JOIN message_searched searched ON searched.pk = m.pk WHERE m.chat_id = ? AND m.seq >= ?",
                               (chat_id, first_seq))


def mark_updated(session: Session, chat_id: str) -> None:
    """The chat changed now: its place in the chat list, and what Store.chats_changed notices."""
    session.connection().exec_driver_sql("UPDATE chat SET updated_at = ? WHERE id = ?", (time.time(), chat_id))


class MessageTable(StoreBase):
    """Store's message methods (a part of Store, through StoreBase)."""

    def add_message(self, chat_id: str, message: Message) -> None:
        self.add_messages(chat_id, [message])

    def add_messages(self, chat_id: str, messages: Sequence[Message]) -> None:
        """Append messages at the end of a chat."""
        with self._write("save the message") as session:
            row = self._chat_row(session, chat_id)
            start = session.exec(select(func.coalesce(func.max(MessageRow.seq), -1))
                                 .where(MessageRow.chat_id == chat_id)).one() + 1
            insert_messages(session, chat_id, messages, start)
            row.updated_at = time.time()
            session.add(row)

    def update_message(self, chat_id: str, message: Message, *, streaming: bool = False) -> None:
        """Save a changed message (streamed text as it arrives, a pin, the `incomplete` mark). One cheap UPDATE.

        While a reply streams, save it with incomplete=True and clear the mark with the last save, so a crash
        leaves what was received, marked as cut off. Every save but those `streaming` (a reply still being written)
        marks the chat updated: another Precis watching the chat (Store.chats_changed) then reads the reply as it
        ended, not as it was when it began. A streaming save does not wait for another writer: StoreLocked at once.
        """
        values = message_values(chat_id, message)
        for key in ("id", "chat_id", "created_at"):
            del values[key]
        values["token_count"] = None
        with self._write("save the message", wait=not streaming) as session:
            # The values at execution, not in the statement: SQLAlchemy's statement cache would keep the first text
            # saved this way (a whole pasted log) for as long as the store is open.
            result = session.connection().execute(
                update(MESSAGE).where(MESSAGE.c.chat_id == bindparam("in_chat"), MESSAGE.c.id == bindparam("of_id")),
                {**values, "in_chat": chat_id, "of_id": message.id})
            if result.rowcount == 0:
                raise MessageNotFound(f"no message {message.id} in chat {chat_id}")
            if not streaming:
                mark_updated(session, chat_id)

    def delete_last_message(self, chat_id: str, message_id: str) -> None:
        """Delete the chat's newest message (a reply that failed before its first word: nothing to keep). Only the
        newest: older messages are never deleted. MessageNotFound if it is not the newest."""
        with self._write("delete the empty reply") as session:
            newest = session.connection().execute(text(
                "SELECT id FROM message WHERE chat_id = :chat ORDER BY seq DESC LIMIT 1"), {"chat": chat_id}).scalar()
            if newest != message_id:
                raise MessageNotFound(f"{message_id} is not the newest message of chat {chat_id}")
            session.connection().execute(text("DELETE FROM message WHERE chat_id = :chat AND id = :id"),
                                         {"chat": chat_id, "id": message_id})
            mark_updated(session, chat_id)

    def keep_prompt_setup(self, chat_id: str, setups: dict[str, str]) -> None:
        """Keep what a reply's prompt was assembled under ({key: JSON} of context/sent_record's PromptSettings; a
        chat's older replies also have their setups here, context/old_record.py), once per chat and key."""
        with self._write("save what the reply was written from") as session:
            session.connection().exec_driver_sql(
                "INSERT OR IGNORE INTO prompt_setup (chat_id, key, setup) VALUES (?, ?, ?)",
                [(chat_id, key, setup) for key, setup in setups.items()])

    def prompt_setup(self, chat_id: str, key: str) -> str | None:
        with self._read() as session:
            row = session.connection().exec_driver_sql(
                "SELECT setup FROM prompt_setup WHERE chat_id = ? AND key = ?", (chat_id, key)).first()
        return row[0] if row is not None else None

    def load_messages(self, chat_id: str) -> list[Message]:
        """Every message of a chat in order, archived ones included (the engine decides what the model sees)."""
        return self.load_counted_messages(chat_id, None)[0]

    def load_last_messages(self, chat_id: str, count: int) -> list[Message]:
        """The chat's last `count` messages in order: what a window paints first on opening a long chat."""
        with self._read() as session:
            self._chat_row(session, chat_id, deleted_ok=True)
            rows = session.connection().exec_driver_sql(
                f"SELECT {MESSAGE_COLUMNS} FROM message WHERE chat_id = ? ORDER BY seq DESC LIMIT ?",
                (chat_id, count)).fetchall()
        return [message_from_row(*row) for row in reversed(rows)]

    def load_counted_messages(self, chat_id: str, tokenizer: str | None) -> tuple[list[Message], dict[str, int]]:
        """The chat's messages in order and their cached token counts by id, in one read (opening a chat). Only
        counts `tokenizer` (a TokenCounter's name) made are given; with None, none."""
        with self._read() as session, collector_paused():
            same = self._chat_row(session, chat_id, deleted_ok=True).token_counter == tokenizer
            # Plain driver rows: this is the hot path of opening a long chat.
            rows = session.connection().exec_driver_sql(
                f"SELECT {MESSAGE_COLUMNS}, token_count FROM message WHERE chat_id = ? ORDER BY seq",
                (chat_id,)).fetchall()
            messages = [message_from_row(*row[:-1]) for row in rows]
            return messages, {row[0]: row[-1] for row in rows if row[-1] is not None} if same else {}

    def token_counts(self, chat_id: str, tokenizer: str) -> dict[str, int]:
        """Cached token counts by message id (cleared when a message changes) if `tokenizer` made them, else none."""
        with self._read() as session:
            if self._chat_row(session, chat_id, deleted_ok=True).token_counter != tokenizer:
                return {}
            # Plain driver rows: read on every open of a chat, one row per message.
            rows = session.connection().exec_driver_sql(
                "SELECT id, token_count FROM message WHERE chat_id = ? AND token_count IS NOT NULL", (chat_id,))
            return {key: value for key, value in rows}

    def save_token_counts(self, chat_id: str, tokenizer: str, counts: Mapping[str, int]) -> None:
        """Cache counts `tokenizer` made for the next opening; counts of another tokenizer are dropped. Only a
        cache: when another program is writing, or the store cannot be written (read-only, full), it is skipped at
        once, never waited for or failed on (counted again next time)."""
        try:
            with self._write("save token counts", wait=False) as session:
                connection = session.connection()
                chat = self._chat_row(session, chat_id, deleted_ok=True)
                if chat.token_counter != tokenizer:
                    connection.execute(update(MESSAGE).where(MESSAGE.c.chat_id == chat_id).values(token_count=None))
                    chat.token_counter = tokenizer
                connection.execute(
                    update(MESSAGE).where(MESSAGE.c.chat_id == chat_id, MESSAGE.c.id == bindparam("mid"))
                    .values(token_count=bindparam("n")), [{"mid": k, "n": v} for k, v in counts.items()])
        except StoreError as exc:
            log.info("token counts not cached: %s", exc)

    def search(self, query: str, limit: int = 20) -> list[SearchHit]:
        """Messages of all chats with a word starting with each word of `query` (archived ones too), best first."""
        match = _fts_query(query)
        if not match:
            return []
        sql = text("""
            SELECT m.pk, m.chat_id, c.title, m.id, m.role, m.archived_by FROM (
                SELECT rowid AS pk, rank FROM message_fts WHERE message_fts MATCH :match ORDER BY rank LIMIT :limit)
                AS hit
            JOIN message m ON m.pk = hit.pk JOIN chat c ON c.id = m.chat_id
            WHERE c.deleted_at IS NULL ORDER BY hit.rank""")
        stems = query_stems(query)
        with self._read() as session:
            rows = session.execute(sql, {"match": match, "limit": limit}).all()
            database = sqlite_connection(session.connection())
            hits = []
            for pk, chat_id, title, message_id, role, archived_by in rows:
                # Only the start of the message is read (a blob read of its first pages), not all of a 50 MB one.
                with database.blobopen("message", "content", pk, readonly=True) as content:
                    whole = len(content) <= SCAN_BYTES
                    start = content.read(SCAN_BYTES).decode("utf-8", errors="ignore")  # a character cut at the end
                hits.append(SearchHit(chat_id, title, message_id, role, snippet(start, stems, whole), archived_by))
            return hits

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
