"""What a reply was written from, kept with it as a compact record and rebuilt when asked ("What was sent").

Assembling a prompt is a function of the chat up to the reply, the summaries active then, the pins, the chat's
settings (system prompt, tools, policy, budget), the tokenizer's correction factor and what recall chose. A reply
keeps only what cannot be read again from the chat, in a few bytes (issue 26: under 1% of a chat's database):
- a checksum of the messages sent;
- the places in the chat of the originals recall chose, in the order chosen;
- the summaries active (a short hash of each id), the places of the pinned messages, the key of the settings (kept
  once per chat in the store's prompt_setup, whoever shares them) and the correction factor: each only where it
  differs from the reply before's record, and all of them again once a record would lean on more than RESTATE_AFTER
  records before it (so reading one never walks the whole chat).
Messages before a reply never move while the reply is in the chat (an edit takes the reply with it), so their places
name them. Rebuilding assembles the prompt again from these; a checksum that differs (the rules that shrink or cut
text changed since, another tokenizer) is said, never shown as what was sent.

As kept (`SentRecord.encode`): five characters of checksum, then the recalled places, then the fields that changed,
each after its mark: "~" the summaries (12 hex digits each), "^" the pinned places, "#" the settings' key, "!" the
factor. Numbers are written in DIGITS, each ending on a digit that also says how many places in a row it starts
(1 to 3), so no separators: a run of up to three places costs at most three characters in a chat of fewer than
24,336 messages (recall mostly chooses a match and the one or two messages after it). Records kept before
(old_record.py's form, "c=...;s=...") still read; the two never lean on each other.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from ..model.messages import Message
from ..model.records import SummaryRecord
from ..model.tokens import TokenCounter
from ..settings import SummarizationPolicy
from .engine import ContextEngine, Prompt
from .usage import Budget

MARKS = "~^#!"  # before the summaries, the pinned places, the settings' key, the factor
# Printable ASCII but the marks, "=" (which the old form has) and the two characters JSON escapes (a branch of
# versions keeps its messages as JSON).
DIGITS = "".join(c for c in map(chr, range(0x21, 0x7F)) if c not in MARKS + '="\\')
_DIGIT = {c: n for n, c in enumerate(DIGITS)}
CHECK_WIDTH = 5  # len(DIGITS) ** 5 > 2 ** 32
LONGEST_RUN = 3  # one number names up to this many places in a row
ENDINGS = 16  # a number's last digit is one of DIGITS[:48]: 16 values for each length of the run it starts
LEADING = len(DIGITS) - LONGEST_RUN * ENDINGS  # the digits before it are DIGITS[48:]: 39 values
SUMMARY_REF = 12  # hex digits of a summary's reference
# A record that would lean on more records before it than this states everything again: none is read further back.
RESTATE_AFTER = 64


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def summary_ref(summary_id: str) -> str:
    """How a record names a summary: a hash of its id (which may hold any character), short, in hex."""
    return hashlib.sha256(summary_id.encode("utf-8")).hexdigest()[:SUMMARY_REF]


def _json(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class PromptSettings:
    """The chat's settings a prompt was assembled under: the same for most of a chat's replies."""

    system_prompt: str
    tool_text: str
    policy: dict
    budget: dict
    counter: str  # the tokenizer that counted (TokenCounter.name)

    def as_json(self) -> str:
        return _json(asdict(self))

    @property
    def key(self) -> str:
        return _key(self.as_json())

    @classmethod
    def from_json(cls, text: str) -> PromptSettings:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class SentRecord:
    """What one reply was written from, beside the chat itself (Message.sent holds it as `encode` writes it)."""

    check: int  # fingerprint() of the messages sent
    recalled: tuple[int, ...]  # the places in the chat of the originals recall chose, in the order chosen
    chain: tuple[str, ...]  # summary_ref() of each summary active, in chain order
    pinned: tuple[int, ...]  # the places of the messages pinned, in chat order
    settings: str  # PromptSettings.key
    factor: float

    def encode(self, before: SentRecord | None) -> str:
        """As kept (see the module's doc): the summaries, pins, settings and factor only where they differ from
        the reply before's record (`before`; None: all of them)."""
        own = (self.chain, self.pinned, self.settings, self.factor)
        written = ("".join(self.chain), _numbers(self.pinned), self.settings, repr(self.factor))
        leaned_on = (before.chain, before.pinned, before.settings, before.factor) if before is not None else None
        return _check_digits(self.check) + _numbers(self.recalled) + "".join(
            mark + text for n, (mark, text) in enumerate(zip(MARKS, written, strict=True))
            if leaned_on is None or leaned_on[n] != own[n])

    @classmethod
    def decode(cls, kept: str, earlier: Iterable[str]) -> SentRecord:
        """The record a reply keeps (`kept`), with what it leaves to the records of the replies before it
        (`earlier`, newest first: read only as far back as needed). ValueError if it is not one."""
        return cls.read(kept, earlier)[0]

    @classmethod
    def read(cls, kept: str, earlier: Iterable[str]) -> tuple[SentRecord, int]:
        """decode(), and how many records before it were read."""
        check, recalled, fields = _fields(kept)
        read = 0
        for older in earlier:
            if len(fields) == len(MARKS):
                break
            read += 1
            for mark, text in _fields(older)[2].items():
                fields.setdefault(mark, text)
        if len(fields) < len(MARKS):
            raise ValueError("the record names no setup, nor does any reply before it")
        chain = fields["~"]
        if len(chain) % SUMMARY_REF:
            raise ValueError(f"its summaries ({chain!r}) are not {SUMMARY_REF} hex digits each")
        return cls(check, _places(recalled), tuple(chain[n:n + SUMMARY_REF] for n in range(0, len(chain), SUMMARY_REF)),
                   _places(fields["^"]), fields["#"], float(fields["!"])), read


def _fields(kept: str) -> tuple[int, str, dict[str, str]]:
    """A record's checksum, its recalled places as written, and its other fields by mark."""
    if len(kept) < CHECK_WIDTH or "=" in kept:
        raise ValueError(f"{kept[:20]!r} is not a record of this form")
    check = 0
    for char in kept[:CHECK_WIDTH]:
        check = check * len(DIGITS) + _digit(char)
    pieces = re.split(f"([{re.escape(MARKS)}])", kept[CHECK_WIDTH:])
    return check, pieces[0], dict(zip(pieces[1::2], pieces[2::2], strict=True))


def _digit(char: str) -> int:
    digit = _DIGIT.get(char)
    if digit is None:
        raise ValueError(f"{char!r} is not a digit of a record")
    return digit


def _check_digits(check: int) -> str:
    digits = ""
    for _ in range(CHECK_WIDTH):
        check, digit = divmod(check, len(DIGITS))
        digits = DIGITS[digit] + digits
    return digits


def _numbers(places: Sequence[int]) -> str:
    """Places as numbers, each naming a run of up to LONGEST_RUN places in a row: 40,41,42,7 is two numbers."""
    written, n = [], 0
    while n < len(places):
        run = 1
        while run < LONGEST_RUN and n + run < len(places) and places[n + run] == places[n] + run:
            run += 1
        leading, last = divmod(places[n], ENDINGS)
        digits = DIGITS[(run - 1) * ENDINGS + last]
        while leading:
            leading, digit = divmod(leading, LEADING)
            digits = DIGITS[LONGEST_RUN * ENDINGS + digit] + digits
        written.append(digits)
        n += run
    return "".join(written)


def _places(numbers: str) -> tuple[int, ...]:
    places: list[int] = []
    leading, pending = 0, False
    for char in numbers:
        digit = _digit(char)
        if digit >= LONGEST_RUN * ENDINGS:
            leading, pending = leading * LEADING + digit - LONGEST_RUN * ENDINGS, True
            continue
        run, last = divmod(digit, ENDINGS)
        first = leading * ENDINGS + last
        places.extend(range(first, first + run + 1))
        leading, pending = 0, False
    if pending:
        raise ValueError(f"its places ({numbers!r}) end in the middle of a number")
    return tuple(places)


def fingerprint(messages: list[Message]) -> int:
    """A checksum of what a provider is sent for these messages (roles, texts, names, calls)."""
    payload = json.dumps([[m.role, m.content, m.name, m.tool_call_id, [[c.id, c.name, c.arguments]
                                                                       for c in m.tool_calls]] for m in messages],
                         ensure_ascii=False, sort_keys=True)
    return zlib.crc32(payload.encode("utf-8"))


def sent_record(engine: ContextEngine, prompt: Prompt) -> tuple[SentRecord, PromptSettings]:
    """The record of `prompt`, just assembled by `engine` for the reply to come, and the settings it names."""
    setup = engine.setup
    settings = PromptSettings(setup.system_prompt, setup.tool_text, setup.policy.model_dump(mode="json"),
                              asdict(setup.budget), setup.counter.name)
    position = engine.archive.position
    pinned = tuple(sorted(map(position.__getitem__, engine.archive.pinned_ids)))  # not a scan of the whole chat
    recalled = tuple(position[i] for i in engine.recaller.chosen) if any(
        i.kind == "recalled" for i in prompt.items) else ()
    chain = tuple(summary_ref(r.id) for r in engine.chain())
    return SentRecord(fingerprint(prompt.messages), recalled, chain, pinned, settings.key, engine.counter.factor), \
        settings


class NotRebuilt(Exception):
    """A reply's prompt cannot be shown as it was sent; the message says why."""


def rebuild(record: SentRecord, settings: PromptSettings, before: list[Message], records: list[SummaryRecord],
            counter: TokenCounter) -> tuple[ContextEngine, Prompt]:
    """The prompt the reply was written from, assembled again from the chat's messages before the reply (`before`),
    every summary record of the chat and a counter with the same tokenizer; with the engine that assembled it (for
    prompt_parts). NotRebuilt if it is not what was sent."""
    if counter.name != settings.counter:
        raise NotRebuilt(f"it was counted with {settings.counter}, and the chat now counts with {counter.name}")
    at_the_time = copy.copy(counter)  # the same tokenizer and counts, the correction of then
    at_the_time.factor = record.factor
    pinned = {before[p].id for p in record.pinned if p < len(before)}
    messages = [m if m.pinned == (m.id in pinned) else m.with_changes(pinned=m.id in pinned) for m in before]
    by_ref = {summary_ref(r.id): r.id for r in records}
    chain = {by_ref[ref] for ref in record.chain if ref in by_ref}
    if len(chain) < len(record.chain):
        raise NotRebuilt("a summary it was sent with is no longer in the chat")
    statuses = [r.model_copy(update={"status": "active" if r.id in chain else "undone"}) for r in records]
    engine = ContextEngine.restore(messages, statuses, Budget(**settings.budget),
                                   SummarizationPolicy.model_validate(settings.policy), at_the_time,
                                   system_prompt=settings.system_prompt, recall_search=lambda query, limit: [])
    engine.archive.renumber(new_texts=True)  # a summary's depth is its place in the chain of then (merges renumber)
    engine.setup.tool_text = settings.tool_text
    engine.setup.tool_tokens = at_the_time.count_text(settings.tool_text) if settings.tool_text else 0
    engine.recaller.replay = [messages[p].id for p in record.recalled if p < len(messages)]
    prompt = engine.assemble()
    if fingerprint(prompt.messages) != record.check:
        raise NotRebuilt("assembled again, it differs from what was sent (Precis's rules for shrinking or cutting "
                         "text have changed since)")
    return engine, prompt
