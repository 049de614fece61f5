"""What a reply was written from, kept with it as a compact record and rebuilt when asked ("What was sent").

Assembling a prompt is a function of the chat up to the reply, the summaries active then, the pins, the chat's
settings (system prompt, tools, policy, budget), the tokenizer's correction factor and what recall chose. The record
keeps only what cannot be read again from the chat: the settings and the chain as a `PromptSetup` (one per chat and
change, shared by every reply written under it), the factor and the recalled originals' ids per reply, and a
fingerprint of the messages sent. Rebuilding assembles the prompt again from those; a fingerprint that differs (the
rules that shrink or cut text changed since, another model's tokenizer) is said, never shown as what was sent.
"""

from __future__ import annotations

import copy
import hashlib
import json
import zlib
from dataclasses import asdict, dataclass

from ..model.messages import Message
from ..model.records import SummaryRecord
from ..model.tokens import TokenCounter
from ..settings import SummarizationPolicy
from .engine import ContextEngine, Prompt
from .usage import Budget


@dataclass(frozen=True)
class PromptSetup:
    """What a prompt was assembled under, beside the chat's messages: the same for many replies in a row."""

    chain: tuple[str, ...]  # the summary records active, in chain order
    pinned: tuple[str, ...]  # the messages pinned then
    system_prompt: str
    tool_text: str
    policy: dict
    budget: dict
    counter: str  # the tokenizer that counted (TokenCounter.name)

    def as_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    @property
    def key(self) -> str:
        """Its name among the chat's setups: a fingerprint of what it says (the same setup is kept once)."""
        return hashlib.sha256(self.as_json().encode("utf-8")).hexdigest()[:16]

    @classmethod
    def from_json(cls, text: str) -> PromptSetup:
        data = json.loads(text)
        return cls(tuple(data["chain"]), tuple(data["pinned"]), data["system_prompt"], data["tool_text"],
                   data["policy"], data["budget"], data["counter"])


@dataclass(frozen=True)
class SentRecord:
    """Kept with each reply (Message.sent): the setup's key, and what changes from one reply to the next."""

    setup: str
    factor: float
    recalled: tuple[str, ...]  # the originals recall chose, in the order it chose them
    check: int  # fingerprint() of the messages sent

    def as_json(self) -> str:
        return json.dumps({"setup": self.setup, "factor": self.factor, "recalled": list(self.recalled),
                           "check": self.check}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> SentRecord:
        data = json.loads(text)
        return cls(data["setup"], float(data["factor"]), tuple(data["recalled"]), int(data["check"]))


def fingerprint(messages: list[Message]) -> int:
    """A checksum of what a provider is sent for these messages (roles, texts, names, calls)."""
    payload = json.dumps([[m.role, m.content, m.name, m.tool_call_id, [[c.id, c.name, c.arguments]
                                                                       for c in m.tool_calls]] for m in messages],
                         ensure_ascii=False, sort_keys=True)
    return zlib.crc32(payload.encode("utf-8"))


def sent_record(engine: ContextEngine, prompt: Prompt) -> tuple[SentRecord, PromptSetup]:
    """The record of `prompt`, just assembled by `engine` for the reply to come, and the setup it names."""
    setup = engine.setup
    pinned = tuple(m.id for m in engine.messages if m.pinned)
    prompt_setup = PromptSetup(tuple(r.id for r in engine.chain()), pinned, setup.system_prompt, setup.tool_text,
                               setup.policy.model_dump(mode="json"), asdict(setup.budget), setup.counter.name)
    recalled = engine.recaller.chosen if any(i.kind == "recalled" for i in prompt.items) else ()
    return SentRecord(prompt_setup.key, engine.counter.factor, recalled, fingerprint(prompt.messages)), prompt_setup


class NotRebuilt(Exception):
    """A reply's prompt cannot be shown as it was sent; the message says why."""


def rebuild(record: SentRecord, setup: PromptSetup, before: list[Message], records: list[SummaryRecord],
            counter: TokenCounter) -> tuple[ContextEngine, Prompt]:
    """The prompt the reply was written from, assembled again from the chat's messages before the reply (`before`),
    every summary record of the chat and a counter with the same tokenizer; with the engine that assembled it (for
    prompt_parts). NotRebuilt if it is not what was sent."""
    if counter.name != setup.counter:
        raise NotRebuilt(f"it was counted with {setup.counter}, and the chat now counts with {counter.name}")
    at_the_time = copy.copy(counter)  # the same tokenizer and counts, the correction of then
    at_the_time.factor = record.factor
    pinned = set(setup.pinned)
    messages = [m if m.pinned == (m.id in pinned) else m.with_changes(pinned=m.id in pinned) for m in before]
    chain = set(setup.chain)
    statuses = [r.model_copy(update={"status": "active" if r.id in chain else "undone"}) for r in records]
    missing = chain - {r.id for r in records}
    if missing:
        raise NotRebuilt(f"the summary {sorted(missing)[0][:8]} it was sent with is no longer in the chat")
    engine = ContextEngine.restore(messages, statuses, Budget(**setup.budget),
                                   SummarizationPolicy.model_validate(setup.policy), at_the_time,
                                   system_prompt=setup.system_prompt, recall_search=lambda query, limit: [])
    engine.setup.tool_text = setup.tool_text
    engine.setup.tool_tokens = at_the_time.count_text(setup.tool_text) if setup.tool_text else 0
    engine.recaller.replay = list(record.recalled)
    prompt = engine.assemble()
    if fingerprint(prompt.messages) != record.check:
        raise NotRebuilt("assembled again, it differs from what was sent (Precis's rules for shrinking or cutting "
                         "text have changed since)")
    return engine, prompt
