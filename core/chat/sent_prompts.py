"""Each reply's record of what it was written from: kept as the reply is asked for, rebuilt for "What was sent" in
the window and `precis prompt CHAT --reply N` (context/sent_record.py says how; old_record.py reads those kept
before its form)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from ..context.engine import ContextEngine, Prompt
from ..context.old_record import OldRecord
from ..context.prompt_parts import PromptPart, prompt_parts
from ..context.sent_record import (
    RESTATE_AFTER,
    NotRebuilt,
    PromptSettings,
    SentRecord,
    rebuild,
    sent_record,
)
from ..model.messages import Message
from ..model.tokens import TokenCounter
from ..storage.store import Store, StoreError

log = logging.getLogger(__name__)

__all__ = ["NotRebuilt", "keep_sent", "kept_before", "sent_prompt", "sent_settings"]


def kept_before(messages: list[Message], end: int) -> Iterator[str]:
    """The records the replies before place `end` keep, newest first; lazily, since a record leaves to the ones
    before it only what did not change (decoding reads back as far as it needs, not the whole chat)."""
    for place in range(end - 1, -1, -1):
        message = messages[place]
        if message.role == "assistant" and message.sent:
            yield message.sent


def keep_sent(store: Store, chat_id: str, engine: ContextEngine, prompt: Prompt) -> str | None:
    """The record (Message.sent) of `prompt`, which the engine just assembled for a reply, its settings saved unless
    the reply before had the same; None if they cannot be saved (the reply matters more)."""
    record, settings = sent_record(engine, prompt)
    kept = kept_before(engine.messages, len(engine.messages))
    latest = next(kept, None)
    try:
        before, leaned_on = SentRecord.read(latest, kept) if latest is not None else (None, 0)
    except ValueError:  # a record this one cannot lean on (one kept before, in the old form): it says everything
        before, leaned_on = None, 0
    if leaned_on >= RESTATE_AFTER:
        before = None
    if before is None or before.settings != record.settings:
        try:
            store.keep_prompt_setup(chat_id, {settings.key: settings.as_json()})
        except StoreError as exc:
            log.warning("what the reply was written from was not saved: %s", exc)
            return None
    return record.encode(before)


def _settings(store: Store, chat_id: str, record: SentRecord) -> PromptSettings:
    settings = store.prompt_setup(chat_id, record.settings)
    if settings is None:
        raise NotRebuilt("the settings it was written under were not saved")
    return PromptSettings.from_json(settings)


def _record_of(store: Store, chat_id: str, engine: ContextEngine, message_id: str) -> tuple[int, SentRecord]:
    position = engine.archive.position.get(message_id)
    if position is None:
        raise NotRebuilt(f"the chat has no message {message_id}")
    reply = engine.messages[position]
    if reply.role != "assistant":
        raise NotRebuilt(f"message {position + 1} is the {reply.role}'s, not a reply: What was sent is a reply's")
    if reply.sent is None:
        raise NotRebuilt("this reply was written before Precis kept what each reply was written from")
    earlier = kept_before(engine.messages, position)
    try:
        if not OldRecord.is_old(reply.sent):
            return position, SentRecord.decode(reply.sent, earlier)
        old = OldRecord.decode(reply.sent, earlier)
        setup = store.prompt_setup(chat_id, old.setup)
        if setup is None:
            raise NotRebuilt("the settings it was written under were not saved")
        return position, old.upgraded(setup, engine.archive.position)
    except ValueError as exc:
        raise NotRebuilt(f"its record cannot be read ({exc})") from None


def sent_settings(store: Store, chat_id: str, engine: ContextEngine, message_id: str) -> PromptSettings:
    """The settings reply `message_id` was written under (which tokenizer counted it, say)."""
    return _settings(store, chat_id, _record_of(store, chat_id, engine, message_id)[1])


def sent_prompt(store: Store, chat_id: str, engine: ContextEngine, message_id: str,
                counter: TokenCounter | None = None) -> tuple[list[PromptPart], int]:
    """The prompt reply `message_id` of the chat (whose engine this is) was written from, part by part, and its
    tokens; counted by `counter`, else the engine's (it must have the tokenizer the reply was counted with: the
    command line finds it, counter_named). NotRebuilt says why not: a reply written before replies kept a record,
    or one that no longer rebuilds as it was sent."""
    position, record = _record_of(store, chat_id, engine, message_id)
    rebuilt, prompt = rebuild(record, _settings(store, chat_id, record), engine.messages[:position],
                              list(engine.records), counter or engine.counter)
    return prompt_parts(rebuilt, prompt)
