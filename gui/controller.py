"""The chat controller: the open chat and every operation on it, run off the GUI thread.

Each operation submits a job and takes `done`/`failed` callbacks (delivered on the GUI thread), in the manner of
Anki's CollectionOp; the main window only lays out widgets and wires them to these operations and signals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal

from ..core.chat.commands import REGISTRY, CommandResult, SlashCommand, run_command, tool_messages
from ..core.chat.session import ChatSession
from ..core.chat.snapshot import Snapshot
from ..core.chat.unsaved import UnsavedReply
from ..core.model.messages import Message
from ..core.providers.base import CancelToken, Provider
from ..core.providers.registry import api_key_for, save_api_key
from ..core.settings import PROVIDER_KEY, SUMMARIZATION_KEY, ChatSettings, ProviderChoice
from ..core.storage.chats import writes_summaries
from ..core.storage.importers import import_file
from ..core.storage.store import Store
from .model_control import ModelControl
from .store_calls import StoreCalls
from .workers import Job, Runner, StreamBuffer

CLOSE_WAIT_MS = 15_000
# How often the data folder is checked for chats another Precis (`precis import`, a terminal chat) changed.
WATCH_INTERVAL_MS = 1000

Done = Callable[[Any], Any] | None
Failed = Callable[[BaseException], Any] | None  # given the exception that ended the job


# What the status bar says while a summary or an undo runs (a job's label: "Summarize…" read as a menu item).
SUMMARY_WORK = {"summarize": "summarizing older messages", "undo-summary": "undoing the summary"}
# Why Summarize now and Undo, by any way of asking (inspector, menu, /command, a message's menu), wait.
WAIT_FOR_SUMMARY = "Wait for the summary to finish"


class SummaryUnderWay(ValueError):
    """A summary or an undo asked for while another is being made: refused in words (a ValueError is a refusal to
    wording.failure_text), as a second one queued would summarize what the first left, or undo the wrong one."""


class ChatController(QObject):
    """Owns the runners, the open chat's session and its latest snapshot, and the model (`model`; a `provider`
    given here fixes it, for tests)."""

    # A snapshot of the open chat to show; the second value says whether its rows must be rebuilt.
    snapshot_changed = Signal(object, bool)
    rows_loaded = Signal(object)  # the chat's stored rows, before its engine is counted
    chat_opened = Signal(str)  # the chat's engine is built and shown
    chats_changed = Signal()  # titles, order or counts in the chat list changed
    work_started = Signal(str)  # a job began; the text says what it does
    work_finished = Signal()  # a job ended; `busy` says whether others still run
    failed = Signal(object)  # a job whose caller does not report its own failure failed: the exception
    # A write found another program writing to the database and waits for it: what it waits for, naming the file.
    store_waiting = Signal(str)
    _store_waiting = Signal(str)  # the same, from the writing thread
    # A summary or an undo of one is being made on the open chat (True), or no longer (another chat's goes on).
    summarizing = Signal(bool)
    # A chat was closed (another opened) while its last reply was still not saved whole: kept. Its id, the UnsavedReply.
    reply_kept = Signal(str, object)

    def __init__(self, store: Store, provider: Provider | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store = store
        # Whether snapshots carry the next prompt part by part (the inspector's Prompt section is open).
        self.shows_prompt = False
        self.runner = Runner(parent=self)
        self.store_calls = StoreCalls(store, parent=self)  # the window's own store calls: chat list, search, settings
        self.chat_runner: Runner | None = None
        self._retired: dict[Runner, ChatSession] = {}  # runners of closed chats, finishing their last jobs
        # Sessions of chats left while their last reply was not saved whole (ChatSession.close): kept, the reply whole
        # in their engine, until the chat is opened again (and saved then, or still offered to Save again).
        self._kept: dict[str, ChatSession] = {}
        self.session: ChatSession | None = None
        self.snapshot: Snapshot | None = None
        self.reply_job: Job | None = None
        self.command_job: Job | None = None
        self.count_job: Job | None = None  # the open chat's messages being counted after it showed (stand-ins)
        # Each chat's summaries and undos queued or running, first first: what each does (SUMMARY_WORK keys). Kept by
        # chat, as a chat's summary goes on after another chat is opened (see `summarizing`).
        self._summary_work: dict[str, list[str]] = {}
        self._model_summaries = 0  # summaries the model is writing or will write (the model's state says so)
        self.model = ModelControl(store, self.runner, self.track, provider, parent=self)
        self.store.chats_changed()  # starts watching before the window first lists the chats
        self._store_waiting.connect(self.store_waiting, Qt.ConnectionType.QueuedConnection)
        store.on_wait = self._store_waiting.emit
        self._watch = QTimer(self)
        self._watch.setInterval(WATCH_INTERVAL_MS)
        self._watch.timeout.connect(self._pick_up_changes)
        self._watch.start()

    def _pick_up_changes(self) -> None:
        """Chats imported or changed by another Precis on the same data folder: the list follows, and so does the
        open chat if it was added to (checked on its worker, after what it is doing; quietly)."""
        if not self.store.chats_changed():
            return
        self.chats_changed.emit()
        self._reload_open_chat()

    def _reload_open_chat(self) -> None:
        """The open chat as stored, if it differs from what its engine holds (checked on its worker, after what it
        is doing; quietly)."""
        session = self.session
        if session is not None and self.chat_runner is not None:
            job = self.chat_runner.submit("look for changes made elsewhere", lambda _job: session.reload_if_changed())
            job.succeeded.connect(lambda snapshot: snapshot is not None and self.apply(snapshot, rebuild_rows=True))
            # Quiet, but counted: queued behind a reply, it is the chat's last work, and the reply's status goes
            # only when the chat is no longer busy.
            job.finished.connect(self.work_finished.emit)

    @property
    def busy(self) -> bool:
        return self.runner.busy or bool(self.chat_runner and self.chat_runner.busy)

    # ---- running work -----------------------------------------------------------------------------------------
    def track(self, job: Job, text: str, done: Done = None, failed: Failed = None, report: bool = True) -> Job:
        self.work_started.emit(text)
        if done is not None:
            job.succeeded.connect(done)
        if failed is not None:
            job.failed.connect(failed)
        if report:
            job.failed.connect(self.failed.emit)
        job.finished.connect(self.work_finished.emit)
        return job

    def run(self, label: str, fn: Callable[[Job], Any], status: str, done: Done = None, failed: Failed = None) -> Job:
        """Run work that is not the open chat's (loading a model, an import, a tool) on the shared runner."""
        return self.track(self.runner.submit(label, fn), status, done, failed)

    def show_prompt(self, shown: bool) -> None:
        """Carry the next prompt in each snapshot from now on (or no longer); shown, at once for the open chat."""
        self.shows_prompt = shown
        session = self.session
        if session is not None:
            session.shows_prompt = shown
            if shown:
                self.run_on_chat("read the prompt", lambda _job: session.snapshot(), self.apply)

    def run_on_chat(self, label: str, fn: Callable[[Job], Any], done: Done = None, failed: Failed = None) -> Job:
        """Run on the open chat's serial worker (the engine is never used from two threads); failures are shown."""
        return self.track(self.chat_runner.submit(label, fn), label[0].upper() + label[1:] + "…", done, failed)

    # ---- chats --------------------------------------------------------------------------------------------------
    def open(self, chat_id: str) -> None:
        """Close the open chat and open this one: its rows first, then its engine (messages never counted get
        stand-in counts), then their counts, then a summary it is due. Queued together: whatever the user does
        meanwhile runs after them, on exact counts."""
        self.close()
        kept = self._kept.pop(chat_id, None)
        self.session = session = kept or ChatSession(self.store, chat_id, self.model.provider)
        session.shows_prompt = self.shows_prompt
        self.chat_runner = Runner(max_threads=1, parent=self)
        if chat_id in self._summary_work:  # its summary, asked for before it was closed, is still being made
            self.summarizing.emit(True)
        self.run_on_chat("open the chat", lambda _job: session.load_rows(), self._rows_loaded)

        def built(snapshot: Snapshot) -> None:
            self.apply(snapshot)
            self.chat_opened.emit(chat_id)

        def counted(snapshot: Snapshot | None) -> None:
            if snapshot is not None:
                self.apply(snapshot)
            if self.session is session:  # opened past its trigger (an import, a smaller window): summarize now
                self._changing_summaries(self.run_on_chat(
                    "summarize the older messages", lambda _job: session.summarize_if_due(),
                    lambda snap: snap is not None and self.apply(snap)), "summarize")

        # A session kept with its reply not saved whole (_keep) tries again; else it shows that reply still whole.
        self.run_on_chat("count the context", lambda _job: (session.reload_if_changed() or session.snapshot())
                         if kept is not None else session.build_engine(), built)
        self.count_job = counting = self.run_on_chat(
            "count the tokens", lambda job: session.count_exactly(job.cancel_token, job.report), counted)
        counting.progress.connect(self.apply)
        counting.finished.connect(lambda: self.count_job is counting and setattr(self, "count_job", None))

    def _rows_loaded(self, snapshot: Snapshot) -> None:
        if self.is_open(snapshot.chat_id):
            self.rows_loaded.emit(snapshot)

    def is_open(self, chat_id: str) -> bool:
        return self.session is not None and self.session.chat_id == chat_id

    def close(self) -> None:
        """Cancel the open chat's work (a reply's text that arrived is saved) and close it."""
        if self.session is None:
            return
        for job in (self.reply_job, self.command_job, self.count_job):
            if job is not None:
                job.cancel()
        runner, session = self.chat_runner, self.session
        self.session = None
        self.snapshot = None
        if session.chat_id in self._summary_work:  # its summary goes on; the chat opened next may ask for one
            self.summarizing.emit(False)
        if runner is None:
            session.close()
            return
        # Never waited for on the GUI thread: the closed chat's worker finishes what it started (a summary under
        # way is saved by the engine's store hooks, so reopening does not redo it; its snapshot is dropped by
        # apply) and closes the session after its last job.
        self._retired[runner] = session
        last = runner.submit("close the chat", lambda _job: session.close())
        last.succeeded.connect(lambda unsaved: unsaved is not None and self._keep(session, unsaved))
        last.finished.connect(lambda: self._retire(runner))

    def _keep(self, session: ChatSession, unsaved: UnsavedReply) -> None:
        """A chat left with its last reply still not saved whole: its session is kept, with the reply whole, to be
        saved when the chat is opened again (or as the window closes); reply_kept tells of it."""
        if not self.is_open(session.chat_id):  # else opened again meanwhile, with this very session
            self._kept[session.chat_id] = session
            self.reply_kept.emit(session.chat_id, unsaved)

    def unsaved_replies(self) -> list[UnsavedReply]:
        """The replies not saved whole: the open chat's last one, and those of chats left since (kept)."""
        sessions = [*([self.session] if self.session is not None else []), *self._kept.values()]
        return [unsaved for session in sessions if (unsaved := session.last_save.unsaved) is not None]

    def save_unsaved(self, done: Callable[[list[UnsavedReply]], Any]) -> None:
        """Try again to save every reply not saved whole (unsaved_replies); `done(those still not saved)`."""
        session, kept = self.session, dict(self._kept)
        jobs = [self.run("save the replies", lambda _job: [s.chat_id for s in kept.values() if s.close() is None],
                         "Saving the replies not saved whole…")]
        jobs[0].succeeded.connect(lambda saved: [self._kept.pop(chat_id, None) for chat_id in saved])
        if session is not None and session.last_save.unsaved is not None:
            jobs.append(self.run_on_chat("save the reply", lambda _job: session.save_unsaved(), self.apply,
                                         lambda _error: None))
        waiting = len(jobs)

        def ended() -> None:
            nonlocal waiting
            waiting -= 1
            if not waiting:
                done(self.unsaved_replies())
        for job in jobs:
            job.finished.connect(ended)

    def _retire(self, runner: Runner) -> None:
        """A closed chat's runner has finished its last job. Its pool goes too once another chat's runner has taken
        its place: the pool keeps every job it ran (and so whatever their closures held) while it lives."""
        self._retired.pop(runner, None)
        if runner is not self.chat_runner:
            runner.deleteLater()

    def shutdown(self) -> None:
        """Close the chat and cancel shared work without waiting (see finish_background_work). A summary the model is
        writing, of any chat, is written by the rules now: closing waited for the model (its time limit, its load)."""
        self._watch.stop()
        self.store.on_wait = None  # this window no longer says what the store waits for (the store may outlive it)
        for session in (self.session, *self._retired.values()):
            if session is not None:
                session.stop_summary()
        self.close()
        self.runner.cancel_all()

    def finish_background_work(self, msecs: int = CLOSE_WAIT_MS) -> bool:
        """Wait for closed chats' and cancelled work: only once the window is gone, before the store closes."""
        runners = [self.runner, *self._retired, *([self.chat_runner] if self.chat_runner else [])]
        return self.store_calls.wait(msecs) and all(runner.wait(msecs) for runner in runners)

    def apply(self, snapshot: Snapshot, rebuild_rows: bool | None = None) -> None:
        """Take a snapshot of the open chat; rows are rebuilt when what is archived changed (a summary, an undo).

        A snapshot of a chat closed since (its job's result arrives after the switch) is dropped."""
        if not self.is_open(snapshot.chat_id):
            return
        previous, self.snapshot = self.snapshot, snapshot
        changed = (previous is None or previous.partial or previous.hidden != snapshot.hidden
                   or bool(snapshot.events))
        self.snapshot_changed.emit(snapshot, changed if rebuild_rows is None else rebuild_rows)

    def rebuild(self, snapshot: Snapshot) -> None:
        self.apply(snapshot, rebuild_rows=True)

    # ---- messages -----------------------------------------------------------------------------------------------
    def save_message(self, message: Message, done: Done, failed: Failed) -> None:
        """Save a message of the user's."""
        session = self.session
        self.run_on_chat("save the message", lambda _job: session.add_messages([message]), done, failed)

    def edit_last(self, message_id: str, text: str, done: Done, failed: Failed) -> None:
        """The user's last message says `text` from now on; what followed it stays with its earlier version."""
        session = self.session
        self.run_on_chat("save the edited message", lambda _job: session.edit_last(message_id, text), done, failed)

    def reply(self, buffer: StreamBuffer, placeholder: Message, done: Done, failed: Failed,
              regenerate: bool = False) -> Job:
        """Write the reply into `placeholder`; with `regenerate` it is the last reply, written again in place."""
        session = self.session
        return self._replying("write the reply", lambda job: session.reply(
            placeholder, on_text=buffer.append, cancel=job.cancel_token, regenerate=regenerate,
            on_progress=buffer.set_progress), done, failed)

    def continue_reply(self, buffer: StreamBuffer, message_id: str, done: Done, failed: Failed) -> Job:
        """Have the model go on with the last reply; what it writes is appended to it."""
        session = self.session
        return self._replying("continue the reply", lambda job: session.continue_reply(
            message_id, on_text=buffer.append, cancel=job.cancel_token), done, failed)

    def answer(self, write: Callable[[CancelToken], Any], done: Done, failed: Failed) -> Job:
        """Answer the user's last message with `write(cancel)` (the model and the chat's tools), as a reply: Stop
        and closing the chat cancel it."""
        return self._replying("answer with tools", lambda job: write(job.cancel_token), done, failed)

    def _replying(self, label: str, write: Callable[[Job], Any], done: Done, failed: Failed) -> Job:
        self.reply_job = self.run_on_chat(label, write, done, failed)
        self.reply_job.finished.connect(lambda: setattr(self, "reply_job", None))
        return self.reply_job

    def run_tool(self, label: str, produce: Callable[[Job], tuple[Message, ...]], done: Done,
                 failed: Failed) -> Job:
        """Run a tool with a visible Stop; its call and result become messages of the chat it was started in,
        even if another chat is open by the time it finishes."""
        session = self.session

        def add(messages: tuple[Message, ...]) -> None:
            if self.session is not session:  # another chat is open: saved to its own chat, off the window's thread
                chat_id = session.chat_id
                self.store_calls.write("save the tool output",
                                       lambda store: store.add_messages(chat_id, list(messages)))
                return
            loading = self.snapshot is None  # shown once saved, as a message sent while loading
            done(messages)
            self.run_on_chat("save the tool output", lambda _job: session.add_messages(list(messages)),
                             lambda snap: (self.apply(snap, rebuild_rows=True if loading else None),
                                           self.chats_changed.emit()))

        self.command_job = job = self.runner.submit(label, produce)
        self.track(job, label + "  (Stop cancels)", add, failed, report=True)
        job.finished.connect(lambda: setattr(self, "command_job", None))
        return job

    def stop(self) -> None:
        for job in (self.reply_job, self.command_job):
            if job is not None:
                job.cancel()

    def run_command(self, name: str, argument: str, done: Callable[[CommandResult], Any]) -> Job | None:
        """A chat command of the registry through its one handler (core.chat.commands), on the chat's worker; `done`
        presents the result. A refused summary or undo leaves the chat shown as stored; one asked for while another
        is being made is refused at once. (A tool command runs beside the chat instead: see tool_messages and
        run_tool.)"""
        session, command = self.session, REGISTRY[name]
        why = self.summary_refusal(name)
        if why is not None:
            done(CommandResult(why, failed=True))
            return None

        def ran(result: CommandResult) -> None:
            if result.failed:
                self._reload_open_chat()
            elif result.snapshot is not None:
                self.apply(result.snapshot)
            done(result)

        job = self.run_on_chat(SUMMARY_WORK.get(name, command.title[0].lower() + command.title[1:]),
                               lambda job: run_command(session, SlashCommand(name, argument), job.cancel_token), ran)
        return self._changing_summaries(job, name) if name in SUMMARY_WORK else job

    def tool_messages(self, name: str, argument: str) -> Callable[[Job], tuple[Message, ...]]:
        """What a tool command gives the open chat, to run with run_tool (its handler's, core.chat.commands)."""
        session = self.session
        return lambda job: tool_messages(name, argument, job.cancel_token, session.settings)

    # ---- summaries and pins ---------------------------------------------------------------------------------------
    def summarize(self, instructions: str = "", up_to: str | None = None, failed: Failed = None) -> None:
        if self.session is not None and not self._refused("summarize", failed):
            session = self.session
            self._changing_summaries(self.run_on_chat(
                SUMMARY_WORK["summarize"], lambda _job: session.summarize_now(instructions, up_to), self.apply,
                self._reloading(failed)), "summarize")

    def undo_summary(self, failed: Failed = None) -> None:
        if self.session is not None and not self._refused("undo-summary", failed):
            session = self.session
            self._changing_summaries(self.run_on_chat(
                SUMMARY_WORK["undo-summary"], lambda _job: session.undo_last(), self.apply, self._reloading(failed)),
                "undo-summary")

    def summary_refusal(self, name: str) -> str | None:
        """Why the command `name` cannot start now: it makes or undoes a summary (SUMMARY_WORK) while one of the open
        chat is being made or undone. None for any other command, or when none is."""
        work = self._summary_work.get(self.session.chat_id) if self.session is not None else None
        if name not in SUMMARY_WORK or not work:
            return None
        return f"{WAIT_FOR_SUMMARY}: Precis is {SUMMARY_WORK[work[0]]}."

    def _refused(self, name: str, failed: Failed) -> bool:
        why = self.summary_refusal(name)
        if why is not None:
            (failed or self.failed.emit)(SummaryUnderWay(why))
        return why is not None

    def _changing_summaries(self, job: Job, name: str) -> Job:
        """Say `summarizing` of the open chat from now until the job (a summary or an undo, `name` in SUMMARY_WORK)
        and any other of the chat queued with it ends; the chat's own, whichever chat is open meanwhile."""
        session = self.session
        assert session is not None  # the job runs on the open chat's worker
        chat_id = session.chat_id
        work = self._summary_work.setdefault(chat_id, [])
        work.append(name)
        if len(work) == 1:
            self.summarizing.emit(True)
        # The model's state says it writes the summary (it said "not loaded yet" meanwhile).
        by_model = name == "summarize" and writes_summaries(session.engine, self.model.provider)
        if by_model:
            self._model_summaries += 1
            self.model.summarizing(True)

        def ended() -> None:
            work.remove(name)
            if not work:
                del self._summary_work[chat_id]
                if self.is_open(chat_id):
                    self.summarizing.emit(False)
            if by_model:
                self._model_summaries -= 1
                self.model.summarizing(self._model_summaries > 0)
        job.finished.connect(ended)
        return job

    def _reloading(self, failed: Failed) -> Callable[[BaseException], None]:
        """A summary or undo that failed (the store refused it: another Precis summarized meanwhile) leaves the
        chat shown as stored."""
        def reload(error: BaseException) -> None:
            self._reload_open_chat()
            if failed is not None:
                failed(error)
        return reload

    def show_version(self, message_id: str, position: int, done: Done) -> None:
        session = self.session
        self.run_on_chat("show the other version", lambda _job: session.show_version(message_id, position),
                         lambda snap: (done(snap), self.apply(snap)))

    def sent_prompt(self, message_id: str, done: Done) -> None:
        """What reply `message_id` was written from, to `done` (parts and tokens, or why not)."""
        session = self.session
        self.run_on_chat("read what was sent", lambda _job: session.sent_prompt(message_id), done)

    def set_pinned(self, message_id: str, pinned: bool, done: Done = None) -> None:
        session = self.session
        self.run_on_chat("pin" if pinned else "unpin", lambda _job: session.set_pinned(message_id, pinned),
                         lambda snap: (self.rebuild(snap), done and done(snap)))

    # ---- import and settings -------------------------------------------------------------------------------------
    def import_transcript(self, path: str, done: Done) -> Job:
        store = self.store
        return self.run("import", lambda _job: import_file(store, path), f"Importing {path}…", done)

    def save_settings(self, choice: ProviderChoice, key: str, policy: dict, chat: ChatSettings | None,
                      chat_id: str | None) -> str | None:
        """Save the settings but the provider (raises if they cannot be; switch_provider saves that once it works),
        `chat` those of the chat `chat_id`; then the open chat's engine follows them. Runs off the GUI thread. What to
        tell the user of a key the keyring did not keep (save_api_key), or None."""
        key_not_kept = save_api_key(choice.kind, key, choice.base_url or None) if key else None
        self.store.set_setting(SUMMARIZATION_KEY, policy)
        if chat is not None and chat_id is not None:
            self.store.update_chat_settings(chat_id, chat)
        return key_not_kept

    def settings_now(self, chat_id: str | None) -> tuple[ProviderChoice, dict, ChatSettings | None, bool, int | None]:
        """(provider choice, global policy, the chat's settings, whether an API key is saved, the model's own window
        for a chat's automatic one, if known): read from the store, the OS keyring and the model, off the window's
        thread (StoreCalls)."""
        choice = ProviderChoice.from_setting(self.store.get_setting(PROVIDER_KEY))
        chat = self.store.get_chat(chat_id).settings if chat_id is not None else None
        key_saved = choice.kind != "local" and api_key_for(choice.kind, choice.base_url or None) is not None
        # Asked only where no request is made for it: the chat's window is the model's (already asked), or the model
        # is local (its file says it); a chat of its own window on a hosted model is not worth a request to it.
        provider = self.model.provider
        asks = chat is not None and (chat.context_window is None or getattr(provider, "load", None) is not None)
        model_window = provider.context_window() if asks else None
        return choice, self.store.get_setting(SUMMARIZATION_KEY, {}) or {}, chat, key_saved, model_window
