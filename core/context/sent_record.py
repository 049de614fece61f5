"""What a reply was written from, kept with it as a compact record and rebuilt when asked ("What was sent").

Assembling a prompt is a function of the chat up to the reply, the summaries active then, the pins, the chat's
settings (system prompt, tools, policy, budget), the tokenizer's correction factor and what recall chose. A reply
keeps only what cannot be read again from the chat, in a few bytes (issue 26: under 1% of a chat's database):
- its setup's key: the chain and pins of then, and the key of the settings (both kept once per chat, whoever
  shares them), written only when it differs from the reply before's;
- the correction factor, likewise only when it changed;
- the places in the chat of the originals recall chose, in the order chosen (runs as "first+more", base 36);
- a checksum of the messages sent.
Messages before a reply never move while the reply is in the chat (an edit takes the reply with it), so their places
name them. Rebuilding assembles the prompt again from these; a checksum that differs (the rules that shrink or cut
text changed since, another tokenizer) is said, never shown as what was sent.
"""

from __future__ import annotations

import copy
import hashlib
import json
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from ..model.messages import Message
from ..model.records import SummaryRecord
from ..model.tokens import TokenCounter
from ..settings import SummarizationPolicy
from .engine import ContextEngine, Prompt
from .usage import Budget


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


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
class PromptSetup:
    """The summaries active and the messages pinned when a prompt was assembled, and its settings' key."""

    chain: tuple[str, ...]  # the summary records active, in chain order
    pinned: tuple[str, ...]
    settings: str  # PromptSettings.key

    def as_json(self) -> str:
        return _json({"chain": list(self.chain), "pinned": list(self.pinned), "settings": self.settings})

    @property
    def key(self) -> str:
        return _key(self.as_json())

    @classmethod
    def from_json(cls, text: str) -> PromptSetup:
        data = json.loads(text)
        return cls(tuple(data["chain"]), tuple(data["pinned"]), data["settings"])


@dataclass(frozen=True)
class SentRecord:
    """What one reply was written from, beside the chat itself (Message.sent holds it as `encode` writes it)."""

    setup: str  # PromptSetup.key
    factor: float
    recalled: tuple[int, ...]  # the places in the chat of the originals recall chose, in the order chosen
    check: int  # fingerprint() of the messages sent

    def encode(self, before: SentRecord | None) -> str:
        """As kept: "c=<check>;s=<setup>;f=<factor>;r=<places>", the setup and factor only where they differ from
        the reply before's record (`before`)."""
        fields = [f"c={self.check:x}"]
        if before is None or before.setup != self.setup:
            fields.append(f"s={self.setup}")
        if before is None or before.factor != self.factor:
            fields.append(f"f={self.factor!r}")
        if self.recalled:
            fields.append("r=" + ",".join(_runs(self.recalled)))
        return ";".join(fields)

    @classmethod
    def decode(cls, kept: str, earlier: Iterable[str]) -> SentRecord:
        """The record a reply keeps (`kept`), with what it leaves to the records of the replies before it
        (`earlier`, newest first: read only as far back as needed)."""
        fields = dict(field.split("=", 1) for field in kept.split(";"))
        for older in earlier:
            if "s" in fields and "f" in fields:
                break
            for name, value in (field.split("=", 1) for field in older.split(";")):
                if name in ("s", "f"):
                    fields.setdefault(name, value)
        if "s" not in fields or "f" not in fields:
            raise ValueError("the record names no setup or factor, nor does any reply before it")
        return cls(fields["s"], float(fields["f"]), _places(fields.get("r", "")), int(fields["c"], 16))


def _runs(places: Sequence[int]) -> list[str]:
    """Places as runs of consecutive ones, in base 36: 40,41,42,7 → "14+2","7"."""
    runs: list[list[int]] = []
    for place in places:
        if runs and place == runs[-1][0] + runs[-1][1] + 1:
            runs[-1][1] += 1
        else:
            runs.append([place, 0])
    return [f"{_base36(first)}+{more}" if more else _base36(first) for first, more in runs]


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[digit] + digits
        if not number:
            return digits


def _places(runs: str) -> tuple[int, ...]:
    out: list[int] = []
    for run in filter(None, runs.split(",")):
        first, _, more = run.partition("+")
        out.extend(range(int(first, 36), int(first, 36) + int(more or 0) + 1))
    return tuple(out)


def fingerprint(messages: list[Message]) -> int:
    """A checksum of what a provider is sent for these messages (roles, texts, names, calls)."""
    payload = json.dumps([[m.role, m.content, m.name, m.tool_call_id, [[c.id, c.name, c.arguments]
                                                                       for c in m.tool_calls]] for m in messages],
                         ensure_ascii=False, sort_keys=True)
    return zlib.crc32(payload.encode("utf-8"))


def sent_record(engine: ContextEngine, prompt: Prompt) -> tuple[SentRecord, PromptSetup, PromptSettings]:
    """The record of `prompt`, just assembled by `engine` for the reply to come, and the setup and settings it
    names."""
    setup = engine.setup
    settings = PromptSettings(setup.system_prompt, setup.tool_text, setup.policy.model_dump(mode="json"),
                              asdict(setup.budget), setup.counter.name)
    position = engine.archive.position
    pinned = tuple(sorted(engine.archive.pinned_ids, key=position.__getitem__))  # not a scan of the whole chat
    prompt_setup = PromptSetup(tuple(r.id for r in engine.chain()), pinned, settings.key)
    recalled = tuple(position[i] for i in engine.recaller.chosen) if any(
        i.kind == "recalled" for i in prompt.items) else ()
    return SentRecord(prompt_setup.key, engine.counter.factor, recalled, fingerprint(prompt.messages)), prompt_setup, \
        settings


class NotRebuilt(Exception):
    """A reply's prompt cannot be shown as it was sent; the message says why."""


def rebuild(record: SentRecord, setup: PromptSetup, settings: PromptSettings, before: list[Message],
            records: list[SummaryRecord], counter: TokenCounter) -> tuple[ContextEngine, Prompt]:
    """The prompt the reply was written from, assembled again from the chat's messages before the reply (`before`),
    every summary record of the chat and a counter with the same tokenizer; with the engine that assembled it (for
    prompt_parts). NotRebuilt if it is not what was sent."""
    if counter.name != settings.counter:
        raise NotRebuilt(f"it was counted with {settings.counter}, and the chat now counts with {counter.name}")
    at_the_time = copy.copy(counter)  # the same tokenizer and counts, the correction of then
    at_the_time.factor = record.factor
    pinned = set(setup.pinned)
    messages = [m if m.pinned == (m.id in pinned) else m.with_changes(pinned=m.id in pinned) for m in before]
    chain = set(setup.chain)
    missing = chain - {r.id for r in records}
    if missing:
        raise NotRebuilt(f"the summary {sorted(missing)[0][:8]} it was sent with is no longer in the chat")
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
