"""A chat's history, as /history, `precis history` and the window's History show it: every summary with its range
of messages, size before and after and how it was made (with `full`, the first and last message it covers and its
text), then the newest messages."""

from __future__ import annotations

from ..model.messages import Message
from ..model.records import SummaryRecord, fold_description, local_time

SNIPPET_CHARS = 70
RECENT_MESSAGES = 10


def history_lines(messages: list[Message], records: list[SummaryRecord], *, full: bool = False,
                  recent: int = RECENT_MESSAGES) -> list[str]:
    """Summaries oldest first (undone and folded ones marked), messages numbered from 1 as --up-to takes them."""
    lines = []
    position = {m.id: n for n, m in enumerate(messages, start=1)}
    by_id = {m.id: m for m in messages}
    by_record = {r.id: r for r in records}
    for record in sorted(records, key=lambda r: r.created_at):
        status = "" if record.status == "active" else f"  [{record.status}]"
        leaves = _leaves(record, by_record)
        lines.append(f"{record.depth}. {local_time(record.created_at)}  {_range(leaves, position)}  "
                     f"{record.result(len(leaves)).describe()}  {_how(record, by_record)}{status}")
        if full:
            covered = [by_id[i] for i in sorted((i for i in leaves if i in by_id), key=position.__getitem__)]
            if covered:
                lines.append(f"   first: {one_line(covered[0])}")
                lines.append(f"   last:  {one_line(covered[-1])}")
            lines += [f"   | {line}" for line in record.text.splitlines()]
    if not records:
        lines.append("no summaries")
    archived = {i for r in records if r.status == "active" for i in _leaves(r, by_record)}
    shown = [m for m in messages if m.id not in archived or m.pinned][-recent:] if recent else []
    if shown:
        lines.append("recent messages:")
        lines += [f"  {position[m.id]}. {m.role}: {one_line(m)}" for m in shown]
    return lines


def one_line(message: Message, width: int = SNIPPET_CHARS) -> str:
    text = " ".join(message.content.split()) or ", ".join(c.name for c in message.tool_calls) or "(empty)"
    return text if len(text) <= width else text[:width - 1] + "…"


def _leaves(record: SummaryRecord, by_record: dict[str, SummaryRecord]) -> list[str]:
    """The ids of the messages a record stands for: its own, and those of the summaries it folded."""
    ids = list(record.covered_ids)
    for child in record.merged_ids:
        if child in by_record:
            ids += _leaves(by_record[child], by_record)
    return ids


def _range(covered: list[str], position: dict[str, int]) -> str:
    places = sorted(position[i] for i in covered if i in position)
    if not places:
        return "no messages"
    return f"messages {places[0]}-{places[-1]}" if len(places) > 1 else f"message {places[0]}"


def _how(record: SummaryRecord, by_record: dict[str, SummaryRecord]) -> str:
    how = (fold_description([by_record[c].kind for c in record.merged_ids if c in by_record]) if record.merged_ids
           else record.mode) + (f" ({record.fallback})" if record.fallback_used else "")
    how += f", written by {record.writer}"
    cost = f", summarizer used {record.summarizer_tokens:,} tokens" if record.summarizer_tokens else ""
    asked = f", instructions: {record.instructions}" if record.instructions else ""
    return f"{how}, {record.trigger}, {record.tokens:,} tokens long{cost}{asked}"
