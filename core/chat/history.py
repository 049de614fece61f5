"""A chat's history, as /history, `precis history` and the window's History show it: every summary with its range
of messages, size before and after and how it was made (with `full`, the first and last message it covers and its
text), then the newest messages."""

from __future__ import annotations

from ..model.messages import Message
from ..model.records import SummaryRecord, covered_through_merges, fold_description, local_time, record_spans

SNIPPET_CHARS = 70
RECENT_MESSAGES = 10


def history_lines(messages: list[Message], records: list[SummaryRecord], *, full: bool = False,
                  recent: int = RECENT_MESSAGES) -> list[str]:
    """Summaries oldest first (undone and folded ones marked), messages numbered from 1 as --up-to takes them."""
    lines = []
    position = {m.id: n for n, m in enumerate(messages, start=1)}
    by_record = {r.id: r for r in records}
    spans = record_spans(records, position)
    for record in sorted(records, key=lambda r: r.created_at):
        status = "" if record.status == "active" else f"  [{record.status}]"
        count, first, last = spans[record.id]
        where = ("no messages" if first is None else f"message {first}" if first == last
                 else f"messages {first}-{last}")
        lines.append(f"{record.depth}. {local_time(record.created_at)}  {where}  "
                     f"{record.result(count).describe()}  {_how(record, by_record)}{status}")
        if full:
            if first is not None and last is not None:
                lines.append(f"   first: {one_line(messages[first - 1])}")
                lines.append(f"   last:  {one_line(messages[last - 1])}")
            lines += [f"   | {line}" for line in record.text.splitlines()]
    if not records:
        lines.append("no summaries")
    archived = {i for r in records if r.status == "active" for i in covered_through_merges(r, by_record)}
    shown = [m for m in messages if m.id not in archived or m.pinned][-recent:] if recent else []
    if shown:
        lines.append("recent messages:")
        lines += [f"  {position[m.id]}. {m.role}: {one_line(m)}" for m in shown]
    return lines


def message_ref(messages: list[Message], ref: str) -> str:
    """A message named by the user (--up-to, --reply, /pin): an id, else a number as the history counts them
    ('messages 2-22'), which a user can read without exporting the chat to find ids. KeyError names what is not
    there."""
    if any(m.id == ref for m in messages):
        return ref
    if not ref.isdigit():
        raise KeyError(f"no message {ref!r} in this conversation: name one by its number in the history, "
                       f"1 to {len(messages)}, or its id")
    if not 1 <= int(ref) <= len(messages):
        raise KeyError(f"no message {ref} in this conversation: its messages are numbered 1 to {len(messages)}")
    return str(messages[int(ref) - 1].id)


def one_line(message: Message, width: int = SNIPPET_CHARS) -> str:
    text = " ".join(message.content.split()) or ", ".join(c.name for c in message.tool_calls) or "(empty)"
    return text if len(text) <= width else text[:width - 1] + "…"


def _how(record: SummaryRecord, by_record: dict[str, SummaryRecord]) -> str:
    how = (fold_description([by_record[c].kind for c in record.merged_ids if c in by_record]) if record.merged_ids
           else record.mode) + (f" ({record.fallback})" if record.fallback_used else "")
    how += f", written by {record.writer}"
    cost = f", summarizer used {record.summarizer_tokens:,} tokens" if record.summarizer_tokens else ""
    asked = f", instructions: {record.instructions}" if record.instructions else ""
    return f"{how}, {record.trigger}, {record.tokens:,} tokens long{cost}{asked}"
