"""Each reply's record of what it was written from: kept as the reply is asked for, rebuilt for "What was sent" in
the window and `precis prompt CHAT --reply N` (context/sent_record.py says how)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from ..context.engine import ContextEngine, Prompt
from ..context.prompt_parts import PromptPart, prompt_parts
from ..context.sent_record import NotRebuilt, PromptSettings, PromptSetup, SentRecord, rebuild, sent_record
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
    """The record (Message.sent) of `prompt`, which the engine just assembled for a reply, its setup and settings
    saved unless the reply before had the same; None if they cannot be saved (the reply matters more)."""
    record, setup, settings = sent_record(engine, prompt)
    kept = kept_before(engine.messages, len(engine.messages))
    latest = next(kept, None)
    try:
        before = SentRecord.decode(latest, kept) if latest is not None else None
    except ValueError:  # a record this one cannot lean on: it says everything itself
        before = None
    if before is None or before.setup != record.setup:
        try:
            store.keep_prompt_setup(chat_id, {settings.key: settings.as_json(), record.setup: setup.as_json()})
        except StoreError as exc:
            log.warning("what the reply was written from was not saved: %s", exc)
            return None
    return record.encode(before)


def _setups(store: Store, chat_id: str, record: SentRecord) -> tuple[PromptSetup, PromptSettings]:
    setup_json = store.prompt_setup(chat_id, record.setup)
    setup = PromptSetup.from_json(setup_json) if setup_json is not None else None
    settings_json = store.prompt_setup(chat_id, setup.settings) if setup is not None else None
    if setup is None or settings_json is None:
        raise NotRebuilt("the settings it was written under were not saved")
    return setup, PromptSettings.from_json(settings_json)


def _record_of(engine: ContextEngine, message_id: str) -> tuple[int, SentRecord]:
    position = engine.archive.position.get(message_id)
    if position is None:
        raise NotRebuilt(f"the chat has no message {message_id}")
    reply = engine.messages[position]
    if reply.role != "assistant":
        raise NotRebuilt(f"message {position + 1} is the {reply.role}'s, not a reply: What was sent is a reply's")
    if reply.sent is None:
        raise NotRebuilt("this reply was written before Precis kept what each reply was written from")
    try:
        return position, SentRecord.decode(reply.sent, kept_before(engine.messages, position))
    except ValueError as exc:
        raise NotRebuilt(f"its record cannot be read ({exc})") from None


def sent_settings(store: Store, chat_id: str, engine: ContextEngine, message_id: str) -> PromptSettings:
    """The settings reply `message_id` was written under (which tokenizer counted it, say)."""
    return _setups(store, chat_id, _record_of(engine, message_id)[1])[1]


def sent_prompt(store: Store, chat_id: str, engine: ContextEngine, message_id: str,
                counter: TokenCounter | None = None) -> tuple[list[PromptPart], int]:
    """The prompt reply `message_id` of the chat (whose engine this is) was written from, part by part, and its
    tokens; counted by `counter`, else the engine's (it must have the tokenizer the reply was counted with: the
    command line finds it, counter_named). NotRebuilt says why not: a reply written before replies kept a record,
    or one that no longer rebuilds as it was sent."""
    position, record = _record_of(engine, message_id)
    setup, settings = _setups(store, chat_id, record)
    rebuilt, prompt = rebuild(record, setup, settings, engine.messages[:position], list(engine.records),
                              counter or engine.counter)
    return prompt_parts(rebuilt, prompt)
