"""The main window: chats on the left, the conversation and composer in the middle, the inspector on the right.

Layout and wiring only: the chat operations and the work behind them are the ChatController's (gui/controller.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QMainWindow,
    QMenu,
    QMessageBox,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from ..core import commands as slash
from ..core import tools
from ..core.model.messages import Message
from ..core.providers.base import Provider
from ..core.storage.importers import ImportResult
from ..core.storage.store import ChatInfo, Store
from . import theme
from .chat_list import ChatList
from .composer import Composer
from .controller import ChatController
from .conversation import ConversationView, Row, build_rows
from .history import show_history, show_text
from .inspector import ActionState, Inspector
from .session import ReplyResult, Snapshot
from .settings_dialog import SettingsDialog
from .status import StatusLine
from .welcome import WelcomePanel
from .wording import NEW_CHAT_TITLE, brief, title_from
from .workers import Job, StreamBuffer, StreamPump

log = logging.getLogger("precis.gui")

# Why the engine summarized, in the user's words.
AUTOMATIC_REASONS = {
    "overflow": "the chat no longer fit the model's window",
    "threshold": "the context reached the trigger",
}


@dataclass(frozen=True)
class Replaced:
    """What a regenerate or an edit-and-resend replaced, offered back with an Undo button once the reply is done."""

    text: str  # what happened, for the status bar
    label: str  # the Undo button's text: what it undoes
    old: list[Message]
    new_ids: list[str]


class MainWindow(QMainWindow):
    """Owns the store for its lifetime. `provider` overrides the configured one (tests, the screenshot command)."""

    # Emitted when a chat's snapshot has been shown (rows and inspector are up to date).
    snapshot_shown = Signal()
    reply_finished = Signal(object)
    job_failed = Signal(str)

    def __init__(self, store: Store, provider: Provider | None = None, load_model: bool = True) -> None:
        super().__init__()
        self.store = store
        self.setWindowTitle("Precis")
        self.resize(1400, 900)
        self.chat = ChatController(store, provider, parent=self)
        # The last user message being edited in the composer (edit-and-resend), if any.
        self.editing: Message | None = None
        self._closing = False

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
        self.status = StatusLine(self.statusBar())

        self._build_menu()
        self._connect()
        self.chat.use_configured_provider()
        self._show_provider()
        self._update_centre()
        self._update_actions()
        self.refresh_chats()
        if load_model:
            self.chat.load_model()

    # ---- setup ------------------------------------------------------------------------------------------------
    def _build_menu(self) -> None:
        """The menus and shortcuts, from the command registry: an action per command, in its menu."""
        handlers = self._command_handlers()
        self.actions: dict[str, QAction] = {}
        menus: dict[str, QMenu] = {}
        for menu_name, commands in slash.menus().items():
            menus[menu_name] = menu = self.menuBar().addMenu("&" + menu_name)
            for command in commands:
                action = QAction(command.title, self)
                action.setShortcut(command.shortcut)
                action.setToolTip(command.help)
                action.triggered.connect(lambda _checked=False, handler=handlers[command.name]: handler(""))
                menu.addAction(action)
                self.addAction(action)  # the shortcut works wherever the focus is
                self.actions[command.name] = action
        self.actions["inspector"].setCheckable(True)
        self.actions["inspector"].setChecked(True)
        menus["View"].insertMenu(self.actions["search"], self._build_theme_menu())

    def _command_handlers(self) -> dict[str, Callable[[str], object]]:
        """What each registered command does in the window, given its argument ("" from a menu)."""
        return {
            "new-chat": lambda _arg: self.new_chat(),
            "import": lambda _arg: self.choose_import(),
            "settings": lambda _arg: self.open_settings(),
            "quit": lambda _arg: self.close(),
            "edit-last": lambda _arg: self.edit_last(),
            "regenerate": lambda _arg: self.regenerate(),
            "context": lambda _arg: self._show_context(),
            "summarize": self.summarize_now,
            "undo-summary": lambda _arg: self.chat.undo_summary(self._hint_error),
            "history": lambda _arg: self.chat.snapshot is not None and show_history(self, self.chat.snapshot),
            "pin": lambda _arg: self.pin_selected(True),
            "unpin": lambda _arg: self.pin_selected(False),
            "run": lambda arg: self._run_tool(f"Running: {arg}",
                                              lambda job: tools.run_command_messages(arg, job.cancel_token,
                                                                                             timeout=self.chat.run_timeout())),
            "grep": lambda arg: self._run_tool(f"Searching: {arg}",
                                               lambda job: tools.grep_messages(arg, job.cancel_token)),
            "inspector": lambda _arg: self.inspector.setVisible(self.actions["inspector"].isChecked()),
            "search": lambda _arg: self.chat_list.focus_search(),
            "help": lambda _arg: show_text(self, "Commands", "```\n" + slash.help_text() + "\n```"),
        }

    def _show_inspector(self) -> None:
        self.actions["inspector"].setChecked(True)
        self.inspector.setVisible(True)

    def _show_context(self) -> None:
        self._show_inspector()
        snapshot = self.chat.snapshot
        if snapshot is not None and snapshot.usage is not None:
            usage = snapshot.usage
            self.composer.set_hint(f"Context: {usage.total:,} / {usage.available:,} tokens ({usage.ratio:.0%}), "
                                   f"{len(snapshot.chain)} summaries in the chain.")

    def _build_theme_menu(self) -> QMenu:
        """System / Light / Dark; the choice is saved and applied at once."""
        menu = QMenu("Theme", self)
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
        return menu

    def set_theme(self, choice: theme.ThemeChoice) -> None:
        theme.choose(choice)
        self.chat.store_calls.set_setting(theme.APPEARANCE_KEY, theme.Appearance(theme=choice).model_dump())
        self.theme_actions[choice].setChecked(True)
        for view in (self.conversation, self.inspector.archived_view):
            view.delegate.restyle()

    def _connect(self) -> None:
        chat, conversation, model = self.chat, self.conversation, self.conversation.conversation
        chat.rows_loaded.connect(lambda snap: self._show_rows(snap, scroll_to_end=True))
        chat.snapshot_changed.connect(self._show_snapshot)
        chat.chats_changed.connect(self.refresh_chats)
        chat.work_started.connect(self.status.working)
        chat.work_finished.connect(lambda: chat.busy or self.status.idle())
        chat.failed.connect(self._job_failed)
        chat.notice.connect(self.status.tell)
        chat.store_calls.failed.connect(self._job_failed)
        chat.model_state_changed.connect(
            lambda state, reason: self.status.show_model(chat.provider.name, chat.provider.model, state, reason))
        chat.model_failed.connect(self._model_failed)
        self.chat_list.chat_selected.connect(self.open_chat)
        self.chat_list.new_requested.connect(self.new_chat)
        self.chat_list.import_requested.connect(self.choose_import)
        self.chat_list.rename_requested.connect(lambda chat_id, title: (self.store.rename_chat(chat_id, title),
                                                                        self.refresh_chats()))
        self.chat_list.delete_requested.connect(self._delete_chat)
        self.chat_list.search_changed.connect(self._search)
        self.chat_list.hit_selected.connect(self._open_hit)
        self.composer.send_requested.connect(self.submit)
        self.composer.stop_requested.connect(chat.stop)
        self.composer.attach_requested.connect(self.attach_files)
        self.composer.draft_changed.connect(self._save_draft)
        self.composer.cancel_requested.connect(self.cancel_edit)
        self.inspector.summarize_requested.connect(self.summarize_now)
        self.inspector.undo_requested.connect(lambda: chat.undo_summary(self._hint_error))
        self.inspector.pin_requested.connect(lambda: self.pin_selected(None))
        self.inspector.record_selected.connect(self._reveal_summary)
        self.inspector.message_selected.connect(self._reveal_message)
        conversation.summary_selected.connect(self._select_summary)
        conversation.pin_requested.connect(self.set_pinned)
        conversation.edit_requested.connect(lambda _id: self.edit_last())
        conversation.regenerate_requested.connect(lambda _id: self.regenerate())
        conversation.summarize_up_to_requested.connect(lambda message_id: self.summarize_now(up_to=message_id))
        conversation.status.connect(lambda text: self.status.tell(text, 3000))
        conversation.clear_search_requested.connect(self.chat_list.clear_search)
        conversation.selectionModel().selectionChanged.connect(self._update_actions)
        for changed in (model.modelReset, model.rowsInserted, model.rowsRemoved):
            changed.connect(self._update_centre)

    def _show_provider(self) -> None:
        self.welcome.set_provider(self.chat.provider.name, self.chat.provider.model)
        self.chat.reset_model_state()

    def _model_failed(self, error: str) -> None:
        self.composer.set_hint("The local model could not load (hover here for why). To chat meanwhile, "
                               "choose a hosted provider in File → Settings.", error=True, details=error)
        self.job_failed.emit(error)

    def _job_failed(self, error: str) -> None:
        self.status.failed(error)
        self.job_failed.emit(error)

    def _hint_error(self, error: str) -> None:
        self.composer.set_hint(error, error=True)

    def _update_centre(self) -> None:
        """The welcome text until the open chat has a message; the conversation after."""
        empty = self.conversation.conversation.rowCount() == 0
        self.centre_stack.setCurrentWidget(self.welcome if empty else self.conversation)

    def _update_actions(self) -> None:
        open_chat = self.chat.session is not None
        snapshot = self.chat.snapshot if open_chat else None
        row = self.conversation.selected_row()
        self.inspector.set_actions(ActionState(
            chat_open=open_chat,
            summarizable=snapshot is not None and snapshot.summarizable,
            undoable=snapshot is not None and bool(snapshot.chain),
            selected=row.message if open_chat and row is not None else None,
        ))

    def _update_title(self) -> None:
        chat = next((c for c in self.chat_list.chats if self.chat.session and c.id == self.chat.session.chat_id),
                    None)
        self.setWindowTitle(f"{chat.title} — Precis" if chat else "Precis")

    # ---- chats ------------------------------------------------------------------------------------------------
    def refresh_chats(self) -> None:
        if not self._closing:
            self.chat.store_calls.newest("list the chats", lambda store: store.list_chats(), self._show_chats)

    def _show_chats(self, chats: list[ChatInfo]) -> None:
        if self._closing:
            return
        current = self.chat.session.chat_id if self.chat.session else None
        self.chat_list.set_chats(chats, current)
        self._update_title()
        if self.chat.session is None and chats:
            self.open_chat(chats[0].id)

    def new_chat(self, title: str = NEW_CHAT_TITLE) -> str:
        chat_id = self.store.create_chat(title)
        self.refresh_chats()
        self.open_chat(chat_id)
        self.composer.edit.setFocus()
        return chat_id

    def _delete_chat(self, chat_id: str) -> None:
        self.store.delete_chat(chat_id)
        if self.chat.is_open(chat_id):
            self._close_chat()
            self.conversation.conversation.set_rows([])
        self.refresh_chats()
        self.status.offer_undo("Chat deleted.", "Undo delete", lambda: (self.store.restore_chat(chat_id), self.refresh_chats(),
                                                         self.open_chat(chat_id)))

    def open_chat(self, chat_id: str) -> None:
        if self.chat.is_open(chat_id):
            return
        self._close_chat()
        self.status.withdraw_undo()  # what it would undo belongs to the chat just closed
        self.editing = None
        self.chat_list.set_chats(self.chat_list.chats, chat_id)
        self.composer.set_text(self.store.get_draft(chat_id))
        self.composer.set_hint("")
        self.inspector.hide_notice()
        self.inspector.result_card.hide()
        self.chat.open(chat_id)
        self._update_title()

    def _close_chat(self) -> None:
        if self.chat.session is None:
            return
        self.composer.flush_draft()
        self.chat.close()
        self._update_actions()
        self._update_title()

    def _show_rows(self, snapshot: Snapshot, scroll_to_end: bool = False) -> None:
        keep_bottom = scroll_to_end or self.conversation.is_at_bottom()
        self.conversation.conversation.set_rows(build_rows(snapshot.messages, snapshot.chain, snapshot.hidden))
        if keep_bottom:
            self.conversation.scroll_to_end()

    def _show_snapshot(self, snapshot: Snapshot, rebuild_rows: bool) -> None:
        if rebuild_rows:
            self._show_rows(snapshot)
        self.inspector.show_snapshot(snapshot)
        self._update_actions()
        self.status.show_counting(None if snapshot.usage is None else snapshot.usage.exact)
        for event in snapshot.events:
            self._announce(event)
        self.snapshot_shown.emit()

    def _announce(self, event) -> None:
        record = event.record
        if event.kind == "undone":
            self.inspector.hide_notice()
            self.inspector.result_card.hide()
            self.status.tell(f"Summary undone: {len(record.covered)} messages are back in the context.")
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
        if self.chat.session is None:
            self.new_chat(title_from(text))
        if text.strip() == "/":  # nothing after the slash: nothing to run, and nothing left behind to prefix the next
            self._clear_composer()
            self.composer.set_hint(f"Type a command after the slash: {slash.short_help()}")
            self.composer.hint.setToolTip(slash.help_text())
            return
        try:
            command = slash.parse(text)
        except slash.SlashError as exc:
            first = str(exc).splitlines()[0]
            self.composer.set_hint(f"{first} {slash.short_help()}" if first.endswith("Commands:") else first, error=True)
            self.composer.hint.setToolTip(slash.help_text())
            self.composer.edit.selectAll()  # typing replaces the bad command instead of extending it
            return
        if command is None:
            self.send_message(slash.unescape(text))
            return
        self.run_command(command)

    def _clear_composer(self) -> None:
        self.composer.set_text("")
        self._save_draft("")
        self.composer.set_hint("")

    def send_message(self, text: str) -> None:
        """Show and save the message, then write the reply. Sent while editing, it replaces the edited message
        and what came after it (offered back with Undo)."""
        if self.chat.reply_job is not None:
            return
        message = Message(role="user", content=text)
        self._title_untitled_chat(text)
        replaced = self._tail_from(self.editing) if self.editing is not None else []
        self.editing = None
        self._clear_composer()
        model = self.conversation.conversation
        if replaced and model.row_of(replaced[0].id) is not None:
            model.remove_from(model.row_of(replaced[0].id))
        # While the chat is still loading its rows would replace this one: it is shown once saved instead.
        loading = self.chat.snapshot is None
        if not loading:
            model.append(Row(message=message))
        self.conversation.scroll_to_end()

        def saved(snapshot: Snapshot) -> None:
            self.chat.apply(snapshot, rebuild_rows=True if loading else None)
            self.refresh_chats()  # the chat list counts the message while the reply is written
            self.start_reply(Replaced("Message edited and resent.", "Undo edit", replaced, [message.id])
                             if replaced else None)

        self.chat.save_message(message, replaced, saved, lambda _error: self._restore_unsent(message))

    def _title_untitled_chat(self, text: str) -> None:
        """A chat made with "New chat" takes its title from its first message."""
        chat = next((c for c in self.chat_list.chats if c.id == self.chat.session.chat_id), None)
        if chat is not None and chat.title == NEW_CHAT_TITLE and self.conversation.conversation.rowCount() == 0:
            self.store.rename_chat(chat.id, title_from(text))
            self.refresh_chats()

    def _tail_from(self, message: Message) -> list[Message]:
        """The message and everything after it in the chat (what edit-and-resend replaces)."""
        messages = self.chat.snapshot.messages if self.chat.snapshot else []
        ids = [m.id for m in messages]
        return messages[ids.index(message.id):] if message.id in ids else []

    def edit_last(self) -> None:
        """Put the last user message back in the composer; sending replaces it and what came after it."""
        snapshot = self.chat.snapshot
        if self.chat.reply_job is not None or snapshot is None:
            return
        message = next((m for m in reversed(snapshot.messages) if m.role == "user"), None)
        if message is None:
            self.composer.set_hint("There is no message of yours to edit.", error=True)
            return
        if message.id in snapshot.hidden:
            self.composer.set_hint("Your last message is inside a summary; undo the summary to edit it.", error=True)
            return
        self.editing = message
        self.composer.set_text(message.content)
        self.composer.set_hint("Editing your last message: Send replaces it and its reply (Esc cancels).")
        self.composer.edit.setFocus()

    def cancel_edit(self) -> None:
        if self.editing is not None:
            self.editing = None
            self.composer.set_text(self.store.get_draft(self.chat.session.chat_id) if self.chat.session else "")
            self.composer.set_hint("Edit cancelled.")

    def regenerate(self) -> None:
        """Replace the last reply with a new one; the old one comes back with Undo."""
        snapshot = self.chat.snapshot
        if self.chat.reply_job is not None or snapshot is None or not snapshot.messages:
            return
        last = snapshot.messages[-1]
        if last.role != "assistant":
            self.composer.set_hint("The last message is not a reply; there is nothing to regenerate.", error=True)
            return
        model = self.conversation.conversation
        if model.row_of(last.id) is not None:
            model.remove_from(model.row_of(last.id))
        self.chat.replace_tail("remove the reply", [last.id], [], lambda snap: (
            self.chat.apply(snap), self.start_reply(Replaced("Reply regenerated.", "Undo regenerate", [last], []))))

    def _offer_replaced_back(self, replaced: Replaced, reply: Message) -> None:
        """After a regenerate or an edit-and-resend: Undo puts the replaced messages back instead of the new ones."""
        session = self.chat.session

        def undo() -> None:
            if self.chat.session is session:  # another chat is open now: nothing of this one is touched
                self.chat.replace_tail("put the earlier messages back", [*replaced.new_ids, reply.id],
                                       replaced.old, self.chat.rebuild,
                                       lambda error: self.composer.set_hint(f"Could not undo: {error}", error=True))

        self.status.offer_undo(replaced.text, replaced.label, undo)

    def _restore_unsent(self, message: Message) -> None:
        """A failed send keeps the typed text."""
        number = self.conversation.conversation.row_of(message.id)
        if number is not None:
            self.conversation.conversation.remove_from(number)
        if not self.composer.text().strip():
            self.composer.set_text(message.content)
            self._save_draft(message.content)
        self.composer.set_hint("Not sent; your text is back in the box.", error=True)

    def start_reply(self, replaced: Replaced | None = None) -> None:
        """Stream the reply into a placeholder row; `replaced` (what a regenerate or an edit replaced) is offered
        back with Undo when the reply is done."""
        placeholder = Message(role="assistant", content="", incomplete=True)
        model = self.conversation.conversation
        model.append(Row(message=placeholder, streaming=True))
        if self.conversation.is_at_bottom():
            self.conversation.scroll_to_end()
        buffer = StreamBuffer()
        pump = StreamPump(buffer, lambda text: model.update_message(placeholder.with_changes(content=text),
                                                                     streaming=True), self)

        def done(result: ReplyResult) -> None:
            pump.stop()
            model.update_message(result.message, streaming=False, error=result.problem)
            stopped_because = getattr(self.chat.provider, "stopped_because", None)  # the local model's process died
            if result.problem:
                self.status.tell(f"Reply stopped: {brief(result.problem)}", 10_000)
                if stopped_because:
                    self.chat.set_model_state(f"stopped ({stopped_because})", "The model process stopped; the next "
                                              "message restarts it. The part of the reply that arrived is kept.")
            elif self.chat.model_state in ("configured", "not loaded yet") or self.chat.model_state.startswith("stopped"):
                self.chat.set_model_state("ready")  # a reply came back, however the model got loaded
            self.chat.apply(result.snapshot)
            if replaced is not None:
                self._offer_replaced_back(replaced, result.message)
            self.refresh_chats()
            self.reply_finished.emit(result)

        def failed(error: str) -> None:
            pump.stop()
            model.update_message(placeholder.with_changes(content=""), streaming=False, error=error)

        job = self.chat.reply(buffer, placeholder, done, failed)
        self.composer.set_streaming(True)
        self.inspector.set_busy(True)
        job.finished.connect(lambda: (self.composer.set_streaming(False), self.inspector.set_busy(False)))

    # ---- slash commands and tools ------------------------------------------------------------------------------
    def run_command(self, command: slash.SlashCommand) -> None:
        self._clear_composer()
        self._command_handlers()[command.name](command.argument)

    def _run_tool(self, label: str, produce: Callable[[Job], tuple[Message, ...]]) -> None:
        """Run a tool off the GUI thread with a visible Stop; its call and result become messages of the chat."""

        def show(messages: tuple[Message, ...]) -> None:
            if self.chat.snapshot is not None:  # while loading they are shown once saved
                for message in messages:
                    self.conversation.conversation.append(Row(message=message))
            self.conversation.scroll_to_end()

        job = self.chat.run_tool(label, produce, show, self._hint_error)
        self.composer.set_streaming(True)
        job.finished.connect(lambda: self.composer.set_streaming(self.chat.reply_job is not None))

    def attach_files(self, paths: list[str]) -> None:
        if self.chat.session is None:
            self.new_chat(title_from(", ".join(Path(path).name for path in paths)))

        def read(_job: Job) -> tuple[Message, ...]:
            return tuple(message for path in paths for message in tools.read_file_messages(path))

        self._run_tool(f"Attaching {len(paths)} file(s)", read)

    def summarize_now(self, instructions: str = "", up_to: str | None = None) -> None:
        self.chat.summarize(instructions, up_to, self._hint_error)

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
        def keep_selected(_snapshot: Snapshot) -> None:
            # Keep the message selected across the rebuild of the rows (pin, then unpin at once).
            number = self.conversation.conversation.row_of(message_id)
            if number is not None:
                self.conversation.setCurrentIndex(self.conversation.conversation.index(number))
            self.status.tell("Pinned: this message is always sent and never summarized." if pinned else
                             "Unpinned: this message can be summarized again.")

        self.chat.set_pinned(message_id, pinned, keep_selected)

    def _select_summary(self, record_id: str) -> None:
        self._show_inspector()
        self.inspector.select_record(record_id)

    def _reveal_summary(self, record_id: str) -> None:
        number = self.conversation.conversation.row_of(f"summary:{record_id}")
        if number is not None:
            self.conversation.scrollTo(self.conversation.model().index(number, 0))

    def _reveal_message(self, message_id: str) -> None:
        """Show a recalled message: its own row, or the summary that archived it."""
        snapshot = self.chat.snapshot
        if not self.conversation.reveal(message_id) and snapshot is not None and message_id in snapshot.hidden:
            self.conversation.reveal(f"summary:{snapshot.hidden[message_id]}")

    # ---- import, search, settings ------------------------------------------------------------------------------
    def choose_import(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import a transcript", "",
                                              "Transcripts (*.jsonl *.json);;All files (*)")
        if path:
            self.import_transcript(path)

    def import_transcript(self, path: str) -> Job:
        def imported(result: ImportResult) -> None:
            notice = result.notice()
            if notice:
                self.status.tell(f"Imported; {notice}.", 15_000)
            else:
                self.status.tell("Imported.")
            self.refresh_chats()
            self.open_chat(result.chat_id)

        return self.chat.import_transcript(path, imported)

    def _search(self, text: str) -> None:
        """Search all chats in the background (the list shows the newest answer) and highlight the words in the
        conversation and the archive; "" goes back to the chats and clears the highlight."""
        if text:
            self.chat.store_calls.newest("search", lambda store: store.search(text), self.chat_list.show_hits)
        else:
            self.chat.store_calls.forget("search")
            self.chat_list.show_hits(None)
        for view in (self.conversation, self.inspector.archived_view):
            view.set_highlight(text)

    def _open_hit(self, hit) -> None:
        """Open the chat of a search hit at the message; an archived one also in its summary's archive."""
        def reveal(chat_id: str) -> None:
            if chat_id != hit.chat_id:
                return
            self.chat.chat_opened.disconnect(reveal)
            record_id = self.chat.snapshot.hidden.get(hit.message_id) if self.chat.snapshot else None
            if record_id is None:
                self.conversation.reveal(hit.message_id)
                return
            self.conversation.reveal(f"summary:{record_id}")
            self._select_summary(record_id)
            self.inspector.details.setCurrentWidget(self.inspector.archived_view)
            self.inspector.archived_view.reveal(hit.message_id)

        self.chat.chat_opened.connect(reveal)
        if self.chat.is_open(hit.chat_id):
            if self.chat.snapshot is not None:  # else it is opening: revealed once open
                reveal(hit.chat_id)
        else:
            self.open_chat(hit.chat_id)

    def open_settings(self) -> SettingsDialog:
        dialog = self.settings_dialog()
        dialog.accepted.connect(lambda: self.apply_settings(dialog))
        dialog.open()
        return dialog

    def settings_dialog(self) -> SettingsDialog:
        return SettingsDialog(*self.chat.settings_now(), self)

    def apply_settings(self, dialog: SettingsDialog) -> None:
        """Save what the dialog holds (it only accepts valid values); the provider follows once it works (see
        ChatController.switch_provider), then the open chat's engine is rebuilt on the new settings."""
        try:
            self.chat.save_settings(dialog.provider_choice(), dialog.entered_key(), dialog.policy_values(),
                                    dialog.chat_settings())
        except Exception as exc:  # noqa: BLE001 - shown to the user; nothing half-applied is kept in memory
            QMessageBox.warning(self, "Settings not saved", str(exc))
            return
        self.chat.switch_provider(dialog.provider_choice(), self._settings_applied)

    def _settings_applied(self, switched: bool) -> None:
        if switched:
            self._show_provider()
            self.composer.set_hint("")
        if self.chat.session is not None:
            chat_id = self.chat.session.chat_id
            self._close_chat()
            self.open_chat(chat_id)

    # ---- closing ------------------------------------------------------------------------------------------------
    def _save_draft(self, text: str) -> None:
        if self.chat.session is not None:
            try:
                self.store.set_draft(self.chat.session.chat_id, text)
            except Exception as exc:  # noqa: BLE001 - the text stays in the box; say why it was not saved
                self.status.tell(f"Draft not saved: {exc}", 10_000)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        """Stop the work cleanly: a reply being received is cancelled and what arrived is saved."""
        self._closing = True
        self.composer.flush_draft()
        self.chat.shutdown()
        event.accept()
