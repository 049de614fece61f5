"""Conversation digests: where a stretch is conversation rather than tool traffic, the rule summary keeps the
sentences that carry facts (people, places, dates, numbers, plans, preferences, decisions, open questions), whole,
ranked and fitted to the cap, each under its session's date and its speaker, in the order they were said.
Repeated messages collapse into one line with a count."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from ..model.messages import Message
from .text_rules import SENTENCE_END

# A stretch is conversation when at most this share of its messages are tool calls or results.
TOOL_SHARE = 0.2
# A digest takes at most this share of the tokens it replaces (the LoCoMo reference summaries: about 0.2).
DIGEST_SHARE = 0.2
MIN_WORDS = 4
SPEAKER = re.compile(r"^([A-Z][\w .'-]{0,30}):\s+")
SESSION_DATE = re.compile(r"\b(?:on|at)\s+(.{4,40})$|^.{0,40}?[-–]\s*(.{4,60})$")
MONTHS = ("january february march april may june july august september october november december "
          "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday "
          "sunday yesterday today tomorrow tonight weekend week month year ago last next").split()
CUES = {
    "plan": ("will", "going", "plan", "planning", "hope", "want", "next", "soon", "goal", "decided", "chose",
             "choose", "signed", "start", "started", "applied", "joined"),
    "preference": ("love", "loved", "like", "favorite", "favourite", "prefer", "enjoy", "passion", "hate", "fan"),
    "life": ("family", "kids", "son", "daughter", "husband", "wife", "friend", "friends", "mom", "dad", "went",
             "visited", "trip", "moved", "bought", "made", "painted", "read", "book", "class", "job", "work",
             "school", "game", "team", "pet", "dog", "cat", "adopted", "wedding", "birthday", "concert"),
}
FILLER = re.compile(r"^(?:hey|hi|hello|thanks|thank you|wow|yeah|yes|no|oh|sure|cool|awesome|great|nice|"
                    r"haha|lol|bye|see you|take care|glad|good to)\b", re.IGNORECASE)
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|\d[\d,.:/-]*")


def is_conversation(messages: list[Message]) -> bool:
    """True when the stretch is people talking rather than tool traffic."""
    spoken = [m for m in messages if m.role in ("user", "assistant") and m.content.strip() and not m.tool_calls]
    tools = sum(1 for m in messages if m.role == "tool" or m.tool_calls)
    return bool(spoken) and tools <= TOOL_SHARE * len(messages)


def session_label(content: str) -> str:
    """The date of a session marker ("Session 2 - 6:10 pm on 22 December, 2022" -> "22 December, 2022, 6:10
    pm"), or the marker itself when it is short."""
    text = " ".join(content.split())
    match = re.search(r"(\d{1,2}:\d{2}\s*[ap]m)\s+on\s+(.+)$", text, re.IGNORECASE)
    if match:
        return f"{match.group(2)}, {match.group(1)}"
    match = SESSION_DATE.search(text)
    if match:
        return (match.group(1) or match.group(2)).strip()
    return text[:60]


@dataclass
class Sentence:
    order: int
    date: str
    speaker: str
    text: str
    score: float
    count: int = 1


def score(text: str) -> float:
    """How many facts a sentence carries, roughly: names and places, numbers, dates, plans, preferences."""
    words = WORD.findall(text)
    if len(words) < MIN_WORDS:
        return 0.0
    lower = [w.lower() for w in words]
    names = sum(1 for w in words[1:] if w[0].isupper() and w.lower() not in ("i", "i'm", "i've", "i'll", "i'd"))
    value = min(names, 3) * 1.0
    value += 2.0 * sum(1 for w in words if w[0].isdigit())
    value += 1.5 * sum(1 for w in lower if w in MONTHS)
    for cues in CUES.values():
        value += 1.0 * min(sum(1 for w in lower if w in cues), 2)
    if text.rstrip().endswith("?"):
        value += 0.5  # an open question
    if FILLER.match(text):
        value -= 1.5
    return max(value, 0.0) / (1 + len(words) / 40)  # dense sentences first


def sentences_of(messages: list[Message]) -> list[Sentence]:
    """Every sentence with its session date and speaker; a repeated message becomes one line with its count."""
    repeats = Counter(" ".join(m.content.split()) for m in messages if m.role in ("user", "assistant"))
    seen: set[str] = set()
    date, out = "", []
    for m in messages:
        if m.role == "system":
            date = session_label(m.content)
            continue
        if m.role not in ("user", "assistant") or not m.content.strip():
            continue
        key = " ".join(m.content.split())
        if key in seen:
            continue
        seen.add(key)
        content, speaker = m.content.strip(), m.role
        named = SPEAKER.match(content)
        if named:
            speaker, content = named.group(1), content[named.end():]
        if repeats[key] > 1:
            out.append(Sentence(len(out), date, speaker, " ".join(content.split()), 100.0, repeats[key]))
            continue
        for part in SENTENCE_END.split(content):
            part = part.strip()
            if part:
                out.append(Sentence(len(out), date, speaker, part, score(part)))
    return out


def conversation_digest(messages: list[Message], max_tokens: int,
                        count_tokens: Callable[[str], int]) -> tuple[str, list[str]]:
    """(digest text within max_tokens, its lines as key points). Sentences are kept whole or not at all."""
    sentences = sentences_of(messages)
    spoken = sum(count_tokens(m.content) for m in messages if m.role in ("user", "assistant"))
    room = min(max_tokens, max(int(spoken * DIGEST_SHARE), 120))
    people = list(dict.fromkeys(s.speaker for s in sentences))
    dates = list(dict.fromkeys(s.date for s in sentences if s.date))
    header = f"Conversation digest of {len(messages)} messages ({', '.join(people)})"
    if dates:
        header += f", {dates[0]}" + (f" to {dates[-1]}" if len(dates) > 1 else "")
    used = count_tokens(header) + 1
    chosen: list[Sentence] = []
    for sentence in sorted((s for s in sentences if s.score > 0), key=lambda s: (-s.score, s.order)):
        cost = count_tokens(line_of(sentence)) + 1
        if used + cost + (count_tokens(sentence.date) + 4 if sentence.date else 0) > room:
            continue
        chosen.append(sentence)
        used += cost
    chosen.sort(key=lambda s: s.order)
    lines, current = [header], None
    for sentence in chosen:
        if sentence.date and sentence.date != current:
            current = sentence.date
            lines.append(f"[{current}]")
        lines.append(line_of(sentence))
    text = "\n".join(lines)
    while count_tokens(text) > max_tokens and len(lines) > 1:  # the date lines' estimate was short: drop the last
        lines.pop()
        text = "\n".join(lines)
    return text, [line_of(s).removeprefix("- ") for s in chosen]


def rank_points(points: list[str], room: int, count_tokens: Callable[[str], int]) -> list[str]:
    """The digest lines ("speaker: sentence") that carry the most facts within `room` tokens, in their order."""
    kept, used = set(), 0
    for n, point in sorted(enumerate(points), key=lambda p: -score(p[1].split(": ", 1)[-1])):
        cost = count_tokens(point) + 3
        if used + cost <= room:
            kept.add(n)
            used += cost
    return [p for n, p in enumerate(points) if n in kept]


def line_of(sentence: Sentence) -> str:
    repeat = f" (×{sentence.count})" if sentence.count > 1 else ""
    return f"- {sentence.speaker}: {sentence.text}{repeat}"
