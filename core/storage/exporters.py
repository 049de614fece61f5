"""Exporting a chat: interchange JSONL (re-importable as the same messages), OpenAI chat JSON, and Markdown."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..model.messages import Message
from ..model.records import SummaryRecord
from .interchange import dumps_jsonl

if TYPE_CHECKING:
    from .store import Store

EXPORT_FORMATS = ("jsonl", "openai", "md")
# Each format's usual file name ending, and its name in a file dialog.
EXPORT_SUFFIXES = {"jsonl": ".jsonl", "openai": ".json", "md": ".md"}
EXPORT_TITLES = {"jsonl": "Precis JSONL, re-importable, with the summaries", "openai": "OpenAI chat JSON",
                 "md": "Markdown, with the summaries"}


def export_chat(store: Store, chat_id: str, format_: str) -> str:
    """The stored chat in one of EXPORT_FORMATS; JSONL and Markdown carry its summary chain too."""
    found = store.get_chat(chat_id)
    messages = store.load_messages(found.id)
    if format_ == "jsonl":
        return export_jsonl(messages, store.load_records(found.id), store.archived_by(found.id))
    if format_ == "openai":
        return export_openai(messages, found.settings.system_prompt)
    if format_ == "md":
        return export_markdown(found.title, messages, store.load_records(found.id))
    raise ValueError(f"unknown export format {format_!r} (one of {', '.join(EXPORT_FORMATS)})")


def write_export(text: str, path: str | os.PathLike) -> None:
    """Write `text` to `path` whole or not at all: into a temporary file beside it, then renamed over it, so a
    failure (a read-only folder, a full disk) leaves no half-written file. Raises OSError naming the path."""
    target = Path(path)
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    except OSError as exc:
        raise OSError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, target)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise OSError(f"cannot write {target}: {exc.strerror or exc}") from exc


def export_jsonl(messages: Sequence[Message], records: Sequence[SummaryRecord] = (),
                 archived_by: Mapping[str, str] | None = None) -> str:
    """The whole chat: every original message, archived ones included, with ids, the summary records and which
    summary archived each message, so an import gives back the same chat."""
    return dumps_jsonl(messages, records, archived_by)


def export_openai(messages: Sequence[Message], system_prompt: str = "") -> str:
    out: list[dict] = []
    if system_prompt and not (messages and messages[0].role == "system"):
        out.append({"role": "system", "content": system_prompt})
    for m in messages:
        item: dict = {"role": m.role, "content": m.content}
        if m.tool_calls:
            item["tool_calls"] = [{"id": c.id, "type": "function",
                                   "function": {"name": c.name,
                                                "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                                  for c in m.tool_calls]
        if m.role == "tool":
            item["tool_call_id"] = m.tool_call_id
            if m.name:
                item["name"] = m.name
        out.append(item)
    return json.dumps({"messages": out}, ensure_ascii=False, indent=1) + "\n"


def _fence(text: str, lang: str = "") -> str:
    """A fenced block longer than any backtick run inside, so content can never close it early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _summary_md(record: SummaryRecord) -> str:
    state = "" if record.status == "active" else f", {record.status}"
    head = (f"> **Summary** (depth {record.depth}, {len(record.covered)} messages, {record.mode}, "
            f"{record.tokens_before} → {record.tokens_after} tokens, {_when(record.created_at)}{state})")
    body = "\n".join("> " + line if line else ">" for line in record.text.splitlines())
    return f"{head}\n>\n{body}" if body else head


def _message_md(m: Message) -> str:
    title = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool result"}[m.role]
    if m.role == "tool" and m.name:
        title += f" · {m.name}"
    flags = [flag for flag, on in (("pinned", m.pinned), ("incomplete", m.incomplete)) if on]
    parts = [f"### {title}" + (f" ({', '.join(flags)})" if flags else "")]
    if m.role == "tool":
        parts.append(_fence(m.content))
    elif m.content:
        parts.append(m.content)
    for call in m.tool_calls:
        parts.append(f"**Tool call** `{call.name}`\n\n" + _fence(json.dumps(call.arguments, ensure_ascii=False,
                                                                             indent=1), "json"))
    return "\n\n".join(parts)


def export_markdown(title: str, messages: Sequence[Message], records: Sequence[SummaryRecord]) -> str:
    """The whole chat for a person to read; each summary appears, marked as one, after the last message it covers."""
    after: dict[str, list[SummaryRecord]] = {}
    position = {m.id: i for i, m in enumerate(messages)}
    for record in records:
        if record.status == "undone":
            continue
        covered = [position[c.id] for c in record.covered if c.id in position]
        anchor = messages[max(covered)].id if covered else (messages[-1].id if messages else "")
        after.setdefault(anchor, []).append(record)
    blocks = [f"# {title}"]
    for m in messages:
        blocks.append(_message_md(m))
        blocks.extend(_summary_md(r) for r in after.get(m.id, []))
    if not messages:
        blocks.extend(_summary_md(r) for r in after.get("", []))
    return "\n\n".join(blocks) + "\n"
