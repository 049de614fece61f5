"""Importing chats from files: the interchange JSONL, OpenAI chat JSON, Claude Code's own session JSONL, and the
conversations.json of a ChatGPT or Claude.ai data export (many chats, account_exports.py).

Each reader parses the whole file in memory first and raises TranscriptError (file, line, field) on bad input;
only a fully parsed file reaches the store, in one transaction, so a chat is never half imported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..model.bulk import collector_paused
from ..model.counted import counted
from ..model.messages import Message, Role, ToolCall, new_id
from ..model.records import CoveredMessage, SummaryRecord
from ..model.titles import title_from
from ..model.tokens import TokenCounter
from ..settings import ChatSettings
from .account_exports import READERS, export_kind
from .interchange import (
    TranscriptError,
    chat_header,
    not_a_message,
    pair_tool_results,
    parse_jsonl_line,
    read_interchange_chat,
    refuse_lone_surrogates,
)
from .json_items import items_with_lines
from .store import NewChat, Store
from .text_files import as_utf8
from .version_table import Branches, Versions

FORMATS: tuple[str, ...] = ("auto", "jsonl", "openai", "claude-code", "chatgpt", "claude-ai")

CLAUDE_CODE_COMPACTION_PREFIX = "This session is being continued from a previous conversation"
# Line types in a Claude Code session file that are not conversation.
_CLAUDE_CODE_SKIPPED = {"progress", "file-history-snapshot", "system", "summary", "queue-operation"}


class ImportFailed(ValueError):
    """A file could not be imported; nothing from it was stored."""

    def __init__(self, error: TranscriptError):
        self.source, self.line, self.problem = error.source, error.line, error.problem
        super().__init__(f"{error}. Nothing was imported.")


@dataclass(frozen=True)
class Undecodable:
    """Bytes of a file that are not UTF-8; they were read as U+FFFD."""

    count: int  # replacement characters the decoding put in
    first_line: int

    def describe(self) -> str:
        sequences = "sequence that is" if self.count == 1 else "sequences that are"
        return (f"{self.count} byte {sequences} not UTF-8 replaced with U+FFFD "
                f"(first on line {self.first_line})")


def find_undecodable(data: bytes) -> Undecodable | None:
    """None when the file is UTF-8 throughout; else how many byte sequences were not, and the first one's line."""
    try:
        data.decode("utf-8")
        return None
    except UnicodeDecodeError as exc:
        first = exc.start
    replaced = data.decode("utf-8", errors="replace").count("\ufffd") - data.count("\ufffd".encode())
    return Undecodable(count=replaced, first_line=data.count(b"\n", 0, first) + 1)


@dataclass
class ParsedChat:
    title: str
    messages: list[Message]
    settings: ChatSettings | None = None  # the chat's own, from an export of Precis's
    records: list[SummaryRecord] = field(default_factory=list)
    # message id -> id of the record that archived it
    archived_by: dict[str, str] = field(default_factory=dict)
    versions: dict[str, Versions] = field(default_factory=dict)  # message id -> its versions, from Precis's export
    branches: dict[str, Branches] = field(default_factory=dict)  # message id -> its versions' branches, likewise
    undecodable: Undecodable | None = None
    unfinished_line: int | None = None  # a session still being written: its last line, cut short, left out

    def notices(self) -> list[str]:
        """What the user should know about how the file was read, beyond its messages."""
        said = [self.undecodable.describe()] if self.undecodable else []
        if self.unfinished_line is not None:
            said.append(f"line {self.unfinished_line}, the last, is unfinished (as in a session still being "
                        "written) and was left out")
        return said


@dataclass(frozen=True)
class ImportResult:
    """What an import stored, and what it had to change to read the file."""

    chat_id: str  # the one to open: of an account export's, the last changed
    title: str
    messages: int
    summaries: int
    notices: tuple[str, ...] = ()
    chat_ids: tuple[str, ...] = ()  # every chat an account export made, else empty
    left_out: str = ""  # what an account export held that was not imported ('3 images, 1 tool output')

    def described(self) -> str:
        """What was imported, for people: '"locomo_1": 438 messages, 3 summaries' (summaries only when there are);
        of an account export '12 chats (1,024 messages); left out: 3 images'."""
        if self.chat_ids:
            said = f"{counted(len(self.chat_ids), 'chat')} ({counted(self.messages, 'message')})"
            return said + (f"; left out: {self.left_out}" if self.left_out else "")
        said = counted(self.messages, "message")
        if self.summaries:
            said += ", " + counted(self.summaries, "summary")
        return f"{json.dumps(self.title, ensure_ascii=False)}: {said}"

    def notice(self) -> str:
        """What the user should know about the import beyond its success ('' when nothing)."""
        return "; ".join(self.notices)


def _decode(data: bytes) -> str:
    # Non-UTF-8 bytes become U+FFFD rather than failing the import.
    return data.decode("utf-8", errors="replace").lstrip("\ufeff")


def _title_from(messages: list[Message], fallback: str) -> str:
    first = next((m.content for m in messages if m.role == "user" and m.content.strip()), None)
    return title_from(first) if first is not None else fallback


def detect_format(path: Path, data: bytes) -> str:
    """Tell the format from the first JSON value in the file (of an account export, its first conversation)."""
    text = _decode(data)
    if (kind := export_kind(text)) is not None:
        return kind
    # Lines end at "\n" alone: str.splitlines also splits at U+2028 and U+0085, which JSON strings hold as they are.
    first = next((line.strip() for line in text.split("\n") if line.strip()), "")
    try:
        value = json.loads(first)
    except (json.JSONDecodeError, RecursionError):
        value = None  # the reader of the format reports the problem with its line
    if isinstance(value, dict):
        if "role" in value:
            return "jsonl"
        if "type" in value and ("uuid" in value or "sessionId" in value or value["type"] in _CLAUDE_CODE_SKIPPED):
            return "claude-code"
        if text.strip() != first:  # a whole object on the first line and more after it: JSON Lines, not messages
            raise not_a_message(str(path), 1, value)
    if isinstance(value, (dict, list)) or first[:1] in ("{", "["):
        return "openai"
    raise TranscriptError(str(path), 1, "not a known chat format (interchange JSONL, OpenAI chat JSON, Claude Code "
                                        "session JSONL, or a ChatGPT or Claude.ai export's conversations.json)")


# ------------------------------------------------------------------------------------------- interchange

def parse_interchange(path: Path, data: bytes) -> ParsedChat:
    lines = data.splitlines()
    messages, records, archived_by, versions, branches = read_interchange_chat(lines, str(path))
    number, first = next(((n, line) for n, line in enumerate(lines, start=1) if line.strip()), (1, b""))
    header = chat_header(parse_jsonl_line(first, str(path), number), str(path), number)
    return ParsedChat(title=header.title or path.stem, messages=messages, settings=header.settings, records=records,
                      archived_by=archived_by, versions=versions, branches=branches)


# ------------------------------------------------------------------------------------------------ OpenAI

def _openai_content(value: Any, source: str, line: int) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict) and part.get("type"):
                parts.append(f"[{part['type']}]")
            else:
                raise TranscriptError(source, line, "field 'content' has a part that is not an object with 'type'")
        return "\n".join(parts)
    raise TranscriptError(source, line, f"field 'content' must be a string or a list, got {type(value).__name__}")


def _openai_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            value = None
        # Arguments a model wrote that are not a JSON object are kept verbatim.
        return value if isinstance(value, dict) else {"raw": raw}
    return {}


def parse_openai(path: Path, data: bytes) -> ParsedChat:
    source = str(path)
    messages: list[Message] = []
    call_names: dict[str, str] = {}
    roles: dict[str, Role] = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
                              "tool": "tool", "function": "tool"}
    for item, line in items_with_lines(_decode(data), source):
        if not isinstance(item, dict):
            raise TranscriptError(source, line, f"expected a message object, got {type(item).__name__}")
        # A role that is not a string (a list, an object) is no role either, not a crash looking it up.
        role = roles.get(given_role) if isinstance(given_role := item.get("role"), str) else None
        if role is None:
            raise TranscriptError(source, line, f"field 'role' must be one of {', '.join(roles)}, "
                                                f"got {item.get('role')!r}")
        if item.get("content") is None and role != "assistant":  # only a reply may be empty (a call, a refusal)
            raise TranscriptError(source, line, f"a {item['role']} message needs its text in field 'content' "
                                                "(it has none)")
        content = _openai_content(item.get("content"), source, line)
        calls: list[ToolCall] = []
        raw_calls = item.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise TranscriptError(source, line, "field 'tool_calls' must be a list")
        for call in raw_calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise TranscriptError(source, line, "field 'tool_calls' has a call without function.name")
            call_id = given_id if isinstance(given_id := call.get("id"), str) else new_id()
            arguments = _openai_arguments(function.get("arguments"))
            if isinstance(function.get("arguments"), str):  # JSON in a string: its escapes were not read before
                refuse_lone_surrogates(arguments, function["arguments"], source, line,
                                       field=f"tool_calls[{len(calls)}].function.arguments")
            calls.append(ToolCall(id=call_id, name=function["name"], arguments=arguments))
            call_names[call_id] = function["name"]
        if role == "tool":
            answered = given_answered if isinstance(given_answered := item.get("tool_call_id"), str) else None
            name = item.get("name") if isinstance(item.get("name"), str) else call_names.get(answered or "")
            messages.append(Message(role="tool", content=content, tool_call_id=answered, name=name))
        else:
            messages.append(Message(role=role, content=content, tool_calls=tuple(calls)))
    return ParsedChat(title=_title_from(messages, path.stem), messages=pair_tool_results(messages))


# ------------------------------------------------------------------------------------------- Claude Code

def _timestamp(value: Any) -> float | None:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _block_text(content: Any) -> str:
    """Text of a tool_result's content: a string or a list of blocks (images become a marker)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") if b.get("type") == "text" else f"[{b.get('type', 'block')}]"
                         for b in content if isinstance(b, dict))
    return ""


class _ClaudeCodeReader:
    def __init__(self, source: str):
        self.source = source
        self.messages: list[Message] = []
        self.records: list[SummaryRecord] = []
        # messages[:archived] came before the newest compaction: its record hides them all.
        self.archived = 0
        self.call_names: dict[str, str] = {}
        self.seen_ids: set[str] = set()
        self.title: str | None = None
        self.compaction: dict[str, Any] = {}
        self.counter = TokenCounter()

    def error(self, line: int, problem: str) -> TranscriptError:
        return TranscriptError(self.source, line, problem)

    def read_line(self, number: int, raw: bytes) -> None:
        entry = parse_jsonl_line(raw, self.source, number)
        if entry is None:
            return
        if not isinstance(entry, dict):
            raise self.error(number, f"expected a JSON object, got {type(entry).__name__}")
        kind = entry.get("type")
        if kind == "summary" and isinstance(entry.get("summary"), str) and self.title is None:
            self.title = entry["summary"]
        if kind == "system" and entry.get("subtype") == "compact_boundary":
            self.compaction = entry.get("compactMetadata") or {}
        if kind not in ("user", "assistant") or entry.get("isMeta") or entry.get("isSidechain"):
            return
        uuid = given_uuid if isinstance(given_uuid := entry.get("uuid"), str) else new_id()
        if uuid in self.seen_ids:  # a resumed session repeats earlier lines
            return
        self.seen_ids.add(uuid)
        message = entry.get("message")
        if not isinstance(message, dict):
            raise self.error(number, "field 'message' must be an object")
        created = _timestamp(entry.get("timestamp"))
        extra: dict[str, Any] = {"created_at": created} if created is not None else {}  # else Message's default
        content = message.get("content")
        if kind == "user" and (entry.get("isCompactSummary") or
                               (isinstance(content, str) and content.startswith(CLAUDE_CODE_COMPACTION_PREFIX))):
            self.add_compaction(_block_text(content), created)
            return
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise self.error(number, "field 'message.content' must be a string or a list of blocks")
        texts: list[str] = []
        calls: list[ToolCall] = []
        results: list[Message] = []
        for block in content:
            if not isinstance(block, dict):
                raise self.error(number, "field 'message.content' has a block that is not an object")
            block_type = block.get("type")
            if block_type == "text":
                texts.append(block.get("text") or "")
            elif block_type == "tool_use":
                if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                    raise self.error(number, "a tool_use block needs string fields 'id' and 'name'")
                arguments = given_input if isinstance(given_input := block.get("input"), dict) else {}
                calls.append(ToolCall(id=block["id"], name=block["name"], arguments=arguments))
                self.call_names[block["id"]] = block["name"]
            elif block_type == "tool_result":
                call_id = block.get("tool_use_id")
                if not isinstance(call_id, str):
                    raise self.error(number, "a tool_result block needs a string field 'tool_use_id'")
                results.append(Message(role="tool", content=_block_text(block.get("content")),
                                       tool_call_id=call_id, name=self.call_names.get(call_id),
                                       id=f"{uuid}-{len(results)}" if results else uuid, **extra))
            elif block_type == "image":
                texts.append("[image]")
            # thinking / redacted_thinking blocks are the model's private reasoning: not conversation.
        self.messages.extend(results)
        joined = "\n".join(texts)
        if calls or joined.strip():
            role: Role = "assistant" if kind == "assistant" else "user"
            self.messages.append(Message(role=role, content=joined, tool_calls=tuple(calls),
                                         id=f"{uuid}-text" if results else uuid, **extra))

    def add_compaction(self, text: str, created: float | None) -> None:
        """Claude Code's own summary of everything before it becomes a summary record archiving that."""
        covered = self.messages[self.archived:]
        previous = self.records[-1:]  # each compaction folds in the one before, the only active record
        record = SummaryRecord(
            mode="llm", text=text, trigger=f"claude-code compaction ({self.compaction.get('trigger', 'auto')})",
            written_by="Claude Code", tokens=self.counter.count_text(text),
            covered=[CoveredMessage(id=m.id, sha256=m.sha256()) for m in covered],
            merged_ids=[r.id for r in previous],
            tokens_before=int(self.compaction.get("preTokens") or 0), tokens_after=self.counter.count_text(text),
            **({"created_at": created} if created is not None else {}))
        for r in previous:
            r.status = "merged"
        self.archived = len(self.messages)
        self.records.append(record)
        self.compaction = {}


def _is_json(raw: bytes) -> bool:
    try:
        json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return True


def parse_claude_code(path: Path, data: bytes) -> ParsedChat:
    """A Claude Code session. Claude Code writes a line and its newline at once, so a last line without its newline
    that is not JSON is one still being written (a live session): it is left out, and said to be, rather than the
    whole session refused."""
    reader = _ClaudeCodeReader(str(path))
    lines = data.splitlines()
    unfinished = None
    if lines and not data.endswith((b"\n", b"\r")) and not _is_json(lines[-1]):
        unfinished = len(lines)
        del lines[-1]
    for number, raw in enumerate(lines, start=1):
        reader.read_line(number, raw)
    messages = reader.messages
    return ParsedChat(title=reader.title or _title_from(messages, path.stem), messages=messages,
                      records=reader.records,
                      archived_by={m.id: reader.records[-1].id for m in messages[:reader.archived]},
                      unfinished_line=unfinished)


PARSERS = {"jsonl": parse_interchange, "openai": parse_openai, "claude-code": parse_claude_code}
FORMAT_NAMES = {"jsonl": "interchange JSONL", "openai": "OpenAI chat JSON", "claude-code": "a Claude Code session",
                "chatgpt": "a ChatGPT export", "claude-ai": "a Claude.ai export"}


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:  # the window shows the message as it is: not "[Errno 2] No such file or directory: '…'"
        raise OSError(f"cannot read {path}: {exc.strerror or exc}") from None


def _chosen_format(path: Path, data: bytes, fmt: str) -> str:
    if not _decode(data).strip():  # not "line 1: not a known chat format", nor an empty chat imported
        raise TranscriptError(str(path), 1, "the file is empty, there is no chat in it")
    chosen = detect_format(path, data) if fmt == "auto" else fmt
    if chosen not in PARSERS and chosen not in READERS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return chosen


def _no_messages(path: Path, chosen: str, fmt: str) -> TranscriptError:
    # `{"messages": []}`, or another format's file read as a Claude Code session
    return TranscriptError(str(path), 1, f"no chat messages in it, read as {FORMAT_NAMES[chosen]}"
                                         + ("" if fmt == "auto" else " (--format auto tells the format)"))


def parse_file(path: str | Path, fmt: str = "auto") -> ParsedChat:
    """Read a chat file. Raises ImportFailed (file, line, field) or OSError ('cannot read FILE: why')."""
    path = Path(path)
    data = _read_bytes(path)
    try:
        data = as_utf8(data, str(path))
        chosen = _chosen_format(path, data, fmt)
        if chosen in READERS:
            raise TranscriptError(str(path), 1, f"it is {FORMAT_NAMES[chosen]}, many chats: `precis import` reads "
                                                "each into a chat of its own")
        parsed = PARSERS[chosen](path, data)
        if not parsed.messages:
            raise _no_messages(path, chosen, fmt)
    except TranscriptError as exc:
        raise ImportFailed(_with_format_hint(exc, path, data, fmt)) from None
    parsed.undecodable = find_undecodable(data)
    return parsed


def _with_format_hint(error: TranscriptError, path: Path, data: bytes, fmt: str) -> TranscriptError:
    """A file read in the format --format named that looks like another says so: a Claude Code session read as
    OpenAI chat JSON was 'line 2: not valid JSON (Extra data at column 1)', as if the file were broken."""
    if fmt == "auto" or "--format auto" in error.problem:
        return error
    try:
        looks_like = detect_format(path, data)
    except TranscriptError:
        return error
    if looks_like == fmt:
        return error
    return TranscriptError(error.source, error.line, f"{error.problem}, read as {FORMAT_NAMES.get(fmt, fmt)}; it "
                                                     f"looks like {FORMAT_NAMES[looks_like]} (--format auto reads it)")


def import_file(store: Store, path: str | Path, fmt: str = "auto", title: str | None = None) -> ImportResult:
    """Import a chat file as a new chat, an account export as a chat for each of its conversations; all or nothing."""
    path = Path(path)
    with collector_paused():  # the parsed chat is one long-lived object per message
        data = _read_bytes(path)
        try:
            data = as_utf8(data, str(path))
            chosen = _chosen_format(path, data, fmt)
        except TranscriptError as exc:
            raise ImportFailed(_with_format_hint(exc, path, data, fmt)) from None
        if chosen in READERS:
            return _import_export(store, path, data, chosen, fmt, title)
        parsed = parse_file(path, fmt)
        # A blank --title is no title: the file's, not a chat listed without a name.
        title = (title or "").strip() or parsed.title
        chat_id = store.import_chat(title, parsed.messages, parsed.records, parsed.archived_by, parsed.settings,
                                    parsed.versions, parsed.branches)
    return ImportResult(chat_id=chat_id, title=title, messages=len(parsed.messages), summaries=len(parsed.records),
                        notices=tuple(parsed.notices()))


def _import_export(store: Store, path: Path, data: bytes, chosen: str, fmt: str, title: str | None) -> ImportResult:
    """Every conversation of a ChatGPT or Claude.ai export as a chat of its own, in one transaction."""
    try:
        export = READERS[chosen](_decode(data), str(path))
        if not export.chats:
            raise _no_messages(path, chosen, fmt)
        if (title or "").strip() and len(export.chats) > 1:
            raise TranscriptError(str(path), 1, f"--title names one chat, and the export holds "
                                                f"{len(export.chats)}; without it each keeps its own title")
    except TranscriptError as exc:
        raise ImportFailed(_with_format_hint(exc, path, data, fmt)) from None
    chats = export.chats
    if (title or "").strip():
        chats[0].title = (title or "").strip()
    ids = store.import_chats([NewChat(c.title, c.messages, versions=c.versions, branches=c.branches,
                                      created_at=c.created_at, updated_at=c.updated_at) for c in chats])
    latest = max(range(len(chats)), key=lambda n: chats[n].updated_at or chats[n].created_at or 0)
    undecodable = find_undecodable(data)
    return ImportResult(chat_id=ids[latest], title=chats[latest].title, messages=sum(len(c.messages) for c in chats),
                        summaries=0, notices=(undecodable.describe(),) if undecodable else (), chat_ids=tuple(ids),
                        left_out=export.left_out_described())
