"""The main window: chats on the left, the conversation and composer in the middle, the inspector on the right.

Layout and wiring only. The chat operations and the work behind them are the ChatController's (controller.py);
the window's parts are: the menus (menus.py), which chat is shown (chat_switching.py), what the composer sends
(sending.py) and what the user is told (feedback.py).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from ..core.chat import commands as slash
from ..core.chat.snapshot import Snapshot
from ..core.context.prompt_parts import SUMMARY
from ..core.model.records import local_time
from ..core.model.titles import NEW_CHAT_TITLE
from ..core.models.catalogue import MODELS_FOLDER
from ..core.providers.base import Provider
from ..core.settings import ProviderChoice
from ..core.storage.importers import ImportResult
from ..core.storage.store import Store
from .appearance import AppearanceControl
from .chat_list import ChatList
from .chat_switching import ChatSwitcher
from .closing import OPEN_THAT_CHAT, CloseGuard
from .composer import Composer
from .consent_card import ConsentCard
from .controller import SUMMARY_WORK, ChatController
from .conversation import ConversationView
from .draft_count import DraftCount
from .exporting import choose_export
from .feedback import Feedback
from .inspector import ActionState, Inspector
from .inspector_section import remember_folds
from .menus import Menus
from .model_suggestion import ModelSuggestionCard
from .sending import Sender
from .sent_window import SentWindow
from .settings_dialog import SettingsDialog
from .status import OPENING_NOTICE_MS, StatusLine
from .text_window import show_text
from .tool_service import ToolService
from .tool_turn import ToolTurns
from .tools_page import ToolsPage
from .welcome import WelcomePanel
from .window_size import remember_size, restore_size
from .wording import failure_text, reply_finished_text
from .workers import Job

log = logging.getLogger("precis.gui")


class MainWindow(QMainWindow):
    """Owns the store for its lifetime. `provider` overrides the configured one (tests, the screenshot command)."""

    # Emitted when a chat's snapshot has been shown (rows and inspector are up to date).
    snapshot_shown = Signal()
    reply_finished = Signal(object)
    job_failed = Signal(str)
    settings_opened = Signal(object)  # the settings dialog, shown once its values were read

    def __init__(self, store: Store, provider: Provider | None = None, load_model: bool = True) -> None:
        super().__init__()
        self.store = store
        self.remembers_size = True  # its size is saved as it closes (a screenshot's window is not the user's)
        self.setWindowTitle("Precis")
        self.chat = ChatController(store, provider, parent=self)
        self.tools = ToolService(store)  # the MCP servers of mcp.json, started in the background below
        self.tools.start()

        self.chat_list = ChatList()
        self.conversation = ConversationView()
        self.composer = Composer()
        self.consent_card = ConsentCard()  # a tool call waiting for the user's consent, above the message box
        # A larger model from the catalogue, suggested once to someone chatting with the built-in one.
        self.model_suggestion = ModelSuggestionCard(store, self.chat.store_calls.set_setting)
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
        composer_layout.setSpacing(8)
        composer_layout.addWidget(self.model_suggestion)
        composer_layout.addWidget(self.consent_card)
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
        # On a wider window each column grows in proportion: the inspector's chain (eight columns) fits from 1600 px.
        self.splitter.setSizes([190, 800, 410])
        self.setCentralWidget(self.splitter)
        self.status = StatusLine(self.statusBar())
        if store.read_only:
            self.status.show_read_only(str(store.path))
        if store.opening_notice:
            self.status.tell(store.opening_notice, OPENING_NOTICE_MS)
        restore_size(self, store)
        remember_folds(self.inspector, store, self.chat.store_calls.set_setting)

        self.feedback = Feedback(self.chat, self.status, self.composer, self.inspector, self.job_failed.emit)
        self.switcher = ChatSwitcher(self.chat, self.chat_list, self.conversation, self.composer, self.inspector,
                                  self.status, self.feedback, parent=self)
        self.handlers = self._command_handlers()
        self.tool_turns = ToolTurns(self.chat, self.tools, self.conversation, self.composer, self.inspector,
                                    self.status, self.consent_card, parent=self)
        self.sending = Sender(self.chat, self.switcher, self.composer, self.conversation, self.inspector, self.status,
                              self.feedback, self.tool_turns, lambda name, argument: self.handlers[name](argument),
                              parent=self)
        self.appearance = AppearanceControl(store, self.chat.store_calls.set_setting,
                                            [self.conversation, self.inspector.archived_view], [self.composer.edit])
        self.menus = Menus(self, self.appearance, self.handlers)
        self.draft_count = DraftCount(self.composer, self.chat)
        self.close_guard = CloseGuard(self, self.chat, self.status)
        self.actions = self.menus.actions
        self.theme_actions = self.menus.theme_actions
        self._connect()
        self.chat.model.use_configured_provider()
        self._show_provider()
        self._update_centre()
        self.update_actions()
        self.switcher.refresh_chats()
        self.focus_message_box()  # what is typed at start goes into the message box, not to a button
        if load_model:
            self.chat.model.load()

    # ---- wiring -----------------------------------------------------------------------------------------------
    def _command_handlers(self) -> dict[str, Callable[[str], object]]:
        """What each registered command does in the window, given its argument ("" from a menu): a chat command
        through its one handler in the core (run_chat_command), the window's own commands here."""
        own: dict[str, Callable[[str], object]] = {
            "new-chat": lambda _arg: self.switcher.new_chat(),
            "import": lambda _arg: self.choose_import(),
            "export": lambda _arg: choose_export(self, self.chat, self.switcher.open_title() or "chat", self.feedback,
                                                 self.status),
            "settings": lambda _arg: self.open_settings(),
            "quit": lambda _arg: self.close(),
            "edit-last": lambda _arg: self.sending.edit_last(),
            "regenerate": lambda _arg: self.sending.regenerate(),
            "continue": lambda _arg: self.sending.continue_reply(),
            "use": lambda arg: self.sending.use_tool(arg),
            "mcp": self.show_servers,
            "help": lambda _arg: show_text(self, "Commands", "```\n" + slash.help_text() + "\n```"),
            "inspector": lambda _arg: self.inspector.setVisible(self.actions["inspector"].isChecked()),
            "search": lambda _arg: self.chat_list.focus_search(),
            "zoom-in": lambda _arg: self.appearance.zoom(1),
            "zoom-out": lambda _arg: self.appearance.zoom(-1),
            "zoom-reset": lambda _arg: self.appearance.zoom(0),
        }
        chat = {name: functools.partial(self.run_chat_command, name)
                for name, command in slash.REGISTRY.items() if command.handler is not None}
        return {**own, **chat}

    def run_chat_command(self, name: str, argument: str) -> None:
        """A chat command: a tool runs beside the chat with a visible Stop; /pin and /unpin from a menu act on the
        selected message; what the others answer is shown where the command's kind of answer goes."""
        if self.chat.session is None:
            self.feedback.hint_error("Open a chat first.")
            return
        if slash.REGISTRY[name].tool:
            self.sending.run_tool(f"{slash.REGISTRY[name].title}: {argument}", self.chat.tool_messages(name, argument))
            return
        if name in ("pin", "unpin") and not argument:
            row = self.conversation.selected_row()
            argument = row.message.id if row is not None and row.message is not None else ""

        def present(result: slash.CommandResult) -> None:
            if result.failed:
                self.feedback.hint_error(result.text)
            elif name == "history":
                show_text(self, "History", "```\n" + result.text + "\n```")
            elif name == "context":
                self._show_inspector()
                self.composer.set_hint(result.text)
            else:
                self.status.tell(result.text)

        self.chat.run_command(name, argument, present)

    def _connect(self) -> None:
        chat, conversation, model = self.chat, self.conversation, self.conversation.rows_model
        self.switcher.connect()
        self.switcher.switched.connect(self.feedback.chat_switched)
        self.switcher.switched.connect(self.sending.chat_switched)
        self.switcher.title_changed.connect(self.setWindowTitle)
        self.switcher.shown.connect(self.update_actions)
        self.switcher.shown.connect(self.snapshot_shown.emit)
        self.switcher.closed.connect(self.update_actions)
        self.switcher.summary_revealed.connect(self.select_summary)
        self.sending.connect()
        self.sending.reply_finished.connect(self.reply_finished.emit)
        self.sending.reply_finished.connect(lambda result: self.status.announce(reply_finished_text(result)))
        self.sending.reply_finished.connect(lambda result: self.model_suggestion.reply_finished(result,
                                                                                               chat.model.provider))
        self.model_suggestion.choose_requested.connect(lambda: self.open_settings(at_catalogue=True))
        chat.work_started.connect(self.status.working)
        chat.store_waiting.connect(self.status.working)  # until the write ends, as the work it holds up
        chat.store_calls.write_ended.connect(lambda: chat.busy or self.status.idle())
        chat.work_finished.connect(lambda: chat.busy or self.status.idle())
        chat.failed.connect(self.feedback.job_failed)
        chat.reply_kept.connect(lambda chat_id, unsaved: self.status.offer_undo(
            f"The chat you left has a reply not saved whole ({unsaved.why.rstrip('.')}): it is kept whole, to save "
            "when that chat is open again; closing Precis asks first.", OPEN_THAT_CHAT,
            lambda: self.open_chat(chat_id), lasting=True))
        chat.model.notice.connect(self.status.tell)
        chat.store_calls.failed.connect(self.feedback.job_failed)
        chat.model.state_changed.connect(
            lambda state, reason: self.status.show_model(chat.model.provider.name, chat.model.provider.model, state, reason))
        chat.model.failed.connect(self.feedback.model_failed)
        chat.model.switch_failed.connect(self.feedback.switch_failed)
        self.chat_list.import_requested.connect(self.choose_import)
        self.chat_list.files_dropped.connect(lambda files: [self.import_transcript(path) for path in files])
        self.chat_list.chosen.connect(self.focus_message_box)
        self.inspector.summarize_requested.connect(self.summarize_now)
        chat.summarizing.connect(self._summarizing)
        self.inspector.undo_requested.connect(lambda: chat.undo_summary(self.feedback.hint_failure))
        self.inspector.pin_requested.connect(lambda: self.pin_selected(None))
        self.inspector.record_selected.connect(self._reveal_summary)
        self.inspector.message_selected.connect(self._reveal_message)
        self.inspector.prompt_shown.connect(chat.show_prompt)
        self.inspector.archive_wanted.connect(lambda snapshot, record_id: chat.run(
            "list the archived messages", lambda _job: snapshot.archived_rows(record_id),
            "Listing the archived messages…", self.inspector.show_archive))
        chat.show_prompt(self.inspector.prompt_section.expanded)
        conversation.summary_selected.connect(self.select_summary)
        conversation.pin_requested.connect(self.set_pinned)
        conversation.edit_requested.connect(lambda _id: self.sending.edit_last())
        conversation.regenerate_requested.connect(lambda _id: self.sending.regenerate())
        conversation.continue_requested.connect(lambda _id: self.sending.continue_reply())
        conversation.summarize_up_to_requested.connect(lambda message_id: self.summarize_now(up_to=message_id))
        conversation.sent_requested.connect(self.show_sent)
        conversation.status.connect(lambda text: self.status.tell(text, 3000))
        conversation.clear_search_requested.connect(self.chat_list.clear_search)
        conversation.version_requested.connect(self.sending.show_version)
        conversation.selectionModel().selectionChanged.connect(self.update_actions)
        for changed in (model.modelReset, model.rowsInserted, model.rowsRemoved):
            changed.connect(self._update_centre)

    def _summarizing(self, summarizing: bool) -> None:
        """While a summary or an undo is being made, every way to ask for another waits: the inspector's buttons
        and the Chat menu's items are disabled (a shortcut too); /summarize and a message's menu are refused in
        words by the controller."""
        self.inspector.set_summarizing(summarizing)
        for name in SUMMARY_WORK:
            self.actions[name].setEnabled(not summarizing)

    def focus_message_box(self) -> None:
        """What is typed next goes into the message box: after choosing a chat, importing one, closing a dialog."""
        self.composer.edit.setFocus()

    def _settings_closed(self) -> None:
        """The window is active again (not every platform gives it back by itself) and typing goes to the message
        box, after Qt has put the focus back where it was before the dialog (the search box, say)."""
        self.activateWindow()
        QTimer.singleShot(0, self.focus_message_box)

    def _show_inspector(self) -> None:
        self.actions["inspector"].setChecked(True)
        self.inspector.setVisible(True)

    def _show_provider(self) -> None:
        self.welcome.set_provider(self.chat.model.provider.name, self.chat.model.provider.model)
        self.chat.model.reset_state()

    def _update_centre(self) -> None:
        """The welcome text until the open chat has a message; the conversation after."""
        empty = self.conversation.rows_model.rowCount() == 0
        self.centre_stack.setCurrentWidget(self.welcome if empty else self.conversation)

    def update_actions(self) -> None:
        open_chat = self.chat.session is not None
        snapshot = self.chat.snapshot if open_chat else None
        row = self.conversation.selected_row()
        self.inspector.set_actions(ActionState(
            chat_open=open_chat,
            summarizable=snapshot is not None and snapshot.summarizable,
            undoable=snapshot is not None and bool(snapshot.chain),
            selected=row.message if open_chat and row is not None else None,
        ))

    # ---- what the user does most, for the command line and tests ------------------------------------------------
    def open_chat(self, chat_id: str) -> None:
        self.switcher.open_chat(chat_id)

    def new_chat(self, title: str = NEW_CHAT_TITLE) -> Job:
        return self.switcher.new_chat(title)

    def refresh_chats(self) -> None:
        self.switcher.refresh_chats()

    def submit(self, text: str) -> None:
        self.sending.submit(text)

    # ---- messages ---------------------------------------------------------------------------------------------
    def summarize_now(self, instructions: str = "", up_to: str | None = None) -> None:
        self.chat.summarize(instructions, up_to, self.feedback.hint_failure)

    def pin_selected(self, pinned: bool | None) -> None:
        row = self.conversation.selected_row()
        if row is None or row.message is None:
            rows = [r for r in self.conversation.rows_model.rows() if r.message is not None]
            row = rows[-1] if rows else None
        if row is None:
            self.composer.set_hint("Select a message to pin.", error=True)
            return
        self.set_pinned(row.message.id, not row.message.pinned if pinned is None else pinned)

    def set_pinned(self, message_id: str, pinned: bool) -> None:
        def keep_selected(_snapshot: Snapshot) -> None:
            # Keep the message selected across the rebuild of the rows (pin, then unpin at once).
            number = self.conversation.rows_model.row_of(message_id)
            if number is not None:
                self.conversation.setCurrentIndex(self.conversation.rows_model.index(number))
            self.status.tell("Pinned: this message is always sent and never summarized." if pinned else
                             "Unpinned: this message can be summarized again.")

        self.chat.set_pinned(message_id, pinned, keep_selected)

    def show_sent(self, message_id: str) -> SentWindow:
        """A reply's What was sent, in a window of its own, read on the chat's worker."""
        number = self.conversation.rows_model.row_of(message_id)
        message = self.conversation.rows_model.row_at(number).message if number is not None else None
        window = SentWindow(self, local_time(message.created_at) if message is not None else "this chat")
        window.source_chosen.connect(
            lambda kind, source: self.select_summary(source) if kind == SUMMARY else self._reveal_message(source))
        window.show()
        self.chat.sent_prompt(message_id, window.show_result)
        return window

    def select_summary(self, record_id: str) -> None:
        self._show_inspector()
        self.inspector.select_record(record_id)

    def _reveal_summary(self, record_id: str) -> None:
        number = self.conversation.rows_model.row_of(f"summary:{record_id}")
        if number is not None:
            self.conversation.scrollTo(self.conversation.model().index(number, 0))

    def _reveal_message(self, message_id: str) -> None:
        """Show a recalled message: its own row, or the summary that archived it."""
        snapshot = self.chat.snapshot
        if not self.conversation.reveal(message_id) and snapshot is not None and message_id in snapshot.hidden:
            self.conversation.reveal(f"summary:{snapshot.hidden[message_id]}")

    # ---- import and settings ------------------------------------------------------------------------------
    def choose_import(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import a transcript", "",
                                              "Transcripts (*.jsonl *.json);;All files (*)")
        if path:
            self.import_transcript(path)

    def import_transcript(self, path: str) -> Job:
        def imported(result: ImportResult) -> None:
            notice = result.notice()
            if result.chat_ids:  # an account export: how many chats, and what was left out
                self.status.tell(f"Imported {result.described()}" + (f"; {notice}." if notice else "."), 15_000)
            elif notice:
                self.status.tell(f"Imported; {notice}.", 15_000)
            else:
                self.status.tell("Imported.")
            self.switcher.refresh_chats()
            self.switcher.open_chat(result.chat_id)
            self.focus_message_box()

        return self.chat.import_transcript(path, imported)

    def open_settings(self, at_catalogue: bool = False, at_tools: bool = False) -> None:
        """Read the settings off the window's thread (the store may wait for another writer, the OS keyring for the
        user to unlock it), then show them (`at_catalogue`: at Local model's catalogue, `at_tools`: at Tools);
        settings_opened says when."""
        chat_id = self.chat.session.chat_id if self.chat.session is not None else None
        self.chat.store_calls.newest("read the settings", lambda _store: self.chat.settings_now(chat_id),
                                     lambda values: self._show_settings(values, at_catalogue, at_tools))

    def show_servers(self, argument: str) -> None:
        """/mcp: Settings → Tools, each server with its state; /mcp restart NAME first starts that one again, as its
        Restart button does (the terminal chat's /mcp does the same through McpServers.restart)."""
        try:
            name = slash.mcp_restart(argument)
        except ValueError as exc:
            self.feedback.hint_error(str(exc))
            return
        servers = self.tools.servers
        if name is not None and (servers is None or name not in servers.configs or not servers.restart(name)):
            state = servers.status(name).state if servers is not None and name in servers.configs else "not in mcp.json"
            self.feedback.hint_error(f"/mcp restart: {name!r} is {state}; only a server that failed or ended is "
                                     "started again")
            return
        self.open_settings(at_tools=True)

    def _show_settings(self, values: tuple, at_catalogue: bool, at_tools: bool = False) -> None:
        tools_page = ToolsPage(self.tools, self.chat.store_calls)
        tools_page.settings_saved.connect(self.tool_turns.offer_again)  # a tool switched off is no longer counted
        dialog = SettingsDialog(*values, self, tools_page=tools_page, models_dir=self.store.path.parent / MODELS_FOLDER)
        if at_catalogue:
            dialog.show_catalogue()
        elif at_tools:
            dialog.tabs.setCurrentWidget(dialog.tools_tab)
        dialog.accepted.connect(lambda: self.apply_settings(dialog))
        dialog.finished.connect(self._settings_closed)
        dialog.open()
        self.settings_opened.emit(dialog)

    def apply_settings(self, dialog: SettingsDialog) -> None:
        """Save what the dialog holds (it only accepts valid values); the provider follows once it works (see
        ModelControl.switch_provider), then the open chat's engine is rebuilt on the new settings."""
        choice = dialog.provider_choice()
        values = (choice, dialog.entered_key(), dialog.policy_values(), dialog.chat_settings(),
                  self.chat.session.chat_id if self.chat.session else None)
        # Saved off the GUI thread (a write can wait for another writer); nothing half-applied is kept in memory.
        self.chat.store_calls.write("save the settings", lambda _store: self.chat.save_settings(*values),
                                    lambda key_not_kept: self._settings_saved(choice, key_not_kept),
                                    lambda error: QMessageBox.warning(self, "Settings not saved", failure_text(error)))

    def _settings_saved(self, choice: ProviderChoice, key_not_kept: str | None) -> None:
        """The provider follows the settings saved; a key the keyring did not keep is said plainly (not modal)."""
        if key_not_kept:
            box = QMessageBox(QMessageBox.Icon.Warning, "API key not stored", key_not_kept, parent=self)
            box.setObjectName("keyNotStored")
            box.open()
            self.status.tell(key_not_kept, 30_000)
        self.chat.model.switch_provider(choice, self._settings_applied)

    def _settings_applied(self, switched: bool) -> None:
        if switched:
            self._show_provider()
            self.model_suggestion.provider_changed(self.chat.model.provider)
            self.composer.set_hint("")
        if self.chat.session is not None:
            chat_id = self.chat.session.chat_id
            self.switcher.close_chat()
            self.switcher.open_chat(chat_id)

    # ---- closing ------------------------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        """Stop the work cleanly: a reply being received is cancelled and what arrived is saved. While a reply is not
        saved whole, the user is asked first (CloseGuard) and the window stays open until they choose."""
        if not self.close_guard.allows_close():
            event.ignore()
            return
        self.switcher.closing = True
        if self.remembers_size:
            remember_size(self, self.chat.store_calls.set_setting)
        self.switcher.remember_place()
        self.composer.flush_draft()
        self.chat.shutdown()
        self.tools.stop()
        # Settings left open would keep the app running without its window (a SIGTERM did not end it), and its
        # download or Test connection going: closing it pauses the one (kept, resumed next time) and stops the other.
        for dialog in self.findChildren(SettingsDialog):
            dialog.reject()
        event.accept()
