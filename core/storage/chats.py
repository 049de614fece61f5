"""A chat's context engine as built from the store: its messages, records, settings and cached token counts.

The window, the terminal commands and the benchmarks all build engines here, so a chat behaves the same everywhere.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pydantic import ValidationError

from ..context.engine import Budget, ContextEngine
from ..model.bulk import collector_paused
from ..model.tokens import Calibration, TokenCounter
from ..providers.base import Provider, ProviderError, token_counter
from ..providers.registry import make_provider, provider_for
from ..settings import (
    CALIBRATION_KEY,
    PROVIDER_KEY,
    SUMMARIZATION_KEY,
    ChatSettings,
    ProviderChoice,
    SummarizationPolicy,
    choice_problems,
    policy_errors,
)
from ..summary.summarizers import Summarizer, make_summarizer
from .store import Store, StoreError

log = logging.getLogger("precis.chats")


def chosen_provider(store: Store, **given: str) -> Provider:
    """The model Settings → Provider names, every chat's model in the window, with `given` (base_url, model) over
    the choice."""
    choice = ProviderChoice.from_setting(store.get_setting(PROVIDER_KEY))
    try:
        given_choice = ProviderChoice.model_validate({**choice.model_dump(), **given})
    except ValidationError as exc:  # a --base-url that is no address, or one given to the local model
        raise ValueError(choice_problems(exc, ProviderChoice)) from None
    return provider_for(given_choice)


def counter_for(provider: Provider | None, store: Store | None = None) -> TokenCounter:
    """How a prompt for `provider`'s model is counted: with the model's own vocabulary where it is at hand (the
    embedded model, a chosen GGUF), else estimated (cl100k); with the correction this model's replies taught
    before, kept in `store`. None: no model is known, an estimate."""
    if provider is None:
        return TokenCounter()
    try:
        counter = token_counter(provider)
    except Exception as exc:  # noqa: BLE001 - whatever stops the tokenizer loading, estimates still work
        log.warning("token counts are estimated: the model's tokenizer is unavailable (%s)", exc)
        counter = TokenCounter()
    saved = (store.get_setting(CALIBRATION_KEY) or {}).get(calibration_name(provider, counter)) if store else None
    if saved is not None:
        counter.restore_calibration(Calibration(*saved))
    return counter


def calibration_name(provider: Provider, counter: TokenCounter) -> str:
    """What a count correction is saved under: the model and the tokenizer it corrects."""
    return f"{provider.name} {provider.model} / {counter.name}"


def keep_calibration(store: Store, provider: Provider, counter: TokenCounter, raw_estimate: int, actual: int) -> None:
    """Correct the counts from the prompt tokens the model reported, and keep the correction for this model, so
    that the chat opened afresh counts what it counted live (the gauge went from 944 tokens to 357)."""
    if counter.calibrate(raw_estimate, actual):
        saved = dict(store.get_setting(CALIBRATION_KEY) or {})
        saved[calibration_name(provider, counter)] = list(counter.calibration)
        try:
            store.set_setting(CALIBRATION_KEY, saved)
        except StoreError as exc:  # a read-only store: learned again next time, the reply is what matters
            log.warning("the token-count correction was not saved: %s", exc)


def keep_allowed_tool(store: Store, chat_id: str, name: str) -> None:
    """Tool `name` runs without asking in this chat from now on, kept in its stored settings; a store that cannot
    keep it (read-only): allowed while the chat is open, and logged."""
    try:
        stored = store.get_chat(chat_id).settings
        if name not in stored.allowed_tools:
            store.update_chat_settings(chat_id, stored.model_copy(update={"allowed_tools": [*stored.allowed_tools, name]}))
    except StoreError as exc:
        log.warning("%s stays allowed only while the chat is open: %s", name, exc)


def effective_policy(store: Store, settings: ChatSettings) -> SummarizationPolicy:
    """Global summarization settings with this chat's overrides on top (policy_of)."""
    return policy_of(store.get_setting(SUMMARIZATION_KEY, {}) or {}, settings)


def policy_of(global_values: dict, settings: ChatSettings) -> SummarizationPolicy:
    """The global summarization values (as stored) with the chat's overrides on top.

    The settings dialog refuses a combination that does not hold together, but the global values can change after
    a chat's overrides were saved: then the chat follows the global settings. Global values that do not hold
    together (written by an older Precis, or by hand) give the defaults. The log says why, either way."""
    merged = {**global_values, **settings.summarization}
    for values, instead in ((merged, "the global ones"), (global_values, "the defaults")):
        if not (errors := policy_errors(values)):
            return SummarizationPolicy(**values)
        log.warning("the summarization settings %s do not hold together (%s); using %s",
                    "with this chat's own" if values is merged else "saved", "; ".join(
                        f"{k or 'policy'}: {v}" for k, v in errors.items()), instead)
    return SummarizationPolicy()


def summarizer_for(policy: SummarizationPolicy, chat_provider: Provider) -> Summarizer:
    """The summarizer the policy names: the chat's own model by default, the embedded local model (the local
    model's process is shared with any chat using it), or another provider and model."""
    if policy.mode == "rule" or policy.summarizer == "chat":
        return make_summarizer(policy.mode, chat_provider, policy.summary_seconds)
    if policy.summarizer == "local":
        return make_summarizer(policy.mode, make_provider("local"), policy.summary_seconds)
    try:
        provider = make_provider(policy.summarizer_provider, base_url=policy.summarizer_base_url or None,
                                 model=policy.summarizer_model or None)
    except (ProviderError, ValueError) as exc:
        # A chat must open even when its summarizer cannot be reached as configured; the log says why.
        log.warning("the summarizer model cannot be used (%s); the chat's model writes the summaries", exc)
        provider = chat_provider
    return make_summarizer(policy.mode, provider, policy.summary_seconds)


def writes_summaries(engine: ContextEngine | None, provider: Provider) -> bool:
    """Whether the chat of `engine` has its summaries written by `provider`'s model: hybrid or llm mode on it (the
    chat's own model, or the local model when it is the chat's: their process is one). False before it is built."""
    writer = getattr(engine.summarizer, "provider", None) if engine is not None else None
    return writer is not None and (writer.name, writer.model) == (provider.name, provider.model)


def restore_engine(store: Store, chat_id: str, *, default_window: int | Callable[[], int], counter: TokenCounter | None = None,
                   provider: Provider | None = None, summarizer: Summarizer | None = None,
                   overrides: dict | None = None) -> tuple[ContextEngine, ChatSettings]:
    """The chat's engine, on its settings resolved once: the chat's stored ones with `overrides` (this run's, as
    `precis chat --mode`: not saved) on top, its summarization over the global policy. Its summaries are written as
    the policy says for a chat on `provider` (summarizer_for), or by `summarizer` if given.

    `default_window` is the window of a chat that sets none; given as a function (a provider's context_window, which
    may ask its server), it is asked only then.

    Token counts saved by save_token_counts with the same tokenizer are reused: nothing old is tokenized again.
    Nothing is counted here, so a window can paint a chat's rows before any token is counted."""
    settings = with_overrides(store.get_chat(chat_id).settings, overrides or {})
    policy = effective_policy(store, settings)
    if summarizer is None and provider is not None:
        summarizer = summarizer_for(policy, provider)
    window = settings.context_window or (default_window() if callable(default_window) else default_window)
    budget = Budget(window=window, reserve_output=settings.reserve_output)
    counter = counter or TokenCounter()
    # The messages, their counts and the archive all live on: one object and more per message, which would set off
    # full collections as they grow (seeding the counts of 100,000 messages: 0.4 s, 0.09 s at 40,000).
    with collector_paused():
        messages, stored = store.load_counted_messages(chat_id, counter.name)
        counter.seed(messages, stored)
        engine = ContextEngine.restore(messages, store.load_records(chat_id), budget, policy, counter, summarizer,
                                       system_prompt=settings.system_prompt,
                                       recall_search=lambda query, limit: store.search_archived(chat_id, query,
                                                                                                limit))
    return engine, settings


def with_overrides(settings: ChatSettings, overrides: dict) -> ChatSettings:
    """The settings with `overrides` on top; its "summarization" values over the chat's own overrides."""
    if not overrides:
        return settings
    summarization = {**settings.summarization, **overrides.get("summarization", {})}
    return ChatSettings.model_validate({**settings.model_dump(), **overrides, "summarization": summarization})


def save_token_counts(store: Store, chat_id: str, engine: ContextEngine) -> None:
    """Keep the counts the engine has made by now, so the next restore with the same tokenizer need not tokenize
    those messages."""
    counter = engine.counter
    known = counter.known_counts(engine.messages)
    # Once: asking per message made this quadratic in the chat's length.
    saved = store.token_counts(chat_id, counter.name)
    fresh = {mid: n for mid, n in known.items() if mid not in saved}
    if fresh:
        store.save_token_counts(chat_id, counter.name, fresh)
