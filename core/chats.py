"""A chat's context engine as built from the store: its messages, records, settings and cached token counts.

The window, the terminal commands and the benchmarks all build engines here, so a chat behaves the same everywhere.
"""

from __future__ import annotations

import logging

from core.engine import Budget, ContextEngine
from core.policy import SummarizationPolicy, policy_errors
from core.store import ChatSettings, Store
from core.summarize import Summarizer
from core.tokens import TokenCounter

log = logging.getLogger("precis.chats")

# Global settings key holding the summarization policy every chat starts from.
GLOBAL_POLICY_KEY = "summarization"


def effective_policy(store: Store, settings: ChatSettings) -> SummarizationPolicy:
    """Global summarization settings with this chat's overrides on top.

    The settings dialog refuses a combination that does not hold together, but the global values can change after
    a chat's overrides were saved: then the chat follows the global settings, and the log says why.
    """
    values = dict(store.get_setting(GLOBAL_POLICY_KEY, {}) or {})
    merged = {**values, **settings.summarization}
    errors = policy_errors(merged)
    if errors:
        log.warning("this chat's summarization overrides do not fit the global settings (%s); using the global ones",
                    "; ".join(f"{k or 'policy'}: {v}" for k, v in errors.items()))
        return SummarizationPolicy(**values)
    return SummarizationPolicy(**merged)


def restore_engine(store: Store, chat_id: str, *, default_window: int, counter: TokenCounter | None = None,
                   summarizer: Summarizer | None = None) -> tuple[ContextEngine, ChatSettings]:
    """The chat's engine. Estimated token counts are kept in the store, so reopening a chat tokenizes nothing old."""
    settings = store.get_chat(chat_id).settings
    policy = effective_policy(store, settings)
    budget = Budget(window=settings.context_window or default_window, reserve_output=settings.reserve_output)
    counter = counter or TokenCounter()
    messages = store.load_messages(chat_id)
    # Stored counts are tiktoken estimates: an exact (model) tokenizer counts for itself.
    stored = store.token_counts(chat_id) if not counter.is_exact else {}
    for message in messages:
        if message.id in stored:
            counter.seed(message, stored[message.id])
    engine = ContextEngine.restore(messages, store.load_records(chat_id), budget, policy, counter, summarizer,
                                   system_prompt=settings.system_prompt)
    if not counter.is_exact:
        engine.usage()  # counts what the prompt shows
        fresh = {mid: n for mid, n in counter.known_counts(messages).items() if mid not in stored}
        if fresh:
            store.save_token_counts(chat_id, fresh)
    return engine, settings
