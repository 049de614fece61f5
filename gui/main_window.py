"""The main window: chats on the left, the conversation and composer in the middle, the inspector on the right."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from ..core import commands as slash
from ..core import tools
from ..core.model.messages import Message
from ..core.providers.base import Provider
from ..core.providers.registry import api_key_for, make_provider, save_api_key
from ..core.storage.chats import GLOBAL_POLICY_KEY
from ..core.storage.importers import import_file
from ..core.storage.store import Store
from . import theme
from .chat_list import ChatList
from .composer import Composer
from .conversation import ConversationView, Row, build_rows
from .inspector import ActionState, Inspector
from .session import ChatSession, ReplyResult, Snapshot
from .settings_dialog import PROVIDER_KEY, ProviderChoice, SettingsDialog
from .welcome import WelcomePanel
from .wording import NEW_CHAT_TITLE, brief, title_from
from .workers import Job, Runner, StreamBuffer, StreamPump

log = logging.getLogger("precis.gui")

# Why the engine summarized, in the user's words.
AUTOMATIC_REASONS = {
    "overflow": "the chat no longer fit the model's window",
    "threshold": "the context reached the trigger",
}
CLOSE_WAIT_MS = 15_000
UNDO_OFFER_MS = 15_000


class MainWindow(QMainWindow):
    """Owns the store for its lifetime. `provider` overrides the configured one (tests, the screenshot command)."""

    # Emitted when a chat's snapshot has been shown (rows and inspector are up to date).
    snapshot_shown = Signal()
    reply_finished = Signal(object)
    chat_opened = Signal(str)
    model_ready = Signal()
    job_failed = Signal(str)

    def __init__(self, store: Store, provider: Provider | None = None, load_model: bool = True) -> None:
        super().__init__()
        self.store = store
        self.setWindowTitle("Precis")
        self.resize(1400, 900)
        self.runner = Runner(parent=self)
        self.chat_runner: Runner | None = None
        self.session: ChatSession | None = None
        self.snapshot: Snapshot | None = None
        self.reply_job: Job | None = None
        # The last user message being edited in the composer (edit-and-resend), if any.
        self.editing: Message | None = None
        # What the reply being written replaced (regenerate, edit-and-resend): offered back with Undo when it is done.
        self._replaced: tuple[str, list[Message], list[str]] | None = None
        self.command_job: Job | None = None
        self._pump: StreamPump | None = None
        self._closing = False
        self._provider_fixed = provider is not None
        self.provider = provider or self._configured_provider()

        self.chat_list = ChatList()
        self.conversation = ConversationView()
        self.composer = Composer()
        self.inspector = Inspector()
        self.welcome = WelcomePanel()
        self.centre_stack = QStackedWidget()
        self.centre_stack.addWidget(self.welcome)
        self.centre_stack.addWidget(self.conversation)

        centre = QWidget()
        centre_layout = QVBoxLayout(centre)
        centre_layout.setContentsMargins(0, 0, 0, 12)
        centre_layout.setSpacing(8)
        centre_layout.addWidget(self.centre_stack, 1)
        composer_box = QWidget()
        composer_layout = QVBoxLayout(composer_box)
        composer_layout.setContentsMargins(18, 0, 18, 0)
        composer_layout.addWidget(self.composer)
        centre_layout.addWidget(composer_box)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.chat_list)
        self.splitter.addWidget(centre)
        self.splitter.addWidget(self.inspector)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 3)  # of extra width, the chat takes 3 parts and the inspector 2
        self.splitter.setStretchFactor(2, 2)
        # The chat gets most of the width; the inspector its minimum at 1000 px (View → Context inspector hides it).
        centre.setMinimumWidth(400)
        self.splitter.setCollapsible(1, False)
        self.splitter.setSizes([190, 850, 360])
        self.setCentralWidget(self.splitter)

        self.progress = QProgressBar()
        self.progress.setMaximumWidth(160)
        self.progress.setRange(0, 0)
        self.progress.hide()
        self.status_undo = QPushButton("Undo")
        self.status_undo.hide()
        self._status_undo_timer = QTimer(self)
        self._status_undo_timer.setSingleShot(True)
        self._status_undo_timer.setInterval(UNDO_OFFER_MS)
        self._status_undo_timer.timeout.connect(self.status_undo.hide)
        # Which model answers and whether it can (loading, ready, the reason it cannot), and how tokens are counted.
        self.model_status = QLabel()
        self.count_status = QLabel()
        self.statusBar().addPermanentWidget(self.status_undo)
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.count_status)
        self.statusBar().addPermanentWidget(self.model_status)
        self._status_undo_action: Callable[[], None] | None = None
        self.status_undo.clicked.connect(self._run_status_undo)

        self._build_menu()
        self._connect()
        self._show_provider()
        self._update_centre()
        self._update_actions()
        self.refresh_chats()
        if load_model:
            self._load_model()

    # ---- setup ------------------------------------------------------------------------------------------------
    def _build_menu(self) -> None:
        menu = self.menuBar().addMenu("&File")
        for text, shortcut, slot in (
            ("New chat", QKeySequence.StandardKey.New, self.new_chat),
            ("Import transcript…", "Ctrl+I", self.choose_import),
            ("Settings…", QKeySequence.StandardKey.Preferences, self.open_settings),
            ("Quit", QKeySequence.StandardKey.Quit, self.close),
        ):
            action = QAction(text, self)
            action.setShortcut(shortcut)
            action.triggered.connect(slot)
            menu.addAction(action)
        chat = self.menuBar().addMenu("&Chat")
        self.edit_action = QAction("Edit and resend the last message", self)
        self.edit_action.setShortcut("Ctrl+E")
        self.edit_action.triggered.connect(self.edit_last)
        self.regenerate_action = QAction("Regenerate the last reply", self)
        self.regenerate_action.setShortcut("Ctrl+R")
        self.regenerate_action.triggered.connect(self.regenerate)
        chat.addAction(self.edit_action)
        chat.addAction(self.regenerate_action)
        view = self.menuBar().addMenu("&View")
        self.toggle_inspector = QAction("Context inspector", self, checkable=True, checked=True)
        self.toggle_inspector.setShortcut("Ctrl+Shift+I")
        self.toggle_inspector.toggled.connect(self.inspector.setVisible)
        view.addAction(self.toggle_inspector)
        self._build_theme_menu(view.addMenu("Theme"))
        search = QAction("Search all chats", self)
        search.setShortcut("Ctrl+K")
        search.triggered.connect(self.chat_list.focus_search)
        self.addAction(search)
        view.addAction(search)

    def _build_theme_menu(self, menu) -> None:
        """System / Light / Dark; the choice is saved and applied at once."""
        chosen = theme.Appearance.model_validate(self.store.get_setting(theme.APPEARANCE_KEY, {}) or {}).theme
        theme.choose(chosen)
        group = QActionGroup(self)
        self.theme_actions = {}
        for choice, text in (("system", "Follow the system"), ("light", "Light"), ("dark", "Dark")):
            action = QAction(text, self, checkable=True, checked=choice == chosen)
            action.triggered.connect(lambda _checked, choice=choice: self.set_theme(choice))
            group.addAction(action)
            menu.addAction(action)
            self.theme_actions[choice] = action

    def set_theme(self, choice: theme.ThemeChoice) -> None:
        theme.choose(choice)
        self.store.set_setting(theme.APPEARANCE_KEY, theme.Appearance(theme=choice).model_dump())
        self.theme_actions[choice].setChecked(True)
        for view in (self.conversation, self.inspector.archived_view):
            view.delegate.restyle()

    def _connect(self) -> None:
        self.chat_list.chat_selected.connect(self.open_chat)
        self.chat_list.new_requested.connect(self.new_chat)
        self.chat_list.import_requested.connect(self.choose_import)
        self.chat_list.rename_requested.connect(self._rename_chat)
        self.chat_list.delete_requested.connect(self._delete_chat)
        self.chat_list.search_changed.connect(self._search)
        self.chat_list.hit_selected.connect(self._open_hit)
        self.composer.send_requested.connect(self.submit)
        self.composer.stop_requested.connect(self.stop)
        self.composer.attach_requested.connect(self.attach_files)
        self.composer.draft_changed.connect(self._save_draft)
        self.inspector.summarize_requested.connect(self.summarize_now)
        self.inspector.undo_requested.connect(self.undo_summary)
        self.inspector.pin_requested.connect(lambda: self.pin_selected(None))
        self.inspector.record_selected.connect(self._reveal_summary)
        self.conversation.summary_selected.connect(self._select_summary)
        self.conversation.pin_requested.connect(self.set_pinned)
        self.conversation.copy_requested.connect(self._copy_message)
        self.conversation.edit_requested.connect(lambda _id: self.edit_last())
        self.conversation.regenerate_requested.connect(lambda _id: self.regenerate())
        self.conversation.summarize_up_to_requested.connect(lambda message_id: self.summarize_now(up_to=message_id))
        self.composer.cancel_requested.connect(self.cancel_edit)
        self.conversation.status.connect(lambda text: self.statusBar().showMessage(text, 3000))
        self.conversation.selectionModel().selectionChanged.connect(self._update_actions)
        for changed in (self.conversation.conversation.modelReset, self.conversation.conversation.rowsInserted,
                        self.conversation.conversation.rowsRemoved):
            changed.connect(self._update_centre)

    def _configured_provider(self) -> Provider:
        choice = ProviderChoice.from_setting(self.store.get_setting(PROVIDER_KEY))
        try:
            return make_provider(choice.kind, base_url=choice.base_url or None, model=choice.model or None,
                                 extra_buffer_types=choice.extra_buffer_types)
        except Exception as exc:  # noqa: BLE001 - a bad configuration must not stop the app opening
            self.statusBar().showMessage(f"{choice.kind}: {exc}; using the local model", 10_000)
            return make_provider("local")

    def _show_provider(self) -> None:
        self.welcome.set_provider(self.provider.name, self.provider.model)
        hosted = getattr(self.provider, "load", None) is None
        # A hosted model is not contacted until the first reply: "configured", not "ready".
        self._set_model_state("configured" if hosted else "not loaded yet")

    def _set_model_state(self, state: str, reason: str = "") -> None:
        self.model_state = state
        error = state == "unavailable"
        self.model_status.setText(f"{self.provider.name} · {self.provider.model} · {state}")
        self.model_status.setStyleSheet(f"color: {theme.current.error_text};" if error else "")
        self.model_status.setToolTip(reason or {
            "configured": "Replies come from this hosted model; it is contacted when you send a message",
            "ready": "The model is loaded and answers offline",
            "loading…": "Loading the model in the background; the window stays usable",
        }.get(state, ""))

    def _load_model(self) -> None:
        load = getattr(self.provider, "load", None)
        if load is None:
            self.model_ready.emit()
            return
        provider = self.provider
        job = self.runner.submit("load the model", lambda _job: load())
        self._set_model_state("loading…")
        self._busy(job, f"Loading the local model {provider.model}…", report_failure=False)

        def loaded(_model) -> None:
            if self.provider is provider:
                self._set_model_state("ready")
                self.model_ready.emit()

        def failed(error: str) -> None:
            if self.provider is not provider:
                return
            self._set_model_state("unavailable", error)
            self.composer.set_hint("The local model could not load (hover here for why). To chat meanwhile, "
                                   "choose a hosted provider in File → Settings.", error=True, details=error)
            self.job_failed.emit(error)

        job.succeeded.connect(loaded)
        job.failed.connect(failed)

    def _busy(self, job: Job, text: str, report_failure: bool = True) -> None:
        """Show progress while `job` runs; report its failure (unless the caller does)."""
        self.progress.show()
        self.statusBar().showMessage(text)
        if report_failure:
            job.failed.connect(self._job_failed)
        job.finished.connect(self._idle_if_done)

    def _idle_if_done(self) -> None:
        if not self.runner.busy and not (self.chat_runner and self.chat_runner.busy):
            self.progress.hide()
            if not self.statusBar().currentMessage().endswith(("failed", "ready")):
                self.statusBar().clearMessage()

    def _job_failed(self, error: str) -> None:
        self.statusBar().showMessage(brief(error), 15_000)
        self.job_failed.emit(error)

    def _update_centre(self) -> None:
        """The welcome text until the open chat has a message; the conversation after."""
        empty = self.conversation.conversation.rowCount() == 0
        self.centre_stack.setCurrentWidget(self.welcome if empty else self.conversation)

    def _update_actions(self) -> None:
        snapshot = self.snapshot if self.session is not None else None
        row = self.conversation.selected_row()
        self.inspector.set_actions(ActionState(
            chat_open=self.session is not None,
            summarizable=snapshot is not None and snapshot.summarizable,
            undoable=snapshot is not None and bool(snapshot.chain),
            selected=row.message if self.session is not None and row is not None else None,
        ))

    def _update_title(self) -> None:
        chat = next((c for c in self.chat_list.chats if self.session and c.id == self.session.chat_id), None)
        self.setWindowTitle(f"{chat.title} — Precis" if chat else "Precis")

    # ---- chats ------------------------------------------------------------------------------------------------
    def refresh_chats(self) -> None:
        if self._closing:
            return
        chats = self.store.list_chats()
        current = self.session.chat_id if self.session else None
        self.chat_list.set_chats(chats, current)
        self._update_title()
        if self.session is None and chats and not self._closing:
            self.open_chat(chats[0].id)

    def new_chat(self, title: str = NEW_CHAT_TITLE) -> str:
        chat_id = self.store.create_chat(title)
        self.refresh_chats()
        self.open_chat(chat_id)
        self.composer.edit.setFocus()
        return chat_id

    def _rename_chat(self, chat_id: str, title: str) -> None:
        self.store.rename_chat(chat_id, title)
        self.refresh_chats()

    def _delete_chat(self, chat_id: str) -> None:
        self.store.delete_chat(chat_id)
        if self.session and self.session.chat_id == chat_id:
            self._close_session()
            self.conversation.conversation.set_rows([])
        self.refresh_chats()
        self._offer_undo("Chat deleted.", lambda: (self.store.restore_chat(chat_id), self.refresh_chats(),
                                                   self.open_chat(chat_id)))

    def _offer_undo(self, text: str, action: Callable[[], Any]) -> None:
        self._status_undo_action = action
        self.statusBar().showMessage(text, UNDO_OFFER_MS)
        self.status_undo.show()
        self._status_undo_timer.start()

    def _run_status_undo(self) -> None:
        action, self._status_undo_action = self._status_undo_action, None
        self.status_undo.hide()
        if action is not None:
            action()

    def open_chat(self, chat_id: str) -> None:
        if self.session is not None and self.session.chat_id == chat_id:
            return
        self._close_session()
        self.editing = None
        self.session = ChatSession(self.store, chat_id, self.provider)
        self.chat_runner = Runner(max_threads=1, parent=self)
        session = self.session
        self.chat_list.set_chats(self.chat_list.chats, chat_id)
        self._update_title()
        self.composer.set_text(self.store.get_draft(chat_id))
        self.composer.set_hint("")
        self.inspector.hide_notice()
        self.inspector.result_card.hide()
        load = self._chat_job("open the chat", lambda _job: session.load_rows())
        load.succeeded.connect(lambda snap: self._show_rows(snap, scroll_to_end=True))
        build = self._chat_job("count the context", lambda _job: session.build_engine())
        build.succeeded.connect(self._apply_snapshot)
        build.succeeded.connect(lambda _snap: self.chat_opened.emit(chat_id))
        build.succeeded.connect(lambda _snap: self._summarize_if_due(session))

    def _summarize_if_due(self, session: ChatSession) -> None:
        """A chat opened past its trigger (an import, a smaller window) is summarized now, in the background."""
        if self.session is not session:
            return
        job = self._chat_job("summarize the older messages", lambda _job: session.summarize_if_due())
        job.succeeded.connect(lambda snap: snap is not None and self._apply_snapshot(snap))

    def _close_session(self) -> None:
        if self.session is None:
            return
        self.composer.flush_draft()
        if self.reply_job is not None:
            self.reply_job.cancel()
        if self.command_job is not None:
            self.command_job.cancel()
        runner, session = self.chat_runner, self.session
        self.session = None
        self.snapshot = None
        if runner is not None:
            runner.wait(CLOSE_WAIT_MS)
            runner.setParent(None)
        session.close()
        self._update_actions()
        self._update_title()

    def _chat_job(self, label: str, fn: Callable[[Job], Any]) -> Job:
        """Run on the open chat's serial worker; failures are shown, never silent."""
        job = self.chat_runner.submit(label, fn)
        self._busy(job, label[0].upper() + label[1:] + "…")
        return job

    def _show_rows(self, snapshot: Snapshot, scroll_to_end: bool = False) -> None:
        if self.session is None or snapshot.chat_id != self.session.chat_id:
            return
        keep_bottom = scroll_to_end or self.conversation.is_at_bottom()
        rows = build_rows(snapshot.messages, snapshot.chain, snapshot.hidden)
        self.conversation.conversation.set_rows(rows)
        if keep_bottom:
            self.conversation.scroll_to_end()

    def _apply_snapshot(self, snapshot: Snapshot, rebuild_rows: bool | None = None) -> None:
        """Show a snapshot; the rows are rebuilt only when what is archived changed (a summary or an undo).

        A snapshot of a chat closed since (its job's result arrives after the switch) is not shown."""
        if self.session is None or snapshot.chat_id != self.session.chat_id:
            return
        previous = self.snapshot
        self.snapshot = snapshot
        changed = previous is None or previous.hidden != snapshot.hidden or bool(snapshot.events)
        if rebuild_rows or (rebuild_rows is None and changed):
            self._show_rows(snapshot)
        self.inspector.show_snapshot(snapshot)
        self._update_actions()
        self.count_status.setText("" if snapshot.usage is None else
                                  "exact token counts" if snapshot.usage.exact else "estimated token counts")
        for event in snapshot.events:
            self._announce(event)
        self.snapshot_shown.emit()

    def _announce(self, event) -> None:
        record = event.record
        if event.kind == "undone":
            self.inspector.hide_notice()
            self.inspector.result_card.hide()
            self.statusBar().showMessage(f"Summary undone: {len(record.covered)} messages are back in the context",
                                         6000)
            return
        automatic = record.trigger not in ("manual",)
        self.inspector.result_card.show_record(record, automatic)
        if automatic:
            why = AUTOMATIC_REASONS.get(event.reason, event.reason)
            self.inspector.show_notice(
                f"Older messages were summarized automatically ({why}): "
                f"{event.tokens_before:,} → {event.tokens_after:,} tokens. The originals are kept.")

    # ---- sending ------------------------------------------------------------------------------------------------
    def submit(self, text: str) -> None:
        """What the composer sends: a slash command, or a message to the model. With no chat open, one is
        created, titled from the text."""
        if self.session is None:
            self.new_chat(title_from(text))
        try:
            command = slash.parse(text)
        except slash.SlashError as exc:
            first = str(exc).splitlines()[0]
            self.composer.set_hint(f"{first} {_short_help()}" if first.endswith("Commands:") else first, error=True)
            self.composer.hint.setToolTip(slash.help_text())
            return
        if command is None:
            self.send_message(slash.unescape(text))
            return
        self.run_command(command)

    def send_message(self, text: str) -> None:
        if self.reply_job is not None:
            return
        session = self.session
        message = Message(role="user", content=text)
        self._title_untitled_chat(text)
        replaced = self._tail_from(self.editing) if self.editing is not None else []
        self.editing = None
        self.composer.set_text("")
        self._save_draft("")
        self.composer.set_hint("")
        model = self.conversation.conversation
        if replaced and model.row_of(replaced[0].id) is not None:
            model.remove_from(model.row_of(replaced[0].id))
        # While the chat is still loading its rows would replace this one: it is shown once saved instead.
        loading = self.snapshot is None
        if not loading:
            model.append(Row(message=message))
        self.conversation.scroll_to_end()

        def save(_job: Job) -> Snapshot:
            if replaced:
                session.replace_tail([m.id for m in replaced], [])
            return session.add_messages([message])

        added = self._chat_job("save the message", save)
        added.succeeded.connect(lambda snap: self._apply_snapshot(snap, rebuild_rows=True if loading else None))
        added.failed.connect(lambda _error: self._restore_unsent(message))
        if replaced:
            added.failed.connect(lambda _error: self._apply_snapshot(session.snapshot(), rebuild_rows=True))
        added.succeeded.connect(lambda _snap: self.start_reply(
            ("Message edited and resent.", replaced, [message.id]) if replaced else None))

    def _title_untitled_chat(self, text: str) -> None:
        """A chat made with "New chat" takes its title from its first message."""
        chat = next((c for c in self.chat_list.chats if c.id == self.session.chat_id), None)
        if chat is not None and chat.title == NEW_CHAT_TITLE and self.conversation.conversation.rowCount() == 0:
            self.store.rename_chat(chat.id, title_from(text))
            self.refresh_chats()

    def _tail_from(self, message: Message) -> list[Message]:
        """The message and everything after it in the chat (what edit-and-resend replaces)."""
        messages = self.snapshot.messages if self.snapshot else []
        ids = [m.id for m in messages]
        return messages[ids.index(message.id):] if message.id in ids else []

    def _last_message(self, role: str) -> Message | None:
        messages = self.snapshot.messages if self.snapshot else []
        return next((m for m in reversed(messages) if m.role == role), None)

    def edit_last(self) -> None:
        """Put the last user message back in the composer; sending replaces it and what came after it."""
        if self.reply_job is not None or self.snapshot is None:
            return
        message = self._last_message("user")
        if message is None:
            self.composer.set_hint("There is no message of yours to edit.", error=True)
            return
        if message.id in self.snapshot.hidden:
            self.composer.set_hint("Your last message is inside a summary; undo the summary to edit it.", error=True)
            return
        self.editing = message
        self.composer.set_text(message.content)
        self.composer.set_hint("Editing your last message: Send replaces it and its reply (Esc cancels).")
        self.composer.edit.setFocus()

    def cancel_edit(self) -> None:
        if self.editing is not None:
            self.editing = None
            self.composer.set_text(self.store.get_draft(self.session.chat_id) if self.session else "")
            self.composer.set_hint("Edit cancelled.")

    def regenerate(self) -> None:
        """Replace the last reply with a new one; the old one comes back with Undo."""
        if self.reply_job is not None or self.snapshot is None or not self.snapshot.messages:
            return
        last = self.snapshot.messages[-1]
        if last.role != "assistant":
            self.composer.set_hint("The last message is not a reply; there is nothing to regenerate.", error=True)
            return
        session = self.session
        model = self.conversation.conversation
        if model.row_of(last.id) is not None:
            model.remove_from(model.row_of(last.id))
        removed = self._chat_job("remove the reply", lambda _job: session.replace_tail([last.id], []))
        removed.succeeded.connect(self._apply_snapshot)
        removed.failed.connect(lambda _error: self._apply_snapshot(session.snapshot(), rebuild_rows=True))
        removed.succeeded.connect(lambda _snap: self.start_reply(("Reply regenerated.", [last], [])))

    def _offer_replaced_back(self, replaced: tuple[str, list[Message], list[str]], reply: Message) -> None:
        """After a regenerate or an edit-and-resend: Undo puts the replaced messages back instead of the new ones."""
        text, old, new_ids = replaced
        session = self.session
        added = [*new_ids, reply.id]

        def undo() -> None:
            if self.session is not session:  # another chat is open now: nothing of this one is touched
                return
            job = self._chat_job("put the earlier messages back", lambda _job: session.replace_tail(added, old))
            job.succeeded.connect(lambda snap: self._apply_snapshot(snap, rebuild_rows=True))
            job.failed.connect(lambda error: self.composer.set_hint(f"Could not undo: {error}", error=True))

        self._offer_undo(text, undo)

    def _restore_unsent(self, message: Message) -> None:
        """A failed send keeps the typed text."""
        number = self.conversation.conversation.row_of(message.id)
        if number is not None:
            self.conversation.conversation.remove_from(number)
        if not self.composer.text().strip():
            self.composer.set_text(message.content)
            self._save_draft(message.content)
        self.composer.set_hint("Not sent; your text is back in the box.", error=True)

    def start_reply(self, replaced: tuple[str, list[Message], list[str]] | None = None) -> None:
        session = self.session
        self._replaced = replaced
        placeholder = Message(role="assistant", content="", incomplete=True)
        model = self.conversation.conversation
        model.append(Row(message=placeholder, streaming=True))
        if self.conversation.is_at_bottom():
            self.conversation.scroll_to_end()
        buffer = StreamBuffer()

        def show(text: str) -> None:
            model.update_message(placeholder.with_changes(content=text), streaming=True)

        self._pump = StreamPump(buffer, show, self)
        job = self._chat_job("write the reply", lambda job: session.reply(buffer, job.cancel_token, placeholder))
        self.reply_job = job
        self.composer.set_streaming(True)
        self.inspector.set_busy(True)
        job.succeeded.connect(self._reply_done)
        job.failed.connect(lambda error: self._reply_failed(placeholder, error))
        job.finished.connect(self._reply_cleanup)

    def _reply_done(self, result: ReplyResult) -> None:
        if self._pump is not None:
            self._pump.stop()
        self.conversation.conversation.update_message(result.message, streaming=False, error=result.problem)
        if result.problem:
            self.statusBar().showMessage(f"Reply stopped: {brief(result.problem)}", 10_000)
        elif self.model_state in ("configured", "not loaded yet"):
            self._set_model_state("ready")  # a reply came back, however the model got loaded
        self._apply_snapshot(result.snapshot)
        if self._replaced is not None:
            self._offer_replaced_back(self._replaced, result.message)
        self.refresh_chats()
        self.reply_finished.emit(result)

    def _reply_failed(self, placeholder: Message, error: str) -> None:
        if self._pump is not None:
            self._pump.stop()
        self.conversation.conversation.update_message(placeholder.with_changes(content=""), streaming=False,
                                                      error=error)

    def _reply_cleanup(self) -> None:
        self.reply_job = None
        self._replaced = None
        self._pump = None
        self.composer.set_streaming(False)
        self.inspector.set_busy(False)

    def stop(self) -> None:
        for job in (self.reply_job, self.command_job):
            if job is not None:
                job.cancel()

    # ---- slash commands and tools ------------------------------------------------------------------------------
    def run_command(self, command: slash.SlashCommand) -> None:
        name, argument = command.name, command.argument
        self.composer.set_text("")
        self._save_draft("")
        self.composer.set_hint("")
        if name == "context":
            self.toggle_inspector.setChecked(True)
            usage = self.snapshot.usage if self.snapshot else None
            if usage is not None:
                self.composer.set_hint(f"Context: {usage.total:,} / {usage.available:,} tokens ({usage.ratio:.0%}), "
                                       f"{len(self.snapshot.chain)} summaries in the chain.")
        elif name == "summarize":
            self.summarize_now(argument)
        elif name == "undo-summary":
            self.undo_summary()
        elif name == "history":
            self.show_history()
        elif name in ("pin", "unpin"):
            self.pin_selected(name == "pin")
        elif name == "run":
            self._run_tool(f"Running: {argument}", lambda job: tools.run_command_messages(argument, job.cancel_token))
        elif name == "grep":
            self._run_tool(f"Searching: {argument}", lambda job: tools.grep_messages(argument, job.cancel_token))

    def _run_tool(self, label: str, produce: Callable[[Job], tuple[Message, Message]]) -> None:
        """Run a tool off the GUI thread with a visible Stop; its call and result become messages of the chat."""
        session = self.session
        job = self.runner.submit(label, produce)
        self.command_job = job
        self._busy(job, label + "  (Stop cancels)")
        self.composer.set_streaming(True)

        def add(messages: tuple[Message, Message]) -> None:
            if self.session is not session:  # another chat is open now: the output still goes to its own chat
                self.store.add_messages(session.chat_id, list(messages))
                return
            loading = self.snapshot is None  # as in send_message: shown once saved
            if not loading:
                for message in messages:
                    self.conversation.conversation.append(Row(message=message))
            self.conversation.scroll_to_end()
            added = self._chat_job("save the tool output", lambda _job: session.add_messages(list(messages)))
            added.succeeded.connect(lambda snap: self._apply_snapshot(snap, rebuild_rows=True if loading else None))
            added.succeeded.connect(lambda _snap: self.refresh_chats())

        def done() -> None:
            self.command_job = None
            self.composer.set_streaming(self.reply_job is not None)

        job.succeeded.connect(add)
        job.failed.connect(lambda error: self.composer.set_hint(error, error=True))
        job.finished.connect(done)

    def attach_files(self, paths: list[str]) -> None:
        if self.session is None:
            self.new_chat(title_from(", ".join(Path(path).name for path in paths)))

        def read(_job: Job) -> tuple[Message, ...]:
            messages: list[Message] = []
            for path in paths:
                messages.extend(tools.read_file_messages(path))
            return tuple(messages)

        self._run_tool(f"Attaching {len(paths)} file(s)", read)

    def summarize_now(self, instructions: str = "", up_to: str | None = None) -> None:
        if self.session is None:
            return
        session = self.session
        job = self._chat_job("summarize", lambda _job: session.summarize_now(instructions, up_to))
        job.succeeded.connect(self._apply_snapshot)
        job.failed.connect(lambda error: self.composer.set_hint(error, error=True))

    def undo_summary(self) -> None:
        if self.session is None:
            return
        session = self.session
        job = self._chat_job("undo the summary", lambda _job: session.undo_last())
        job.succeeded.connect(self._apply_snapshot)
        job.failed.connect(lambda error: self.composer.set_hint(error, error=True))

    def pin_selected(self, pinned: bool | None) -> None:
        row = self.conversation.selected_row()
        if row is None or row.message is None:
            rows = [r for r in self.conversation.conversation.rows() if r.message is not None]
            row = rows[-1] if rows else None
        if row is None:
            self.composer.set_hint("Select a message to pin.", error=True)
            return
        self.set_pinned(row.message.id, not row.message.pinned if pinned is None else pinned)

    def set_pinned(self, message_id: str, pinned: bool) -> None:
        session = self.session
        job = self._chat_job("pin" if pinned else "unpin", lambda _job: session.set_pinned(message_id, pinned))
        job.succeeded.connect(lambda snap: self._apply_snapshot(snap, rebuild_rows=True))
        job.succeeded.connect(lambda _snap: self._select_message(message_id))

    def _select_message(self, message_id: str) -> None:
        """Keep a message selected across a rebuild of the rows (pin, then unpin at once)."""
        number = self.conversation.conversation.row_of(message_id)
        if number is not None:
            self.conversation.setCurrentIndex(self.conversation.conversation.index(number))

    def show_history(self) -> None:
        if self.snapshot is None:
            return
        lines = ["# Summaries"]
        for record in self.snapshot.chain:
            lines.append(f"- depth {record.depth}, {len(self.snapshot.archived(record.id))} messages, "
                         f"{record.tokens_before:,} → {record.tokens_after:,} tokens: {record.text[:300]}")
        if not self.snapshot.chain:
            lines.append("- none yet")
        lines.append("\n# Recent messages")
        visible = [m for m in self.snapshot.messages if m.id not in self.snapshot.hidden]
        for message in visible[-20:]:
            text = message.content.strip().replace("\n", " ")[:200] or slash_tool_line(message)
            lines.append(f"- **{message.role}**: {text}")
        dialog = QDialog(self)
        dialog.setWindowTitle("History")
        dialog.resize(640, 520)
        view = QTextEdit(dialog)
        view.setReadOnly(True)
        view.setMarkdown("\n".join(lines))
        QVBoxLayout(dialog).addWidget(view)
        dialog.setModal(False)
        dialog.show()

    def _copy_message(self, message_id: str) -> None:
        number = self.conversation.conversation.row_of(message_id)
        if number is not None:
            QGuiApplication.clipboard().setText(self.conversation.conversation.row_at(number).message.content)
            self.statusBar().showMessage("Message copied", 3000)

    def _select_summary(self, record_id: str) -> None:
        self.toggle_inspector.setChecked(True)
        self.inspector.select_record(record_id)

    def _reveal_summary(self, record_id: str) -> None:
        number = self.conversation.conversation.row_of(f"summary:{record_id}")
        if number is not None:
            self.conversation.scrollTo(self.conversation.model().index(number, 0))

    # ---- import, search, settings ------------------------------------------------------------------------------
    def choose_import(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import a transcript", "",
                                              "Transcripts (*.jsonl *.json);;All files (*)")
        if path:
            self.import_transcript(path)

    def import_transcript(self, path: str) -> Job:
        store = self.store
        job = self.runner.submit("import", lambda _job: import_file(store, path))
        self._busy(job, f"Importing {path}…")

        def imported(chat_id: str) -> None:
            self.statusBar().showMessage("Imported", 4000)
            self.refresh_chats()
            self.open_chat(chat_id)

        job.succeeded.connect(imported)
        return job

    def _search(self, text: str) -> None:
        self.chat_list.show_hits(self.store.search(text) if text else None)

    def _open_hit(self, hit) -> None:
        def reveal(chat_id: str) -> None:
            if chat_id != hit.chat_id:
                return
            key = f"summary:{hit.archived_by}" if hit.archived_by else hit.message_id
            number = self.conversation.conversation.row_of(key)
            if number is None:
                number = self.conversation.conversation.row_of(hit.message_id)
            if number is not None:
                index = self.conversation.model().index(number, 0)
                self.conversation.scrollTo(index, ConversationView.ScrollHint.PositionAtCenter)
                self.conversation.setCurrentIndex(index)
            self.chat_opened.disconnect(reveal)

        if self.session is not None and self.session.chat_id == hit.chat_id:
            self.chat_opened.connect(reveal)
            reveal(hit.chat_id)
        else:
            self.chat_opened.connect(reveal)
            self.open_chat(hit.chat_id)

    def open_settings(self) -> SettingsDialog:
        dialog = self.settings_dialog()
        dialog.accepted.connect(lambda: self.apply_settings(dialog))
        dialog.open()
        return dialog

    def settings_dialog(self) -> SettingsDialog:
        choice = ProviderChoice.from_setting(self.store.get_setting(PROVIDER_KEY))
        chat = self.store.get_chat(self.session.chat_id).settings if self.session else None
        key_saved = choice.kind != "local" and api_key_for(choice.kind) is not None
        return SettingsDialog(choice, self.store.get_setting(GLOBAL_POLICY_KEY, {}) or {}, chat, key_saved, self)

    def apply_settings(self, dialog: SettingsDialog) -> None:
        """Save what the dialog holds (it only accepts valid values) and rebuild the open chat's engine."""
        choice = dialog.provider_choice()
        key = dialog.entered_key()
        try:
            if key:
                save_api_key(choice.kind, key)
            self.store.set_setting(PROVIDER_KEY, choice.to_setting())
            self.store.set_setting(GLOBAL_POLICY_KEY, dialog.policy_values())
            chat = dialog.chat_settings()
            if chat is not None and self.session is not None:
                self.store.update_chat_settings(self.session.chat_id, chat)
        except Exception as exc:  # noqa: BLE001 - shown to the user; nothing half-applied is kept in memory
            QMessageBox.warning(self, "Settings not saved", str(exc))
            return
        if not self._provider_fixed:
            self.provider = self._configured_provider()
            self._show_provider()
            self.composer.set_hint("")
            self._load_model()
        if self.session is not None:
            chat_id = self.session.chat_id
            self._close_session()
            self.open_chat(chat_id)

    # ---- closing ------------------------------------------------------------------------------------------------
    def _save_draft(self, text: str) -> None:
        if self.session is not None:
            try:
                self.store.set_draft(self.session.chat_id, text)
            except Exception as exc:  # noqa: BLE001 - the text stays in the box; say why it was not saved
                self.statusBar().showMessage(f"Draft not saved: {exc}", 10_000)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        """Stop the work cleanly: a reply being received is cancelled and what arrived is saved."""
        self._closing = True
        self._close_session()
        self.runner.cancel_all()
        self.runner.wait(CLOSE_WAIT_MS)
        event.accept()


def _short_help() -> str:
    return " ".join(f"/{name}" for name in slash.COMMANDS)


def slash_tool_line(message: Message) -> str:
    if message.tool_calls:
        return ", ".join(f"{c.name} {c.arguments}" for c in message.tool_calls)[:200]
    return f"({message.name or 'tool'} output)"

