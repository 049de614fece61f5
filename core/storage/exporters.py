"""Exporting a chat: interchange JSONL (re-importable as the same messages), OpenAI chat JSON, and Markdown.

Each format is made piece by piece (a message or a line at a time) and written as it is made, so exporting a long
chat never holds its whole text, nor a second copy of it, in memory.

An export holds no secret: what summaries' redaction finds (API keys, tokens, passwords, private keys:
core.summary.redact) is replaced by `[REDACTED:<kind>]`, in the messages (every version of one, and the messages of
its branches), tool calls, summaries, title and settings; the store keeps the messages as written."""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import itertools
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model.counted import counted
from ..model.messages import Message
from ..model.records import CoveredMessage, SummaryRecord, local_time, record_spans
from ..settings import portable_chat_settings
from ..summary.redact import redact_obj, secrets_in
from .interchange import jsonl_lines
from .markdown_text import markdown_text
from .version_table import Branches, BranchMessage, Versions

if TYPE_CHECKING:
    from .store import Store

EXPORT_FORMATS = ("jsonl", "openai", "md")
# Each format's usual file name ending, and its name in a file dialog.
EXPORT_SUFFIXES = {"jsonl": ".jsonl", "openai": ".json", "md": ".md"}
EXPORT_TITLES = {"jsonl": "Precis JSONL, re-importable, with the summaries", "openai": "OpenAI chat JSON",
                 "md": "Markdown, with the summaries"}


@dataclasses.dataclass(frozen=True)
class ChatExport:
    """A stored chat ready to write: its pieces of text, made as they are written, and how many secrets in it were
    replaced by `[REDACTED:<kind>]`."""

    pieces: Iterator[str]
    redacted: int


@dataclasses.dataclass(frozen=True)
class _Redacted:
    title: str
    messages: list[Message]
    records: list[SummaryRecord]
    settings: dict[str, Any]
    versions: dict[str, Versions]
    branches: dict[str, Branches]
    count: int


def export_chat(store: Store, chat_id: str, format_: str) -> ChatExport:
    """The stored chat in one of EXPORT_FORMATS without its secrets; JSONL and Markdown carry its summary chain too.
    Everything is read from the store before this returns."""
    if format_ not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {format_!r} (one of {', '.join(EXPORT_FORMATS)})")
    found = store.get_chat(chat_id)
    chat = without_secrets(found.title, store.load_messages(found.id), store.load_records(found.id),
                           portable_chat_settings(found.settings), store.versions(found.id), store.branches(found.id))
    if format_ == "jsonl":
        pieces = export_jsonl(chat.messages, chat.records, store.archived_by(found.id),
                              {"title": chat.title, "settings": chat.settings}, chat.versions, chat.branches)
    elif format_ == "openai":  # the format has no place for versions: the ones shown
        pieces = export_openai(chat.messages, chat.settings.get("system_prompt", ""))
    else:
        pieces = export_markdown(chat.title, chat.messages, chat.records, chat.versions, chat.branches)
    return ChatExport(pieces, chat.count)


def redacted_words(count: int) -> str:
    """How many secrets an export left out, in words: '2 secrets redacted (written [REDACTED:<kind>])'."""
    return f"{counted(count, 'secret')} redacted (written [REDACTED:<kind>])"


def without_secrets(title: str, messages: Sequence[Message], records: Sequence[SummaryRecord],
                    settings: dict[str, Any], versions: Mapping[str, Versions] | None = None,
                    branches: Mapping[str, Branches] | None = None) -> _Redacted:
    """The chat with its secrets redacted as summaries' are, in every version of a message and every message of its
    branches too; a value found once (`API key: sk-...`, in a version since edited away) is hidden wherever else it
    appears (pasted bare later). A summary's fingerprint of a message it covers follows the message's redacted text,
    so an import of the export finds each covered message as the summary knew it."""
    versions, branches = versions or {}, branches or {}
    found = [title, settings, [m.content for m in messages], [c.arguments for m in messages for c in m.tool_calls],
             [[r.text, r.key_points, r.instructions, r.facets.model_dump()] for r in records],
             [list(kept.texts) for kept in versions.values()], list(_branch_values(branches.values()))]
    known = secrets_in(found)[1]
    count = 0

    def hidden(value: Any) -> Any:
        nonlocal count
        cleaned, replaced = redact_obj(value, known)
        count += replaced
        return cleaned

    changed: dict[str, str] = {}

    def hidden_message(message: Message) -> Message:
        before = count
        content = hidden(message.content)
        calls = tuple(dataclasses.replace(call, arguments=hidden(call.arguments)) for call in message.tool_calls)
        if count == before:
            return message
        message = message.with_changes(content=content, tool_calls=calls)
        changed[message.id] = message.sha256()
        return message

    def hidden_versions(kept: Versions) -> Versions:
        return Versions(tuple(hidden(list(kept.texts))), kept.shown)

    def hidden_branches(kept: Branches) -> Branches:
        return {place: tuple(BranchMessage(hidden_message(entry.message),
                                           None if entry.versions is None else hidden_versions(entry.versions),
                                           hidden_branches(entry.branches)) for entry in branch)
                for place, branch in kept.items()}

    kept = [hidden_message(message) for message in messages]
    kept_branches = {message_id: hidden_branches(branched) for message_id, branched in branches.items()}
    records = [r.model_copy(update={
        "text": hidden(r.text), "key_points": hidden(r.key_points), "instructions": hidden(r.instructions),
        "facets": hidden(r.facets),
        "covered": [CoveredMessage(c.id, changed[c.id]) if c.id in changed else c for c in r.covered]})
        for r in records]
    kept_versions = {message_id: hidden_versions(texts) for message_id, texts in versions.items()}
    return _Redacted(hidden(title), kept, records, hidden(settings), kept_versions, kept_branches, count)


def _branch_values(kept: Iterable[Branches]) -> Iterator[Any]:
    """Every text and tool call's arguments in branches, branches of their messages' versions within."""
    for branches in kept:
        for branch in branches.values():
            for entry in branch:
                yield entry.message.content
                yield [call.arguments for call in entry.message.tool_calls]
                if entry.versions is not None:
                    yield list(entry.versions.texts)
                yield from _branch_values([entry.branches])


def write_export(pieces: Iterable[str | bytes], path: str | os.PathLike) -> None:
    """Write the pieces of an export (text, as UTF-8, or bytes: a picture) to `path` whole or not at all: into a
    temporary file beside it, then renamed over it, so a failure (a read-only folder, a full disk) leaves no
    half-written file. Raises OSError naming the path.

    A new file is readable by its owner alone (0600): it holds the chat's whole text, and a password written in a way
    redaction cannot tell from prose stays in it. A file written over keeps its mode (the user chose it)."""
    target = Path(path)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError:
        mode = None  # a new file (or one we cannot look at: the write below says why)
    _remove_abandoned_parts(target)
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".part",
                                             dir=target.parent)
    except OSError as exc:
        raise OSError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(handle, "wb") as file:
            file.writelines(piece.encode() if isinstance(piece, str) else piece for piece in pieces)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException as exc:  # a failure while the pieces are made, too, leaves no partial file behind
        Path(temporary).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise OSError(f"cannot write {target}: {exc.strerror or exc}") from exc
        raise


def _remove_abandoned_parts(target: Path) -> None:
    """Remove the temporary files of earlier exports to `target` whose process is gone (killed mid-write: nothing
    else would ever remove them). Each is named after the process writing it, and another export still writing its
    own is left alone; one without a process id is an earlier version's."""
    prefix = f".{target.name}."
    for part in target.parent.glob(f"{glob.escape(prefix)}*.part"):
        writer = part.name[len(prefix):].split(".")[0]
        if writer.isdigit() and _running(int(writer)):
            continue
        with contextlib.suppress(OSError):  # another export removed it first, or the folder is read-only
            part.unlink()


def _running(pid: int) -> bool:
    if os.name != "posix":  # Windows' os.kill ends the process whatever the signal: assume it still writes
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


def export_jsonl(messages: Sequence[Message], records: Sequence[SummaryRecord] = (),
                 archived_by: Mapping[str, str] | None = None, chat: Mapping[str, Any] | None = None,
                 versions: Mapping[str, Versions] | None = None,
                 branches: Mapping[str, Branches] | None = None) -> Iterator[str]:
    """The whole chat: every original message, archived ones included, with ids, the summary records, which
    summary archived each message, the chat's title and settings, and every version of a message regenerated or
    edited (which one shown) with the messages that followed each (its branch), so an import gives back the same
    chat."""
    return jsonl_lines(messages, records, archived_by, chat, versions, branches)


def export_openai(messages: Sequence[Message], system_prompt: str = "") -> Iterator[str]:
    """{"messages": [...]} laid out as json.dumps(..., indent=1) lays it out, made one message at a time."""
    items: Iterable[dict] = (_openai_message(m) for m in messages)
    if system_prompt and not (messages and messages[0].role == "system"):
        items = itertools.chain([{"role": "system", "content": system_prompt}], items)
    yield '{\n "messages": ['
    n = -1
    for n, item in enumerate(items):
        # Newlines in the text are escaped in JSON: the only line breaks are the layout's, indented one level more.
        yield ("," if n else "") + "\n  " + json.dumps(item, ensure_ascii=False, indent=1).replace("\n", "\n  ")
    yield "]\n}\n" if n < 0 else "\n ]\n}\n"


def _openai_message(m: Message) -> dict:
    item: dict = {"role": m.role, "content": m.content}
    if m.tool_calls:
        item["tool_calls"] = [{"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                              for c in m.tool_calls]
    if m.role == "tool":
        item["tool_call_id"] = m.tool_call_id
        if m.name:
            item["name"] = m.name
    return item


def _fence(text: str, lang: str = "") -> str:
    """A fenced block longer than any backtick run inside, so content can never close it early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _summary_md(record: SummaryRecord, covered: int) -> str:
    state = "" if record.status == "active" else f", {record.status}"
    head = (f"> **Summary** (depth {record.depth}, {counted(covered, 'message')}, {record.kind}, "
            f"{record.tokens_before} → {record.tokens_after} tokens, {local_time(record.created_at)}{state})")
    body = "\n".join("> " + line if line else ">" for line in record.text.splitlines())
    return f"{head}\n>\n{body}" if body else head


def _message_md(m: Message, kept: Versions | None, branched: Branches | None = None) -> str:
    title = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool result"}[m.role]
    if m.role == "tool" and m.name:
        title += f" · {m.name}"
    flags = [flag for flag, on in (("pinned", m.pinned), ("incomplete", m.incomplete)) if on]
    if kept is not None and len(kept.texts) > 1:
        flags.append(f"version {kept.shown + 1} of {len(kept.texts)}")
    parts = [f"### {title}" + (f" ({', '.join(flags)})" if flags else "")]
    if m.role == "tool":
        parts.append(_fence(m.content))
    elif m.content:
        parts.append(markdown_text(m.content))
    for call in m.tool_calls:
        parts.append(f"**Tool call** `{call.name}`\n\n" + _fence(json.dumps(call.arguments, ensure_ascii=False,
                                                                             indent=1), "json"))
    if kept is not None and len(kept.texts) > 1:
        parts.extend(_other_version_md(position, kept, (branched or {}).get(position, ()))
                     for position in range(len(kept.texts)) if position != kept.shown)
    return "\n\n".join(parts)


def _other_version_md(position: int, kept: Versions, branch: tuple[BranchMessage, ...]) -> str:
    """A version not shown, folded (a reader opens it), with what followed it then: its branch, whose messages have
    their own versions. Written out, not merely named: a person reading Markdown does not read the JSONL export."""
    followed = f", and {counted(len(branch), 'message')} that followed it" if branch else ""
    body = [markdown_text(kept.texts[position]) or "(empty)",
            *(_message_md(entry.message, entry.versions, entry.branches) for entry in branch)]
    return (f"<details>\n<summary>Version {position + 1} of {len(kept.texts)}{followed}</summary>\n\n"
            + "\n\n".join(body) + "\n\n</details>")


def export_markdown(title: str, messages: Sequence[Message], records: Sequence[SummaryRecord],
                    versions: Mapping[str, Versions] | None = None,
                    branches: Mapping[str, Branches] | None = None) -> Iterator[str]:
    """The whole chat for a person to read; each summary appears, marked as one, after the last message it covers;
    a message with versions shows the one shown, saying which of how many ("version 2 of 3"), then each other version
    folded, with the messages that followed it (its branch)."""
    versions, branches = versions or {}, branches or {}
    after: dict[str, list[tuple[SummaryRecord, int]]] = {}
    position = {m.id: i for i, m in enumerate(messages)}
    spans = record_spans(records, position)  # a fold covers no message itself: its summaries' ones
    for record in records:
        if record.status == "undone":
            continue
        count, _first, last = spans[record.id]
        anchor = messages[last].id if last is not None else (messages[-1].id if messages else "")
        after.setdefault(anchor, []).append((record, count))
    yield f"# {title}"
    for m in messages:
        yield "\n\n" + _message_md(m, versions.get(m.id), branches.get(m.id))
        for record, count in after.get(m.id, []):
            yield "\n\n" + _summary_md(record, count)
    if not messages:
        for record, count in after.get("", []):
            yield "\n\n" + _summary_md(record, count)
    yield "\n"
