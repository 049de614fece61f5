"""The Store's message versions: a regenerated reply keeps the replies it replaced, and one is shown.

The message row always holds the version shown, so the engine, the prompt, search and exports read the message
as before; `message_version` keeps every version's text (the shown one included) and which one is shown. Versions
go with their message (ON DELETE CASCADE): removing a message removes its alternatives.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import text

from ..model.messages import Message
from .database import MessageNotFound
from .message_table import message_values


@dataclass(frozen=True)
class Versions:
    """The versions of one message: their texts in the order written, and which one is shown (0-based)."""

    texts: tuple[str, ...]
    shown: int


class VersionTable:
    """Store's version methods (a part of Store; uses its _read and _write)."""

    def versions(self, chat_id: str) -> dict[str, Versions]:
        """{message id: its versions} for this chat's messages that have been regenerated."""
        sql = text("""SELECT m.id, v.content, v.shown FROM message_version v JOIN message m ON m.pk = v.message_pk
                      WHERE m.chat_id = :chat ORDER BY m.seq, v.position""")
        found: dict[str, tuple[list[str], int]] = {}
        with self._read() as session:
            for message_id, content, shown in session.execute(sql, {"chat": chat_id}):
                texts, shown_at = found.setdefault(message_id, ([], 0))
                if shown:
                    shown_at = len(texts)
                texts.append(content)
                found[message_id] = (texts, shown_at)
        return {message_id: Versions(tuple(texts), shown) for message_id, (texts, shown) in found.items()}

    def save_version(self, chat_id: str, message: Message) -> Versions:
        """Keep the message's text as its newest version, shown from now (its row is saved with it)."""
        with self._write("keep the version") as session:
            pk = self._message_pk(session, chat_id, message.id)
            session.execute(text("UPDATE message_version SET shown = 0 WHERE message_pk = :pk"), {"pk": pk})
            session.execute(text("""
                INSERT INTO message_version (message_pk, position, content, incomplete, created_at, shown)
                SELECT :pk, coalesce(max(position) + 1, 0), :content, :incomplete, :now, 1
                FROM message_version WHERE message_pk = :pk"""),
                {"pk": pk, "content": message.content, "incomplete": message.incomplete, "now": time.time()})
            self._save_row(session, chat_id, message)
        return self.versions(chat_id)[message.id]

    def show_version(self, chat_id: str, message: Message, position: int) -> Message:
        """Make version `position` the message's text (what is shown and sent); returns the message as saved."""
        with self._write("show the version") as session:
            pk = self._message_pk(session, chat_id, message.id)
            row = session.execute(text("SELECT content, incomplete FROM message_version "
                                       "WHERE message_pk = :pk AND position = :position"),
                                  {"pk": pk, "position": position}).first()
            if row is None:
                raise MessageNotFound(f"message {message.id} has no version {position + 1}")
            shown = message.with_changes(content=row[0], incomplete=bool(row[1]))
            session.execute(text("UPDATE message_version SET shown = (position = :position) WHERE message_pk = :pk"),
                            {"pk": pk, "position": position})
            self._save_row(session, chat_id, shown)
        return shown

    @staticmethod
    def _message_pk(session, chat_id: str, message_id: str) -> int:
        pk = session.execute(text("SELECT pk FROM message WHERE chat_id = :chat AND id = :id"),
                             {"chat": chat_id, "id": message_id}).scalar()
        if pk is None:
            raise MessageNotFound(f"no message {message_id} in chat {chat_id}")
        return pk

    @staticmethod
    def _save_row(session, chat_id: str, message: Message) -> None:
        values = message_values(chat_id, message)
        session.execute(text("UPDATE message SET content = :content, incomplete = :incomplete, sha256 = :sha256, "
                             "token_count = NULL WHERE chat_id = :chat_id AND id = :id"),
                        {key: values[key] for key in ("content", "incomplete", "sha256", "chat_id", "id")})
