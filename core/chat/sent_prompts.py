"""Each reply's record of what it was written from: kept as the reply is asked for, rebuilt for "What was sent" in
the window and `precis prompt CHAT --reply N` (context/sent_record.py says how)."""

from __future__ import annotations

import logging

from ..context.engine import ContextEngine, Prompt
from ..context.prompt_parts import PromptPart, prompt_parts
from ..context.sent_record import NotRebuilt, PromptSetup, SentRecord, rebuild, sent_record
from ..model.messages import Message
from ..model.tokens import TokenCounter
from ..storage.store import Store, StoreError

log = logging.getLogger(__name__)

__all__ = ["NotRebuilt", "keep_sent", "sent_prompt", "sent_setup"]


def keep_sent(store: Store, chat_id: str, engine: ContextEngine, prompt: Prompt) -> str | None:
    """The record (Message.sent) of `prompt`, which the engine just assembled for a reply, its setup saved; None if
    the setup cannot be saved (the reply matters more)."""
    record, setup = sent_record(engine, prompt)
    try:
        store.keep_prompt_setup(chat_id, record.setup, setup.as_json())
    except StoreError as exc:
        log.warning("what the reply was written from was not saved: %s", exc)
        return None
    return record.as_json()


def sent_prompt(store: Store, chat_id: str, engine: ContextEngine, message_id: str,
                counter: TokenCounter | None = None) -> tuple[list[PromptPart], int]:
    """The prompt reply `message_id` of the chat (whose engine this is) was written from, part by part, and its
    tokens; counted by `counter`, else the engine's (it must have the tokenizer the reply was counted with: the
    command line finds it, counter_named). NotRebuilt says why not: a reply written before replies kept a record,
    or one that no longer rebuilds as it was sent."""
    position = engine.archive.position.get(message_id)
    reply = engine.messages[position] if position is not None else None
    if reply is None or reply.role != "assistant":
        raise NotRebuilt("it is not a reply of this chat")
    if reply.sent is None:
        raise NotRebuilt("this reply was written before Precis kept what each reply was written from")
    record = SentRecord.from_json(reply.sent)
    setup = store.prompt_setup(chat_id, record.setup)
    if setup is None:
        raise NotRebuilt("the settings it was written under were not saved")
    rebuilt, prompt = rebuild(record, PromptSetup.from_json(setup), engine.messages[:position], list(engine.records),
                              counter or engine.counter)
    return prompt_parts(rebuilt, prompt)


def sent_setup(store: Store, chat_id: str, reply: Message) -> PromptSetup | None:
    """The setup the reply's record names, if it has a record and its setup was saved."""
    if reply.sent is None:
        return None
    saved = store.prompt_setup(chat_id, SentRecord.from_json(reply.sent).setup)
    return PromptSetup.from_json(saved) if saved is not None else None
