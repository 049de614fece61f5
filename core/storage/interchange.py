"""The interchange format: JSON Lines, one message a line (see shared/transcripts/README.md).

An assistant line with `name` + `tool_args` is one tool call; the next `tool` line with that `name` is its result.
The whole chat travels in extra keys, which plain readers ignore: `archived_by` on a message a summary hides (the
summary's id), `summaries` (summary records, each with the messages it covers) on the line of the last
message a record covers, `chat` (its title and its own settings, as portable_chat_settings gives them) on the
first line, and on a message regenerated or edited its `versions`, `version_shown` and `branches`: for each version,
the messages that followed it while it was shown (records in the shape of lines, with their own versions and
branches), null for the version shown (the lines after it are its messages).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from ..model.messages import ROLES, Message, ToolCall, new_id
from ..model.records import SummaryRecord
from ..settings import LOCAL_CHAT_SETTINGS, ChatSettings, choice_problems
from .version_table import Branches, BranchMessage, Versions


class TranscriptError(ValueError):
    """Bad input in a transcript, naming the file, line and field."""

    def __init__(self, source: str, line: int, problem: str):
        self.source, self.line, self.problem = source, line, problem
        super().__init__(f"{source}, line {line}: {problem}")


def _decode_line(raw: bytes | str) -> str:
    if isinstance(raw, bytes):
        # Non-UTF-8 bytes must not crash an import; they become U+FFFD.
        raw = raw.decode("utf-8", errors="replace")
    return raw.lstrip("\ufeff")  # a byte-order mark some editors write before the first line


def not_a_message(source: str, line: int, record: dict) -> TranscriptError:
    """What a JSON object without a 'role' is told: not a message, and what it has instead."""
    return TranscriptError(source, line, "not a chat message: each line of interchange JSONL has a 'role' and its "
                                         f"'content' (this one has {', '.join(map(repr, record)) or 'nothing'})")


def message_from_record(record: Any, *, source: str, line: int) -> Message:
    """One parsed JSON object to a Message; TranscriptError names what is wrong."""
    if not isinstance(record, dict):
        raise TranscriptError(source, line, f"expected a JSON object, got {type(record).__name__}")
    role = record.get("role")
    if "role" not in record:
        raise not_a_message(source, line, record)
    if role not in ROLES:
        raise TranscriptError(source, line, f"field 'role' must be one of {', '.join(ROLES)}, got {role!r}")
    content = record.get("content")
    if content is None:
        if role != "assistant":  # only a reply may be empty (a call): as an OpenAI chat file is read
            raise TranscriptError(source, line, f"a {role} message needs its text in field 'content' (it has none)")
        content = ""
    if not isinstance(content, str):
        raise TranscriptError(source, line, f"field 'content' must be a string, got {type(content).__name__}")
    name = record.get("name")
    if name is not None and not isinstance(name, str):
        raise TranscriptError(source, line, f"field 'name' must be a string or null, got {type(name).__name__}")
    args = record.get("tool_args")
    if args is not None and not isinstance(args, dict):
        raise TranscriptError(source, line, f"field 'tool_args' must be an object or null, got {type(args).__name__}")
    extra: dict[str, Any] = {}
    if isinstance(record.get("id"), str) and record["id"]:
        extra["id"] = record["id"]
    if isinstance(record.get("created_at"), (int, float)):
        extra["created_at"] = float(record["created_at"])
    if isinstance(record.get("pinned"), bool):
        extra["pinned"] = record["pinned"]
    if record.get("incomplete") is True:
        extra["incomplete"] = True
    if role == "assistant" and name:
        call_id = given_call_id if isinstance(given_call_id := record.get("tool_call_id"), str) else new_id()
        return Message(role="assistant", content=content,
                       tool_calls=(ToolCall(id=call_id, name=name, arguments=args or {}),), **extra)
    if role == "tool":
        answered = given_answered if isinstance(given_answered := record.get("tool_call_id"), str) else None
        return Message(role="tool", content=content, name=name, tool_call_id=answered, **extra)
    return Message(role=role, content=content, **extra)


def pair_tool_results(messages: list[Message]) -> list[Message]:
    """Give each tool result without a call id the id of the earliest unanswered call with the same name."""
    pending: dict[str | None, deque[str]] = defaultdict(deque)
    answered: set[str] = set()
    out: list[Message] = []
    for m in messages:
        for call in m.tool_calls:
            pending[call.name].append(call.id)
        if m.role == "tool":
            if m.tool_call_id is None:
                queue = pending.get(m.name)
                while queue and queue[0] in answered:
                    queue.popleft()
                if queue:
                    m = m.with_changes(tool_call_id=queue.popleft())
            if m.tool_call_id:
                answered.add(m.tool_call_id)
        out.append(m)
    return out


NESTED_TOO_DEEP = "JSON nested too deeply to read (arrays or objects inside each other thousands of levels deep)"

# A JSON escape of half a UTF-16 surrogate pair: with its other half it is one character; alone it is none, and no
# file or database can hold it (saving it was a traceback).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _surrogate_place(value: Any, where: str) -> str | None:
    """The field (as 'message.content[0].text', under `where`) of the first string in a parsed JSON value that
    holds a lone surrogate; None if none does."""
    if isinstance(value, str):
        return where if _LONE_SURROGATE.search(value) else None
    items: Iterable[tuple[str, Any]] = ()
    if isinstance(value, dict):
        items = ((f"{where}.{key}" if where else key, item) for key, item in value.items())
    elif isinstance(value, list):
        items = ((f"{where}[{n}]", item) for n, item in enumerate(value))
    for inner, item in items:
        if _LONE_SURROGATE.search(inner):  # in a key
            return inner
        found = _surrogate_place(item, inner)
        if found is not None:
            return found
    return None


def refuse_lone_surrogates(value: Any, text: str, source: str, line: int, start: int = 0, end: int | None = None,
                           field: str = "") -> None:
    """TranscriptError naming the field (under `field`) if `value`, parsed from text[start:end], holds a lone
    surrogate (only JSON's \\uD800 escapes can make one: the text itself was decoded from UTF-8)."""
    if _SURROGATE_ESCAPE.search(text, start, len(text) if end is None else end) is None:
        return
    place = _surrogate_place(value, field)
    if place is not None:
        shown = f"field {place.encode('utf-8', 'backslashreplace').decode()!r}" if place else "the value"
        raise TranscriptError(source, line, f"{shown} holds a lone surrogate (a \\uD800-\\uDFFF escape without "
                                            "its pair), which is not a character")


def parse_jsonl_line(raw: bytes | str, source: str, number: int) -> Any:
    """One JSON Lines line as a value, None for a blank line; TranscriptError (file, line) if it is not JSON."""
    text = _decode_line(raw).strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(source, number, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise TranscriptError(source, number, NESTED_TOO_DEEP) from None
    refuse_lone_surrogates(value, text, source, number)
    return value


def read_transcript(path: str | Path) -> list[Message]:
    """The messages of an interchange JSONL file, read as an import reads them (read_interchange_chat). Raises
    TranscriptError (file, line, field) or OSError."""
    path = Path(path)
    with path.open("rb") as fh:
        return read_interchange_chat(fh, str(path))[0]


def _summaries_of(record: dict[str, Any], source: str, line: int) -> list[SummaryRecord]:
    raw = record.get("summaries")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise TranscriptError(source, line, f"field 'summaries' must be a list of records, got {type(raw).__name__}")
    try:
        return [SummaryRecord.model_validate(item) for item in raw]
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise TranscriptError(source, line, f"field 'summaries' has a bad record ({where}: {first['msg']})") from None


@dataclass(frozen=True)
class ChatHeader:
    """What an exported chat's first line says of the chat itself."""

    title: str | None = None
    settings: ChatSettings | None = None


def chat_header(record: Any, source: str, line: int) -> ChatHeader:
    """The `chat` field of a line (its title and settings); TranscriptError names a bad one. Settings that belong
    to the computer the file came from (LOCAL_CHAT_SETTINGS) are left out."""
    raw = record.get("chat") if isinstance(record, dict) else None
    if raw is None:
        return ChatHeader()
    if not isinstance(raw, dict):
        raise TranscriptError(source, line, f"field 'chat' must be an object, got {type(raw).__name__}")
    title = raw.get("title")
    if title is not None and not isinstance(title, str):
        raise TranscriptError(source, line, f"field 'chat.title' must be a string, got {type(title).__name__}")
    settings = raw.get("settings", {})
    if not isinstance(settings, dict):
        raise TranscriptError(source, line, f"field 'chat.settings' must be an object, got {type(settings).__name__}")
    try:
        valid = ChatSettings.model_validate({k: v for k, v in settings.items() if k not in LOCAL_CHAT_SETTINGS})
    except ValidationError as exc:
        raise TranscriptError(source, line, f"field 'chat.settings': {choice_problems(exc, ChatSettings)}") from None
    return ChatHeader(title=(title or "").strip() or None, settings=valid)


class InterchangeChat(NamedTuple):
    """What an interchange file holds of a chat."""

    messages: list[Message]
    records: list[SummaryRecord]
    archived_by: dict[str, str]  # message id -> id of the summary that archived it
    versions: dict[str, Versions]  # message id -> its versions (a reply regenerated, a message edited)
    branches: dict[str, Branches]  # message id -> the messages that followed its versions not shown


def _versions_of(record: dict[str, Any], message: Message, source: str, line: int, where: str = "") -> Versions | None:
    """A record's `versions` (every text the message had, in the order written) and `version_shown` (which of them is
    the message's content), or None; TranscriptError names a bad one (its field under `where`: 'branches[0][1].')."""
    texts = record.get("versions")
    if texts is None:
        return None
    if not isinstance(texts, list) or not texts or not all(isinstance(text, str) for text in texts):
        raise TranscriptError(source, line, f"field '{where}versions' must be a list of the message's texts (strings)")
    shown = record.get("version_shown")
    if not isinstance(shown, int) or isinstance(shown, bool) or not 0 <= shown < len(texts):
        raise TranscriptError(source, line, f"field '{where}version_shown' must be the place of a text in 'versions' "
                                            f"(0 to {len(texts) - 1}), got {shown!r}")
    if texts[shown] != message.content:
        raise TranscriptError(source, line, f"field '{where}versions': the version shown ({shown}) is not the "
                                            "message's 'content'")
    return Versions(tuple(texts), shown)


class _BranchId(NamedTuple):
    """A message id read in a branch, and where: each must be the only message of the file with it."""

    id: str
    line: int
    field: str


def _branches_of(record: dict[str, Any], message: Message, kept: Versions | None, source: str, line: int,
                 where: str, branch_ids: list[_BranchId]) -> Branches:
    """A record's `branches`: for each of its versions the records of the messages that followed it, null (or []) for
    none and always for the version shown; TranscriptError names a bad one, under `where`."""
    raw = record.get("branches")
    if raw is None:
        return {}
    field = f"{where}branches"
    if kept is None:
        raise TranscriptError(source, line, f"field '{field}' needs the message's 'versions' beside it (each of "
                                            "its entries is what followed the version in the same place)")
    if not isinstance(raw, list) or len(raw) != len(kept.texts):
        raise TranscriptError(source, line, f"field '{field}' must be a list with an entry for each of the "
                                            f"{len(kept.texts)} versions (the messages that followed it, or null)")
    found: Branches = {}
    for place, entries in enumerate(raw):
        if entries is None or entries == []:
            continue
        if not isinstance(entries, list):
            raise TranscriptError(source, line, f"field '{field}[{place}]' must be a list of message records or "
                                                f"null, got {type(entries).__name__}")
        if place == kept.shown:
            raise TranscriptError(source, line, f"field '{field}[{place}]' must be null: what followed the version "
                                                "shown is the lines after it")
        found[place] = _branch_messages(entries, message, source, line, f"{field}[{place}]", branch_ids)
    return found


def _branch_messages(entries: list[Any], message: Message, source: str, line: int, where: str,
                     branch_ids: list[_BranchId]) -> tuple[BranchMessage, ...]:
    """The messages of one branch of `message`, each with its versions and their branches."""
    read: list[tuple[Message, Versions | None, Branches]] = []
    for n, entry in enumerate(entries):
        place = f"{where}[{n}]"
        try:
            branched = message_from_record(entry, source=source, line=line)
        except TranscriptError as exc:
            raise TranscriptError(source, line, f"field '{place}': {exc.problem}") from None
        kept = _versions_of(entry, branched, source, line, f"{place}.")
        read.append((branched, kept, _branches_of(entry, branched, kept, source, line, f"{place}.", branch_ids)))
        branch_ids.append(_BranchId(branched.id, line, f"{place}.id"))
    # A result without a call id answers a call of the branch, or of the message it follows (a reply regenerated).
    paired = pair_tool_results([message, *(branched for branched, _, _ in read)])[1:]
    return tuple(BranchMessage(branched, kept, branches)
                 for branched, (_, kept, branches) in zip(paired, read, strict=True))


def read_interchange_chat(lines: Iterable[bytes | str], source: str) -> InterchangeChat:
    """The messages, summary records, archive marks, message versions and their branches of an interchange file."""
    messages: list[Message] = []
    records: list[SummaryRecord] = []
    archived_by: dict[str, str] = {}
    versions: dict[str, Versions] = {}
    branches: dict[str, Branches] = {}
    branch_ids: list[_BranchId] = []
    for number, raw in enumerate(lines, start=1):
        record = parse_jsonl_line(raw, source, number)
        if record is None:
            continue
        message = message_from_record(record, source=source, line=number)
        messages.append(message)
        if isinstance(record.get("archived_by"), str):
            archived_by[message.id] = record["archived_by"]
        if (kept := _versions_of(record, message, source, number)) is not None:
            versions[message.id] = kept
        try:
            if found := _branches_of(record, message, kept, source, number, "", branch_ids):
                branches[message.id] = found
        except RecursionError:  # branches of branches as deep as JSON itself can be read
            raise TranscriptError(source, number, NESTED_TOO_DEEP) from None
        records.extend(_summaries_of(record, source, number))
    seen = {m.id for m in messages}
    for branched in branch_ids:  # a repeated id would make switching to its branch fail, long after the import
        if branched.id in seen:
            raise TranscriptError(source, branched.line, f"field '{branched.field}' repeats {branched.id!r}, the id "
                                                         "of another message in the file")
        seen.add(branched.id)
    known = {r.id for r in records}
    unknown = next((rid for rid in archived_by.values() if rid not in known), None)
    if unknown is not None:
        line = 1 + next(i for i, m in enumerate(messages) if archived_by.get(m.id) == unknown)
        raise TranscriptError(source, line, f"field 'archived_by' names summary {unknown!r}, which the file lacks")
    records.sort(key=lambda r: r.created_at)
    return InterchangeChat(pair_tool_results(messages), records, archived_by, versions, branches)


def message_to_record(message: Message) -> dict[str, Any]:
    """A Message as an interchange record. Extra keys (id, tool_call_id, ...) are allowed by the format."""
    record: dict[str, Any] = {"role": message.role, "content": message.content, "name": None, "tool_args": None}
    if message.tool_calls:
        call = message.tool_calls[0]
        record.update(name=call.name, tool_args=call.arguments, tool_call_id=call.id)
    elif message.role == "tool":
        record.update(name=message.name, tool_call_id=message.tool_call_id)
    record["id"] = message.id
    record["created_at"] = message.created_at
    if message.pinned:
        record["pinned"] = True
    if message.incomplete:
        record["incomplete"] = True
    return record


def split_multi_calls(message: Message) -> list[Message]:
    """The interchange format has one call a line: an assistant message with several calls becomes several lines."""
    if len(message.tool_calls) <= 1:
        return [message]
    first = message.with_changes(tool_calls=message.tool_calls[:1])
    rest = [message.with_changes(id=f"{message.id}-{i}", content="", tool_calls=(call,))
            for i, call in enumerate(message.tool_calls[1:], start=1)]
    return [first, *rest]


# json.dumps(line, ensure_ascii=False), without building an encoder for every line.
_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False)


def jsonl_lines(messages: Sequence[Message], records: Sequence[SummaryRecord] = (),
                archived_by: Mapping[str, str] | None = None, chat: Mapping[str, Any] | None = None,
                versions: Mapping[str, Versions] | None = None,
                branches: Mapping[str, Branches] | None = None) -> Iterator[str]:
    """Messages as interchange lines (each ending in a newline), made one at a time; with their summary records,
    archive marks, `chat` (title and settings, on the first line), versions and their branches, the whole chat."""
    archived_by, versions, branches = archived_by or {}, versions or {}, branches or {}
    position = {m.id: i for i, m in enumerate(messages)}
    anchored: dict[int, list[SummaryRecord]] = defaultdict(list)
    for record in records:
        covered = [position[c.id] for c in record.covered if c.id in position]
        anchored[max(covered, default=len(messages) - 1)].append(record)
    for i, message in enumerate(messages):
        parts = split_multi_calls(message)
        for n, part in enumerate(parts):
            line = message_to_record(part)
            if chat and i == n == 0:
                line["chat"] = dict(chat)
            if message.id in archived_by:
                line["archived_by"] = archived_by[message.id]
            if n == 0 and message.id in versions:
                line.update(_versions_fields(versions[message.id], branches.get(message.id, {})))
            if n == len(parts) - 1 and anchored.get(i):
                line["summaries"] = [r.model_dump(mode="json") for r in anchored[i]]
            yield _LINE_ENCODER.encode(line) + "\n"


def _versions_fields(kept: Versions, branches: Branches) -> dict[str, Any]:
    """A record's `versions`, `version_shown` and, if any version not shown kept messages, `branches`."""
    fields: dict[str, Any] = {"versions": list(kept.texts), "version_shown": kept.shown}
    if branches:
        fields["branches"] = [list(_branch_records(branches[place])) if place in branches else None
                              for place in range(len(kept.texts))]
    return fields


def _branch_records(branch: Sequence[BranchMessage]) -> Iterator[dict[str, Any]]:
    """A branch's messages as records in the shape of lines, with their own versions and branches."""
    for branched in branch:
        parts = split_multi_calls(branched.message)
        for n, part in enumerate(parts):
            record = message_to_record(part)
            if n == 0 and branched.versions is not None:
                record.update(_versions_fields(branched.versions, branched.branches))
            yield record
