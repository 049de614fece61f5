"""The Store's message versions: a regenerated reply keeps the replies it replaced, an edited message the messages
it was sent with, and one version is shown.

The message rows always hold the versions shown, so the engine, the prompt, search and exports read the chat as
before; `message_version` keeps every version's text (the shown one included) and which one is shown. A version
not shown keeps its branch: the messages that followed it when another was shown (an edited message's reply and
that reply's versions), copied whole as rows (`branch`, JSON), and put back when it is shown again. Nothing is
deleted by switching or editing. Versions go with their message (ON DELETE CASCADE).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text

from ..model.messages import Message
from .database import StoreBase
from .errors import MessageNotFound
from .message_table import MESSAGE_COLUMNS, insert_messages, mark_updated, message_from_row, message_values

# What a branch keeps of each of its messages' versions, in this order.
_VERSION_COLUMNS = "position, content, incomplete, cut_at, sent, created_at, shown, branch"
# A branch kept by schema 8 has its versions' columns without `sent`.
_VERSION_COLUMNS_8 = ("position", "content", "incomplete", "cut_at", "created_at", "shown", "branch")


@dataclass(frozen=True)
class Versions:
    """The versions of one message: their texts in the order written, and which one is shown (0-based)."""

    texts: tuple[str, ...]
    shown: int


@dataclass(frozen=True)
class BranchMessage:
    """A message of a kept branch, with its versions (None: it has one text) and the branches of those."""

    message: Message
    versions: Versions | None = None
    branches: Branches = field(default_factory=dict)


# A message's kept branches: {place of a version not shown: the messages that followed it}, empty ones left out.
Branches = dict[int, tuple[BranchMessage, ...]]


def _branch_from_json(kept: str | None) -> tuple[BranchMessage, ...]:
    """A branch as _keep_branch stored it, as messages with their versions and those versions' branches."""
    found = []
    for entry in json.loads(kept) if kept else []:
        rows = [version if len(version) == len(_VERSION_COLUMNS_8) + 1 else [*version[:4], None, *version[4:]]
                for version in entry["versions"]]
        versions = Versions(tuple(row[1] for row in rows), next(n for n, row in enumerate(rows) if row[6])) \
            if rows else None
        branches = {n: branch for n, row in enumerate(rows) if (branch := _branch_from_json(row[7]))}
        found.append(BranchMessage(message_from_row(*entry["message"]), versions, branches))
    return tuple(found)


def _branch_to_json(branch: tuple[BranchMessage, ...]) -> str | None:
    """A branch as _keep_branch stores it (None for no messages): each message's row and its versions' rows."""
    if not branch:
        return None
    entries: list[dict[str, Any]] = []
    for kept in branch:
        message = kept.message
        values = message_values("", message)
        versions = kept.versions or Versions((), 0)
        entries.append({"message": [values[column] for column in MESSAGE_COLUMNS.split(", ")], "versions": [
            [n, text_, message.incomplete and n == versions.shown, message.cut_at if n == versions.shown else None,
             message.sent if n == versions.shown else None, message.created_at, n == versions.shown,
             _branch_to_json(kept.branches.get(n, ()))] for n, text_ in enumerate(versions.texts)]})
    return json.dumps(entries, ensure_ascii=False)


class VersionTable(StoreBase):
    """Store's version methods (a part of Store, through StoreBase)."""

    def versions(self, chat_id: str) -> dict[str, Versions]:
        """{message id: its versions} for this chat's messages that have been regenerated or edited."""
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

    def branches(self, chat_id: str) -> dict[str, Branches]:
        """{message id: its kept branches} for this chat's messages that have a version not shown with messages that
        followed it (an edited message, a regenerated reply that had been answered), branches of branches within."""
        sql = text("""SELECT m.id, v.position, v.branch FROM message_version v JOIN message m ON m.pk = v.message_pk
                      WHERE m.chat_id = :chat AND v.branch IS NOT NULL ORDER BY m.seq, v.position""")
        found: dict[str, Branches] = {}
        with self._read() as session:
            for message_id, position, kept in session.execute(sql, {"chat": chat_id}):
                if branch := _branch_from_json(kept):
                    found.setdefault(message_id, {})[position] = branch
        return found

    def save_version(self, chat_id: str, message: Message) -> Versions:
        """Keep the message's text as its newest version, shown from now (its row is saved with it). The messages
        after it answered the version shown until now: they become that version's branch."""
        with self._write("keep the version") as session:
            pk, seq = self._message_pk(session, chat_id, message.id)
            self._keep_branch(session, chat_id, pk, seq)
            session.execute(text("UPDATE message_version SET shown = 0 WHERE message_pk = :pk"), {"pk": pk})
            session.execute(text("""
                INSERT INTO message_version (message_pk, position, content, incomplete, cut_at, sent, created_at, shown)
                SELECT :pk, coalesce(max(position) + 1, 0), :content, :incomplete, :cut_at, :sent, :now, 1
                FROM message_version WHERE message_pk = :pk"""),
                {"pk": pk, "content": message.content, "incomplete": message.incomplete, "cut_at": message.cut_at,
                 "sent": message.sent, "now": time.time()})
            self._save_row(session, chat_id, message)
        return self.versions(chat_id)[message.id]

    def save_shown_version(self, chat_id: str, message: Message) -> None:
        """Save a changed message (a continued reply) and, if it has versions, the shown one's text with it."""
        with self._write("save the message") as session:
            pk, _seq = self._message_pk(session, chat_id, message.id)
            session.execute(text("UPDATE message_version SET content = :content, incomplete = :incomplete, "
                                 "cut_at = :cut_at, sent = :sent WHERE message_pk = :pk AND shown = 1"),
                            {"pk": pk, "content": message.content, "incomplete": message.incomplete,
                             "cut_at": message.cut_at, "sent": message.sent})
            self._save_row(session, chat_id, message)

    def show_version(self, chat_id: str, message: Message, position: int) -> list[Message]:
        """Make version `position` the message's text (what is shown and sent), with the branch it began: the
        messages after the message now go with the version shown until now. Returns the message as saved and the
        messages after it."""
        with self._write("show the version") as session:
            pk, seq = self._message_pk(session, chat_id, message.id)
            row = session.execute(text("SELECT content, incomplete, cut_at, sent, branch, shown FROM message_version "
                                       "WHERE message_pk = :pk AND position = :position"),
                                  {"pk": pk, "position": position}).first()
            if row is None:
                raise MessageNotFound(f"message {message.id} has no version {position + 1}")
            content, incomplete, cut_at, sent, branch, shown_now = row
            if shown_now:  # shown already (another window switched first): keeping its branch would drop it
                return [message_from_row(*found) for found in session.connection().exec_driver_sql(
                    f"SELECT {MESSAGE_COLUMNS} FROM message WHERE chat_id = ? AND seq >= ? ORDER BY seq",
                    (chat_id, seq))]
            self._keep_branch(session, chat_id, pk, seq)
            shown = message.with_changes(content=content, incomplete=bool(incomplete), cut_at=cut_at, sent=sent)
            session.execute(text("UPDATE message_version SET shown = (position = :position), "
                                 "branch = CASE WHEN position = :position THEN NULL ELSE branch END "
                                 "WHERE message_pk = :pk"), {"pk": pk, "position": position})
            self._save_row(session, chat_id, shown)
            following = self._put_back(session, chat_id, seq, json.loads(branch) if branch else [])
        return [shown, *following]

    def _keep_branch(self, session, chat_id: str, pk: int, seq: int) -> None:
        """Move the messages after the message (seq) into the branch of its version shown now, whole: their rows
        and their own versions. Refused for a message a summary archived: older history never moves. Before its
        first version is kept they stay where they are: they answer it."""
        shown = session.execute(text("SELECT 1 FROM message_version WHERE message_pk = :pk AND shown = 1"),
                                {"pk": pk}).first()
        rows = [] if shown is None else session.connection().exec_driver_sql(
            f"SELECT pk, archived_by, {MESSAGE_COLUMNS} FROM message WHERE chat_id = ? AND seq > ? ORDER BY seq",
            (chat_id, seq)).fetchall()
        if not rows:
            return
        archived = next((row for row in rows if row[1] is not None), None)
        if archived is not None:
            raise MessageNotFound(f"message {archived[2]} is archived by summary {archived[1]}; undo the summary first")
        branch = []
        for row in rows:
            versions = session.connection().exec_driver_sql(
                f"SELECT {_VERSION_COLUMNS} FROM message_version WHERE message_pk = ? ORDER BY position",
                (row[0],)).fetchall()
            branch.append({"message": list(row[2:]), "versions": [list(version) for version in versions]})
        session.execute(text("UPDATE message_version SET branch = :branch WHERE message_pk = :pk AND shown = 1"),
                        {"pk": pk, "branch": json.dumps(branch, ensure_ascii=False)})
        session.connection().exec_driver_sql("DELETE FROM message WHERE chat_id = ? AND seq > ?", (chat_id, seq))

    @staticmethod
    def _put_back(session, chat_id: str, seq: int, branch: list[dict]) -> list[Message]:
        """A kept branch's messages back after the message (seq), with their versions."""
        messages = [message_from_row(*entry["message"]) for entry in branch]
        insert_messages(session, chat_id, messages, seq + 1)
        placeholders = ", ".join("?" * len(_VERSION_COLUMNS.split(", ")))
        for message, entry in zip(messages, branch, strict=True):
            for version in entry["versions"]:
                if len(version) == len(_VERSION_COLUMNS_8):  # kept before replies had records: none for it
                    version = [*version[:4], None, *version[4:]]
                session.connection().exec_driver_sql(
                    f"INSERT INTO message_version (message_pk, {_VERSION_COLUMNS}) "
                    f"SELECT pk, {placeholders} FROM message WHERE chat_id = ? AND id = ?",
                    (*version, chat_id, message.id))
        return messages

    @staticmethod
    def _insert_versions(session, chat_id: str, messages: list[Message], versions: Mapping[str, Versions],
                         branches: Mapping[str, Branches]) -> None:
        """The versions of newly inserted messages (an import), each version not shown with its branch (the messages
        after a message are those that answered its version shown)."""
        for message in messages:
            kept, branched = versions[message.id], branches.get(message.id, {})
            session.connection().exec_driver_sql(
                "INSERT INTO message_version (message_pk, position, content, incomplete, created_at, shown, branch) "
                "SELECT pk, ?, ?, ?, ?, ?, ? FROM message WHERE chat_id = ? AND id = ?",
                [(position, text_, message.incomplete and position == kept.shown, message.created_at,
                  position == kept.shown, _branch_to_json(branched.get(position, ())), chat_id, message.id)
                 for position, text_ in enumerate(kept.texts)])

    @staticmethod
    def _message_pk(session, chat_id: str, message_id: str) -> tuple[int, int]:
        """The message's row key and its place (seq) in the chat."""
        found = session.execute(text("SELECT pk, seq FROM message WHERE chat_id = :chat AND id = :id"),
                                {"chat": chat_id, "id": message_id}).first()
        if found is None:
            raise MessageNotFound(f"no message {message_id} in chat {chat_id}")
        return found[0], found[1]

    @staticmethod
    def _save_row(session, chat_id: str, message: Message) -> None:
        """The message's row as it is now (its calls too: a reply regenerated in a chat with tools may make some);
        the chat marked updated."""
        values = message_values(chat_id, message)
        session.execute(text("UPDATE message SET content = :content, incomplete = :incomplete, cut_at = :cut_at, "
                             "sent = :sent, tool_calls = :tool_calls, sha256 = :sha256, token_count = NULL "
                             "WHERE chat_id = :chat_id AND id = :id"),
                        {key: values[key] for key in ("content", "incomplete", "cut_at", "sent", "tool_calls", "sha256",
                                                      "chat_id", "id")})
        mark_updated(session, chat_id)
