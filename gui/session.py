"""One open chat: its context engine, its store rows and its provider, driven from the chat's serial worker.

Every method that touches the engine runs on the chat's one worker thread (see gui.workers), so the engine is
never used from two threads. The GUI thread only ever sees immutable Snapshots.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from core.engine import Budget, ContextEngine, EngineEvent, UsageReport
from core.messages import Message
from core.policy import SummarizationPolicy
from core.providers.base import (
    Cancelled,
    CancelToken,
    ContextLengthExceeded,
    Provider,
    ProviderError,
    StreamInterrupted,
)
from core.records import SummaryRecord
from core.store import ChatSettings, Store, attach_engine
from core.summarize import make_summarizer
from core.tokens import TokenCounter
from gui.workers import StreamBuffer

# A streamed reply is saved this often while it arrives, so a crash keeps what was received.
SAVE_EVERY_S = 1.0
GLOBAL_POLICY_KEY = "summarization"


@dataclass(frozen=True)
class Snapshot:
    """What the GUI shows of a chat at one moment."""

    messages: list[Message]
    # message id -> id of the active summary hiding it from the model (pinned and system messages are never hidden)
    hidden: dict[str, str]
    chain: list[SummaryRecord]
    usage: UsageReport | None
    policy: SummarizationPolicy
    events: list[EngineEvent] = field(default_factory=list)

    def archived(self, record_id: str) -> list[Message]:
        return [m for m in self.messages if self.hidden.get(m.id) == record_id]


@dataclass(frozen=True)
class ReplyResult:
    message: Message
    snapshot: Snapshot
    # Why the reply stopped early, if it did (cancelled, cut off, failed): shown next to it.
    problem: str | None = None


def effective_policy(store: Store, settings: ChatSettings) -> SummarizationPolicy:
    """Global summarization settings with this chat's overrides on top."""
    values = dict(store.get_setting(GLOBAL_POLICY_KEY, {}) or {})
    values.update(settings.summarization)
    return SummarizationPolicy(**values)


class ChatSession:
    def __init__(self, store: Store, chat_id: str, provider: Provider) -> None:
        self.store = store
        self.chat_id = chat_id
        self.provider = provider
        self.engine: ContextEngine | None = None
        self._events: list[EngineEvent] = []
        self._detach = None
        self.max_reply_tokens = 512

    # ---- loading (worker thread) ------------------------------------------------------------------------
    def load_rows(self) -> Snapshot:
        """Messages and summaries from the store, fast, before the engine is built (first paint)."""
        info = self.store.get_chat(self.chat_id)
        messages = self.store.load_messages(self.chat_id)
        records = self.store.load_records(self.chat_id)
        by_id = {m.id: m for m in messages}
        hidden = {mid: rid for mid, rid in self.store.archived_by(self.chat_id).items()
                  if mid in by_id and not _always_visible(by_id[mid])}
        active = [r for r in records if r.status == "active"]
        return Snapshot(messages, hidden, active, None, effective_policy(self.store, info.settings))

    def build_engine(self) -> Snapshot:
        info = self.store.get_chat(self.chat_id)
        settings = info.settings
        policy = effective_policy(self.store, settings)
        window = settings.context_window or self.provider.context_window()
        budget = Budget(window=window, reserve_output=settings.reserve_output)
        self.max_reply_tokens = max(16, settings.reserve_output)
        summarizer = make_summarizer(policy.mode, self.provider)
        engine = ContextEngine.restore(self.store.load_messages(self.chat_id), self.store.load_records(self.chat_id),
                                       budget, policy, TokenCounter(), summarizer)
        if self._detach is not None:
            self._detach()
        self._detach = attach_engine(self.store, self.chat_id, engine)
        engine.subscribe(lambda event: self._events.append(event))
        self.engine = engine
        return self.snapshot()

    def close(self) -> None:
        if self._detach is not None:
            self._detach()
            self._detach = None

    def snapshot(self) -> Snapshot:
        engine = self.engine
        hidden = {}
        for message in engine.messages:
            holder = engine.archived_by(message.id)
            if holder is not None and not _always_visible(message):
                hidden[message.id] = holder
        events, self._events = self._events, []
        return Snapshot(list(engine.messages), hidden, engine.chain(), engine.usage(), engine.policy, events)

    # ---- changes (worker thread) ------------------------------------------------------------------------
    def add_messages(self, messages: list[Message]) -> Snapshot:
        """Save and append messages (a user message, tool exchanges); the engine may summarize on the way."""
        self.store.add_messages(self.chat_id, messages)
        for message in messages:
            self.engine.append(message)
        return self.snapshot()

    def reply(self, buffer: StreamBuffer, cancel: CancelToken, placeholder: Message) -> ReplyResult:
        """Stream the assistant's reply into `buffer`; save it as it arrives; append it to the engine at the end."""
        prompt = self.engine.assemble()
        self.store.add_message(self.chat_id, placeholder)
        problem = None
        text = ""
        try:
            text, usage = self._stream(prompt.messages, buffer, cancel, placeholder)
            if usage is not None and usage.prompt_tokens:
                self.engine.counter.calibrate(self.engine.counter.prompt_raw_tokens(prompt.messages),
                                              usage.prompt_tokens)
        except ContextLengthExceeded:
            # The provider counts differently from our estimate: summarize once and retry once.
            self.engine.summarize_now()
            try:
                text, _usage = self._stream(self.engine.assemble().messages, buffer, cancel, placeholder)
            except (Cancelled, StreamInterrupted) as exc:
                text, problem = exc.partial, str(exc)
            except ProviderError as exc:
                text, problem = buffer.text(), str(exc)
        except (Cancelled, StreamInterrupted) as exc:
            text, problem = exc.partial or buffer.text(), str(exc)
        except ProviderError as exc:
            text, problem = buffer.text(), str(exc)
        final = placeholder.with_changes(content=text, incomplete=problem is not None, created_at=time.time())
        self.store.update_message(self.chat_id, final)
        self.engine.append(final)
        return ReplyResult(final, self.snapshot(), problem)

    def _stream(self, messages: list[Message], buffer: StreamBuffer, cancel: CancelToken, placeholder: Message):
        parts: list[str] = []
        usage = None
        saved_at = time.monotonic()
        for chunk in self.provider.stream_chat(messages, max_tokens=self.max_reply_tokens, cancel=cancel):
            if chunk.text:
                parts.append(chunk.text)
                buffer.append(chunk.text)
                if time.monotonic() - saved_at > SAVE_EVERY_S:
                    saved_at = time.monotonic()
                    self.store.update_message(self.chat_id, placeholder.with_changes(content="".join(parts)))
            if chunk.done:
                usage = chunk.usage
            if cancel.cancelled:
                raise Cancelled(partial="".join(parts))
        return "".join(parts), usage

    def set_pinned(self, message_id: str, pinned: bool) -> Snapshot:
        self.engine.set_pinned(message_id, pinned)
        message = next(m for m in reversed(self.engine.messages) if m.id == message_id)
        self.store.update_message(self.chat_id, message)
        return self.snapshot()

    def summarize_now(self, instructions: str | None = None) -> Snapshot:
        self.engine.summarize_now(instructions or None)
        return self.snapshot()

    def undo_last(self) -> Snapshot:
        self.engine.undo_last()
        return self.snapshot()


def _always_visible(message: Message) -> bool:
    """The engine never hides pinned or system messages from the model, even inside a summarized range."""
    return message.pinned or message.role == "system"
