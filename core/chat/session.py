"""One open chat: its context engine, its store rows and its provider; every use case of a chat, once.

The window runs each method on the chat's one worker thread (gui.workers), so the engine is never used from two
threads and the GUI thread only ever sees immutable Snapshots; `precis chat` calls the same methods directly.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import time
from collections.abc import Callable, Sequence

from ..context.budget import draft_room, over_budget
from ..context.engine import ContextEngine, EngineEvent, NothingToSummarize, ToolsTooLarge
from ..context.prompt_parts import PromptPart, prompt_parts
from ..model.bulk import collector_paused, freeze_the_open_chat
from ..model.lean_tools import lean_spec
from ..model.messages import Message, ToolCall
from ..model.tools import AUTO, ToolSpec
from ..providers.base import (
    DEFAULT_TEMPERATURE,
    CancelToken,
    ContextLengthExceeded,
    Provider,
    ProviderError,
)
from ..settings import MIN_REPLY_TOKENS, ChatSettings
from ..storage.chats import (
    counter_for,
    keep_allowed_tool,
    keep_calibration,
    policy_of,
    restore_engine,
    save_token_counts,
    with_overrides,
)
from ..storage.store import ChatFingerprint, Store, StoreError, Versions, attach_engine
from .rows import build_rows, hidden_messages, row_index, switchable_start
from .sent_prompts import NotRebuilt, keep_sent, sent_prompt
from .snapshot import ReplyResult, Snapshot, copied, copied_event, first_rows
from .streaming import StreamEnd, joint, stream_reply
from .unsaved import LastSave, UnsavedReply

# A streamed reply is saved this often while it arrives, so a crash keeps what was received.
SAVE_EVERY_S = 1.0
# How many of a chat's last messages are painted before the rest is read (several screens' worth).
FIRST_ROWS = 150
# A chat opening with more messages than this not counted yet (never opened with this tokenizer) shows at once with
# stand-in counts from their lengths; they are counted after, COUNT_BATCH at a time. Fewer are counted at once.
ESTIMATE_ABOVE = 2_000
COUNT_BATCH = 5_000
# While they are counted, the gauge is shown again at most this many times: each showing is a snapshot of the whole
# chat, so one a batch made counting quadratic (100,000 messages: 20 snapshots of a chat of 100,000, 16 s in all).
PROGRESS_REPORTS = 4

# What the model is asked when a reply is continued (continue_reply); only for that request, never kept.
CONTINUE_REQUEST = ("Continue your last reply exactly where it stopped, without repeating any of it and without "
                    "any preamble.")

log = logging.getLogger("precis.chat")


def _a_change(method):
    """A change to the chat saves first a reply whose last save failed (LastSave), or is refused with why
    (StoreError): the store never holds a change made after a reply it holds in part. It acts on exact counts: what
    the opening left to count_exactly and it has not counted (the chat closed with changes queued behind it) is
    counted first."""

    @functools.wraps(method)
    def counted_first(self: ChatSession, *args, **kwargs):
        self.last_save.retry()
        if self._uncounted:  # only build_engine leaves any
            self.built_engine.count_exactly(self._uncounted)
            self._uncounted = []
        return method(self, *args, **kwargs)

    return counted_first


class ChatSession:
    """`overrides`: settings for this session only, over the chat's stored ones (ChatSettings fields; its
    "summarization" over the policy), as `precis chat --mode rule` gives them."""

    def __init__(self, store: Store, chat_id: str, provider: Provider, overrides: dict | None = None) -> None:
        self.store = store
        self.chat_id = chat_id
        self.provider = provider
        self.overrides = overrides or {}
        self.settings = ChatSettings()  # the chat's, resolved as its engine is built
        self.engine: ContextEngine | None = None
        self._events: list[EngineEvent] = []
        self._recalled: list[tuple[str, str]] = []
        self._detach: Callable[[], None] | None = None
        # A summary or undo the store refused (read-only, or another Precis changed the chat's summaries meanwhile):
        # the engine no longer matches the store, so the chat is loaded again (reload_if_changed).
        self._not_saved: StoreError | None = None
        self.max_reply_tokens = 512
        self.temperature = DEFAULT_TEMPERATURE
        self.versions: dict[str, Versions] = {}
        # The tools offered to the model with each reply (use_tools), their definitions counted in the prompt.
        self.tools: list[ToolSpec] = []
        # Whether snapshots carry the next prompt part by part (the window's Prompt view is open).
        self.shows_prompt = False
        # Messages whose counts are stand-ins (build_engine), oldest first, for count_exactly.
        self._uncounted: list[Message] = []
        # What was archived when rows were last built (None: build them with the next snapshot).
        self._rows_hidden: dict[str, str] | None = None
        self.last_save = LastSave()  # the last reply's, tried again while it fails (save_unsaved)

    @property
    def built_engine(self) -> ContextEngine:
        """The engine, for what needs one: a snapshot, every change, its counting. The window and `precis chat` build
        it (build_engine) before any of them; before that it is a caller's bug."""
        if self.engine is None:
            raise RuntimeError("the chat's engine is not built yet (build_engine)")
        return self.engine

    # ---- loading (worker thread) ------------------------------------------------------------------------
    def load_rows(self) -> Snapshot:
        """What the window paints first: the chat's last FIRST_ROWS messages with the summaries that archived
        them, read straight from the store (no engine, nothing counted). `partial`: the whole chat comes with the
        engine (build_engine), a moment later."""
        return first_rows(self.store, self.chat_id, self.overrides, FIRST_ROWS)

    def build_engine(self, estimate: bool = True) -> Snapshot:
        """The chat's engine, with the counts saved for it. With `estimate`, a chat with many messages not counted yet
        gets stand-ins for them, to be counted by count_exactly; else they are counted now."""
        with collector_paused(freeze=True):  # a long chat's messages, maps and rows: all of it lives on
            return self._build_engine(estimate)

    def _build_engine(self, estimate: bool) -> Snapshot:
        engine, self.settings = restore_engine(self.store, self.chat_id, default_window=self.provider.context_window,
                                               counter=counter_for(self.provider, self.store), provider=self.provider,
                                               overrides=self.overrides)
        self.max_reply_tokens = max(MIN_REPLY_TOKENS, self.settings.reserve_output)
        if self._detach is not None:
            self._detach()
        self._not_saved = None
        self.last_save.forget()  # the engine is the store's now
        self._detach = attach_engine(self.store, self.chat_id, engine, on_error=self._save_failed)
        engine.subscribe(self._events.append)  # not a closure over the session: no reference cycle through it
        self.engine = engine
        try:
            engine.set_tools(self.tools)
        except ToolsTooLarge as exc:  # the chat's window changed under them: the next turn says so again
            log.warning("no tools are offered: %s", exc)
            self.tools = []
        self.versions = self.store.versions(self.chat_id)
        self._rows_hidden = None
        missing = [m for m in engine.messages if not engine.counter.is_counted(m)]
        if estimate and len(missing) > ESTIMATE_ABOVE:
            self._uncounted = engine.counter.estimate_missing(engine.messages)  # at the counted ones' rate
        else:
            self._uncounted = []
            engine.count_exactly(missing)
        snapshot = self.snapshot()
        save_token_counts(self.store, self.chat_id, engine)
        return snapshot

    def count_exactly(self, cancel: CancelToken, report: Callable[[Snapshot], object]) -> Snapshot | None:
        """Count what build_engine gave stand-ins, COUNT_BATCH messages at a time. Each batch is saved (an opening
        cut short goes on from there the next time); up to PROGRESS_REPORTS times the counts so far are reported (the
        gauge from them and stand-ins for the rest). None if nothing was left to count, or it was cancelled (the chat closed)."""
        engine = self.built_engine
        if not self._uncounted:
            return None
        report_every = max(COUNT_BATCH, math.ceil(len(self._uncounted) / PROGRESS_REPORTS))
        unreported = 0
        while self._uncounted:
            if cancel.cancelled:
                return None
            batch, self._uncounted = self._uncounted[:COUNT_BATCH], self._uncounted[COUNT_BATCH:]
            engine.count_exactly(batch)
            self.store.save_token_counts(self.chat_id, engine.counter.name, engine.counter.known_counts(batch))
            unreported += len(batch)
            if self._uncounted and unreported >= report_every:
                unreported = 0
                report(self.snapshot())
        snapshot = self.snapshot()
        freeze_the_open_chat()
        return snapshot

    def use_tools(self, specs: Sequence[ToolSpec]) -> None:
        """Offer these tools, made lean (lean_spec: counted as sent), to the model with each reply from now on (none: no
        tools). ToolsTooLarge, and none are offered, when their definitions would take more than half the budget."""
        self.tools = []
        self.built_engine.set_tools(lean := [lean_spec(spec) for spec in specs])
        self.tools = lean

    def allow_tool(self, name: str) -> None:
        """Run tool `name` without asking for the rest of this chat ("Allow in this chat"): kept in the chat's
        settings, so the chat reopened, or Precis restarted, does not ask again. A store that cannot save it: allowed
        until the chat is closed, and logged."""
        if name in self.settings.allowed_tools:
            return
        self.settings = self.settings.model_copy(update={"allowed_tools": [*self.settings.allowed_tools, name]})
        keep_allowed_tool(self.store, self.chat_id, name)

    def reload_if_changed(self) -> Snapshot | None:
        """The chat as stored now if another process changed it (added messages or summaries this engine does not
        know, e.g. `precis chat --chat` in a terminal; finished its last message, a reply it was writing; pinned or
        unpinned a message; changed the chat's settings, or the global summarization settings, in another window) or the
        store refused this engine's last summary or undo, else None."""
        engine = self.engine
        if engine is None:
            return None
        was_unsaved = self.last_save.unsaved is not None
        try:
            self.last_save.retry()  # before the store is read: the engine holds that reply whole
        except StoreError:
            return None
        last = engine.messages[-1] if engine.messages else None
        stored = self.store.chat_fingerprint(self.chat_id)
        # The settings are compared as this session resolved them, its overrides on top of the stored ones.
        ours = ChatFingerprint(len(engine.messages), last.id if last else None, last.sha256() if last else None,
                               len(engine.records), len(engine.chain()), frozenset(engine.archive.pinned_ids),
                               stored.settings, stored.summarization)
        if (self._not_saved is None and stored == ours
                and with_overrides(stored.settings, self.overrides) == self.settings
                and policy_of(stored.summarization, self.settings) == engine.policy):
            return self.snapshot() if was_unsaved else None  # saved now: the window no longer says it is not
        return self.build_engine(estimate=False)

    def _save_failed(self, error: StoreError) -> None:
        log.warning("%s", error)
        self._not_saved = error

    def _saved(self) -> None:
        """A summary or undo the user asked for was saved, or its refusal is raised (shown; reload_if_changed)."""
        if self._not_saved is not None:
            raise self._not_saved

    def close(self) -> UnsavedReply | None:
        """Stop saving the engine's changes once its last reply is saved whole (tried once more); else that reply is
        returned and the session stays open, holding it whole, for whoever closes it to keep or tell of."""
        try:
            self.last_save.retry()
        except StoreError as exc:
            log.warning("the chat's last reply is still not saved whole: %s", exc)
            return self.last_save.unsaved
        if self._detach is not None:
            self._detach()
            self._detach = None
        return None

    def stop_summary(self) -> None:
        """Precis is closing: a summary the model is writing is written by the rules now (LLMSummarizer.stop)."""
        if (stop := getattr(self.engine.summarizer if self.engine else None, "stop", None)) is not None:
            stop()

    def snapshot(self) -> Snapshot:
        engine = self.built_engine
        events = [copied_event(e) for e in self._events]
        self._events.clear()
        if engine.messages and engine.messages[-1].role == "user":  # else keep what this turn's question recalled
            self._recalled = [(i.source_id, i.message.content) for i in engine.recalled()]
        chain = copied(engine.chain())
        by_record = engine.archive.by_record
        folded = {r.id: [by_record[c].kind for c in r.merged_ids if c in by_record] for r in chain if r.merged_ids}
        messages, hidden = list(engine.messages), hidden_messages(engine)
        rows = index = None
        if events or hidden != self._rows_hidden:  # as ChatController.apply decides to show new rows
            rows, self._rows_hidden = build_rows(messages, chain, hidden), hidden
            index = row_index(rows)
        usage = engine.usage()
        note = over_budget(engine, usage)
        return Snapshot(self.chat_id, messages, hidden, chain, usage, engine.policy.model_copy(), events,
                        summarizable=engine.can_summarize(), recalled=list(self._recalled),
                        over_budget=note, draft_room=draft_room(engine, usage, note), versions=dict(self.versions), folded=folded,
                        counting=engine.counter.estimating, rows=rows, row_index=index,
                        unsaved=self.last_save.unsaved,
                        **(self._next_prompt(engine) if self.shows_prompt else {}))

    def _next_prompt(self, engine: ContextEngine) -> dict:
        """The next prompt part by part, and the request the provider would be sent for it (no API key), from one
        assembly of it."""
        prompt = engine.assemble()
        body = self.provider.request_body(prompt.messages, max_tokens=self.max_reply_tokens,
                                          temperature=self.temperature, tools=self.tools)
        return {"prompt": prompt_parts(engine, prompt), "prompt_request": json.dumps(body, indent=2, ensure_ascii=False)}

    # ---- changes (worker thread) ------------------------------------------------------------------------
    @_a_change
    def add_messages(self, messages: list[Message]) -> Snapshot:
        """Save and append messages (a user message, tool exchanges); the engine may summarize on the way."""
        self.store.add_messages(self.chat_id, messages)
        for message in messages:
            self.built_engine.append(message)
        return self.snapshot()

    @_a_change
    def reply(self, placeholder: Message, *, on_text: Callable[[str], object], cancel: CancelToken,
              regenerate: bool = False, on_progress: Callable[[int, int], object] | None = None,
              tool_choice: str = AUTO) -> ReplyResult:
        """Stream the assistant's reply, each piece to `on_text`; save it as it arrives; append it to the engine at
        the end. Cancelled or failed, what arrived is kept and marked incomplete.

        With `regenerate`, the placeholder is the last reply emptied: it is written again in its place and the
        earlier text is kept as a version of it (Snapshot.versions). If the server says the prompt is too long (it
        counts differently from our estimate), summarize once and retry once. `on_progress` gets (tokens read, tokens
        in the prompt) while a backend that says so reads the prompt, before the first text. `tool_choice` names the
        tool the model must call (of those use_tools offers), or AUTO."""
        replaced = None
        if regenerate:
            if placeholder.id not in self.versions:  # its first regenerate: keep the text it has now
                self.versions[placeholder.id] = self.store.save_version(self.chat_id, self.built_engine.messages[-1])
            replaced = self.built_engine.remove_last(placeholder.id)
            self.store.update_message(self.chat_id, placeholder)
        else:
            self.store.add_message(self.chat_id, placeholder)
        problem = finish = None
        calls: tuple[ToolCall, ...] = ()
        received: list[str] = []
        sent = None
        for attempt in (1, 2):
            prompt = self.built_engine.assemble()
            sent = keep_sent(self.store, self.chat_id, self.built_engine, prompt)
            try:
                usage, finish, calls = self._stream(prompt.messages, received, on_text, on_progress, cancel,
                                                    placeholder, tool_choice=tool_choice)
                # The tool definitions were sent with it; a forced reply may have been sent with its tool alone
                # (openai_compat), so its count corrects nothing.
                if usage is not None and usage.prompt_tokens and tool_choice == AUTO:
                    keep_calibration(self.store, self.provider, self.built_engine.counter,
                                     self.built_engine.counter.prompt_raw_tokens(prompt.messages)
                                     + self.built_engine.setup.tool_tokens, usage.prompt_tokens)
            except ContextLengthExceeded as exc:
                if attempt == 1 and not received:
                    try:
                        self.built_engine.summarize_now()
                        continue
                    except NothingToSummarize:
                        pass
                problem = str(exc)
            except ProviderError as exc:  # Cancelled and StreamInterrupted among them: what arrived is kept
                problem = str(exc)
            break
        if problem is not None and not received and not calls:
            return self._not_answered(placeholder, replaced, problem, cancel)
        # created_at stays the placeholder's, as saved: the store and the engine hold the same message.
        final = self._finished(placeholder, "".join(received), problem, finish).with_changes(tool_calls=calls,
                                                                                            sent=sent)
        def save() -> None:
            if regenerate:
                self.versions[final.id] = self.store.save_version(self.chat_id, final)
            else:
                self.store.update_message(self.chat_id, final)

        self.last_save.attempt(final, save)
        self.built_engine.append(final)
        return ReplyResult(final, self.snapshot(), problem, final.cut_at, problem is not None and cancel.cancelled)

    def _not_answered(self, placeholder: Message, replaced: Message | None, problem: str,
                      cancel: CancelToken) -> ReplyResult:
        """A reply that failed or was stopped before its first word leaves no empty reply: the chat is as it was
        before (a regenerated reply has its earlier text back; else the user's message is the last, to answer again)."""
        if replaced is not None:
            self.store.update_message(self.chat_id, replaced)
            self.built_engine.append(replaced, auto=False)
        else:
            self.store.delete_last_message(self.chat_id, placeholder.id)
        return ReplyResult(replaced or placeholder, self.snapshot(), problem, None, cancel.cancelled, kept=False)

    def sent_prompt(self, message_id: str) -> tuple[list[PromptPart], int] | str:
        """What reply `message_id` was written from, part by part, and its tokens; or why it cannot be shown."""
        try:
            return sent_prompt(self.store, self.chat_id, self.built_engine, message_id)
        except NotRebuilt as exc:
            return str(exc)

    def _finished(self, reply: Message, content: str, problem: str | None, finish: str | None) -> Message:
        """The reply as it ended: marked incomplete if it stopped early (stopped, failed), with its token limit if
        it stopped there (it can be continued)."""
        cut_at = self.max_reply_tokens if problem is None and finish == "length" else None
        return reply.with_changes(content=content, incomplete=problem is not None, cut_at=cut_at)

    @_a_change
    def continue_reply(self, message_id: str, *, on_text: Callable[[str], object], cancel: CancelToken) -> ReplyResult:
        """Ask the model to go on with the last reply (one cut at its token limit, or stopped) and append what it
        writes to that same reply, saved (with the version shown, if it has versions) and counted."""
        last = self.built_engine.messages[-1] if self.built_engine.messages else None
        if last is None or last.id != message_id or last.role != "assistant":
            raise ValueError("only the last reply can be continued")
        # A reply's header cannot be left open for the model to write into with every provider (the local model's
        # template always starts a new one): it is asked to go on instead, and this request is not kept.
        prompt = [*self.built_engine.assemble().messages, Message(role="user", content=CONTINUE_REQUEST)]
        received: list[str] = []
        problem = finish = None
        try:
            _usage, finish, _calls = self._stream(prompt, received, on_text, None, cancel,
                                                  last.with_changes(incomplete=True), before=last.content)
        except ProviderError as exc:  # Cancelled among them: what arrived is kept
            problem = str(exc)
        text = "".join(received)
        final = self._finished(last, last.content + joint(last.content, text) + text, problem, finish)
        self.last_save.attempt(final, lambda: self.store.save_shown_version(self.chat_id, final))
        self.built_engine.remove_last(last.id)
        self.built_engine.append(final)
        return ReplyResult(final, self.snapshot(), problem, final.cut_at, problem is not None and cancel.cancelled)

    def save_unsaved(self) -> Snapshot:
        """Save whole the reply whose last save failed (Save again); StoreError, still unsaved, if it fails again."""
        self.last_save.retry()
        return self.snapshot()

    def _stream(self, messages: list[Message], received: list[str], on_text: Callable[[str], object],
                on_progress: Callable[[int, int], object] | None, cancel: CancelToken, placeholder: Message,
                before: str = "", tool_choice: str = AUTO) -> StreamEnd:
        """The reply streamed into `placeholder`, saved every SAVE_EVERY_S as `before` and what arrived (skipped while another
        program writes, or on a full disk: never cut short by it; the next save or the last keeps it, or raises); with use_tools' tools."""
        saved_at = time.monotonic()

        def arrived(piece: str) -> None:
            nonlocal saved_at
            on_text(piece)
            if time.monotonic() - saved_at > SAVE_EVERY_S:
                saved_at = time.monotonic()
                try:
                    self.store.update_message(self.chat_id, placeholder.with_changes(
                        content=before + "".join(received)), streaming=True)
                except StoreError as exc:  # another program writing, a full disk: the reply goes on all the same
                    log.info("the reply so far was not saved this time: %s", exc)

        return stream_reply(self.provider, messages, received, arrived, cancel, max_tokens=self.max_reply_tokens,
                            temperature=self.temperature, on_progress=on_progress, tools=self.tools,
                            tool_choice=tool_choice)

    @_a_change
    def show_version(self, message_id: str, position: int) -> Snapshot:
        """Show (and send from now on) another version of the last reply, or of the user's last message with the
        branch it began (its reply and that reply's versions). The messages after it go with the version shown
        until now, kept."""
        messages = self.built_engine.messages
        start = switchable_start(self.built_engine, message_id)
        following = messages[start + 1:]
        shown, *restored = self.store.show_version(self.chat_id, messages[start], position)
        for message in reversed(following):
            self.built_engine.remove_last(message.id)
        self.built_engine.remove_last(message_id)
        for message in (shown, *restored):
            self.built_engine.append(message, auto=False)
        self.versions = self.store.versions(self.chat_id)
        return self.snapshot()

    @_a_change
    def edit_last(self, message_id: str, text: str) -> Snapshot:
        """The user's last message says `text` from now on: a new version of it, and what followed it (its reply,
        that reply's versions) stays with the earlier version, to switch back to (show_version). Nothing is
        deleted. The reply to the new version is written next (reply)."""
        messages = self.built_engine.messages
        start = switchable_start(self.built_engine, message_id)
        original = messages[start]
        if original.role != "user":
            raise ValueError("only your last message can be edited")
        following = messages[start + 1:]
        if message_id not in self.versions:  # its first edit: keep the text it has now, with what answered it
            self.store.save_version(self.chat_id, original)
        edited = original.with_changes(content=text)
        self.store.save_version(self.chat_id, edited)
        for message in reversed(following):
            self.built_engine.remove_last(message.id)
        self.built_engine.remove_last(message_id)
        self.built_engine.append(edited)  # as a message sent: it may summarize on the way
        self.versions = self.store.versions(self.chat_id)
        return self.snapshot()

    @_a_change
    def set_pinned(self, message_id: str, pinned: bool) -> Snapshot:
        self.built_engine.set_pinned(message_id, pinned)
        message = next(m for m in reversed(self.built_engine.messages) if m.id == message_id)
        self.store.update_message(self.chat_id, message)
        return self.snapshot()

    @_a_change
    def summarize_if_due(self) -> Snapshot | None:
        """An automatic summary if the policy calls for one now (a chat opened past its trigger); else None, unless
        one was tried and not kept (it saved nothing), which the snapshot's events tell."""
        return None if self.built_engine.maybe_summarize() is None and not self._events else self.snapshot()

    @_a_change
    @collector_paused()
    def summarize_now(self, instructions: str | None = None, up_to: str | None = None) -> Snapshot:
        """A manual summary, optionally only of the messages up to and including `up_to`. Without full collections,
        as undo_last: each held the interpreter lock up to 85 ms at 100,000 messages, the window waiting."""
        self._not_saved = None  # an earlier refusal is saved with this change, or refuses it too
        self.built_engine.summarize_now(instructions or None, up_to=up_to)
        self._saved()
        return self.snapshot()

    @_a_change
    @collector_paused()
    def undo_last(self) -> Snapshot:
        self._not_saved = None
        self.built_engine.undo_last()
        self._saved()
        return self.snapshot()
