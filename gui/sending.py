"""What the composer sends and what comes back: messages and their streamed replies, slash commands and tools,
edit-and-resend (the earlier message and its reply kept as a version), regenerate (the earlier reply kept as a
version), Continue (a reply cut at its limit goes on) and the composer's draft."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from ..core.chat import commands as slash
from ..core.chat.rows import Row
from ..core.chat.snapshot import ReplyResult, Snapshot, UnsavedReply
from ..core.chat.streaming import joint
from ..core.model.messages import Message
from ..core.model.titles import title_from
from ..core.model.tools import unknown_tool
from ..core.tools import bounded as tools
from .chat_switching import ChatSwitcher
from .composer import Composer
from .controller import ChatController
from .conversation import ConversationView
from .feedback import Feedback
from .inspector import Inspector
from .status import NOT_ANSWERING, StatusLine
from .tool_turn import ToolTurns
from .wording import brief, failure_text, reply_stopped_text, waiting_text
from .workers import Job, StreamBuffer, StreamPump

SAVE_AGAIN = "Save again"  # the status bar's button for a reply not saved whole


class Sender(QObject):
    """The window's sending, over the parts it sends from and shows replies in; a slash command goes to
    `run_command(name, argument)`."""

    reply_finished = Signal(object)  # a ReplyResult, once the reply is shown

    def __init__(self, chat: ChatController, switcher: ChatSwitcher, composer: Composer, conversation: ConversationView,
                 inspector: Inspector, status: StatusLine, feedback: Feedback, tool_turns: ToolTurns,
                 run_command: Callable[[str, str], object], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.chat, self.switcher, self.composer, self.conversation = chat, switcher, composer, conversation
        self.inspector, self.status, self.feedback = inspector, status, feedback
        self.tool_turns = tool_turns  # a message in a chat with tools is answered through the tool loop
        self._run_command = run_command
        # The last user message being edited in the composer (edit-and-resend), if any.
        self.editing: Message | None = None
        self.text_before_edit = ""
        self._unsaved: UnsavedReply | None = None  # the reply shown as not saved whole, if any

    def connect(self) -> None:
        self.composer.send_requested.connect(self.submit)
        self.composer.stop_requested.connect(self.chat.stop)
        self.composer.attach_requested.connect(self.attach_files)
        self.composer.draft_changed.connect(self.save_draft)
        self.composer.cancel_requested.connect(self.cancel_edit)
        self.tool_turns.finished.connect(self._turn_finished)
        self.chat.snapshot_changed.connect(self._show_unsaved)

    def submit(self, text: str) -> None:
        """What the composer sends: a slash command, or a message to the model. With no chat open, one is
        created, titled from the text."""
        if self.chat.session is None:  # sent once the chat is made; if it cannot be, the text stays in the composer
            if not self.switcher.creating:
                self.switcher.new_chat(title_from(text), then=lambda _chat_id: self.submit(text))
            return
        if text.strip() == "/":  # nothing after the slash: nothing to run, and nothing left behind to prefix the next
            self.clear_composer()
            self.composer.set_hint(f"Type a command after the slash: {slash.short_help()}")
            self.composer.hint.setToolTip(slash.help_text())
            return
        try:
            command = slash.parse(text)
        except slash.SlashError as exc:
            self.composer.set_hint(str(exc), error=True)
            self.composer.hint.setToolTip(slash.help_text())
            self.composer.edit.selectAll()  # typing replaces the bad command instead of extending it
            return
        if command is None:
            self.send_message(slash.unescape(text))
            return
        self.run_command(command)

    def clear_composer(self) -> None:
        self.composer.set_text("")
        self.save_draft("")
        self.composer.set_hint("")

    def use_tool(self, argument: str) -> None:
        """/use TOOL MESSAGE: send the message; the model answers it by calling TOOL first. Refused before anything
        is saved (the command back in the box, to be mended) when the chat has no tool of that name."""
        try:
            tool, text = slash.forced_tool(argument)
        except ValueError as exc:
            self._refuse_use(argument, str(exc))
            return
        session = self.chat.session
        if not self.tool_turns.may_have_tools():
            self._refuse_use(argument, "This chat has no tools: name a workspace folder in Settings → This chat, or "
                                       "add MCP servers in Settings → Tools.")
            return
        # The tools are known once offered (as the chat opens); until then the tool loop refuses an unknown one.
        unknown = unknown_tool(tool, session.tools) if session is not None and session.tools else None
        if unknown:
            self._refuse_use(argument, unknown[0].upper() + unknown[1:] + ".")
            return
        self.send_message(text, force=tool)

    def _refuse_use(self, argument: str, why: str) -> None:
        if not self.composer.text().strip():
            self.composer.set_text(f"/use {argument}")
            self.save_draft(self.composer.text())
        self.composer.set_hint(why, error=True)

    def send_message(self, text: str, force: str | None = None) -> None:
        """Show and save the message, then write the reply (`force`: the tool the model must call first). Sent while
        editing, it is a new version of the edited message; what followed the earlier one stays with it (‹ › on the
        message pages back)."""
        if self.chat.reply_job is not None:
            return
        self.switcher.title_untitled_chat(text)
        editing, self.editing = self.editing, None
        self.clear_composer()
        if editing is not None:
            self.resend(editing, text)
            return
        message = Message(role="user", content=text)
        model = self.conversation.rows_model
        # While the chat is still loading its rows would replace this one: it is shown once saved instead.
        loading = self.chat.snapshot is None
        if not loading:
            model.append(Row(message=message))
        self.conversation.scroll_to_end()

        def saved(snapshot: Snapshot) -> None:
            self.chat.apply(snapshot, rebuild_rows=True if loading else None)
            self.switcher.refresh_chats()  # the chat list counts the message while the reply is written
            self.start_reply(force=force)

        self.chat.save_message(message, saved, lambda error: self.restore_unsent(message, error))

    def resend(self, edited: Message, text: str) -> None:
        """The edited message says `text` from now on and is answered again."""
        model = self.conversation.rows_model

        def saved(snapshot: Snapshot) -> None:
            self.show_from(edited.id, snapshot)
            self.chat.apply(snapshot)
            self.conversation.scroll_to_end()
            self.start_reply(edited=True)

        def not_saved(error: BaseException) -> None:
            self.restore_unsent(edited.with_changes(content=text), error, keep_row=True)

        number = model.row_of(edited.id)
        if number is not None:  # what followed it goes with the earlier version
            model.remove_from(number + 1)
            model.update_message(edited.with_changes(content=text))
        self.chat.edit_last(edited.id, text, saved, not_saved)

    def show_from(self, message_id: str, snapshot: Snapshot) -> None:
        """The rows from this message on, as the snapshot has them (another version of it, and its branch)."""
        model = self.conversation.rows_model
        number = model.row_of(message_id)
        ids = [m.id for m in snapshot.messages]
        if number is None or message_id not in ids:
            return
        model.remove_from(number)
        for message in snapshot.messages[ids.index(message_id):]:
            model.append(Row(message=message))

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
        self.text_before_edit = self.composer.text()  # back in the box if the edit is cancelled
        self.composer.set_text(message.content)
        self.composer.set_hint("Editing your last message: Send answers the new version; ‹ › on it pages back to "
                               "this one and its reply (Esc cancels).")
        self.composer.edit.setFocus()

    def chat_switched(self) -> None:
        """Another chat opens: the message being edited is not this chat's, nor the reply shown as not saved whole
        (offered again, Save again with it, if its chat is opened again while it still is not)."""
        self.editing = None
        self._unsaved = None

    def cancel_edit(self) -> None:
        if self.editing is not None:
            self.editing = None
            self.composer.set_text(self.text_before_edit)
            self.composer.set_hint("Edit cancelled.")

    def regenerate(self) -> None:
        """Write the last reply again in its place; the earlier text stays as a version of it ("‹ 1/2 ›"). Your last
        message left unanswered (its reply failed before its first word) is answered."""
        snapshot = self.chat.snapshot
        if self.chat.reply_job is not None or snapshot is None:
            return
        try:
            last = slash.regenerate_target(snapshot.messages)
        except slash.NothingToRegenerate as exc:
            self.composer.set_hint(str(exc), error=True)
            return
        self.start_reply(regenerate=last)  # None: the message left unanswered is answered

    def continue_reply(self) -> None:
        """The model goes on with the last reply (cut at its token limit, or stopped); appended to it."""
        snapshot = self.chat.snapshot
        if self.chat.reply_job is not None or snapshot is None or not snapshot.messages:
            return
        last = snapshot.messages[-1]
        if last.role != "assistant":
            self.composer.set_hint("The last message is not a reply; there is nothing to continue.", error=True)
            return
        self.start_reply(going_on=last)

    def show_version(self, message_id: str, position: int) -> None:
        """Show another version of a regenerated reply, or of an edited message with its branch; the one shown is
        the one sent from now on."""
        self.chat.show_version(message_id, position, lambda snap: self.show_from(message_id, snap))

    def restore_unsent(self, message: Message, error: BaseException, keep_row: bool = False) -> None:
        """A failed send keeps the typed text (an edited message's row shows it as stored again) and says why (a
        read-only data folder, another program keeping it busy)."""
        number = self.conversation.rows_model.row_of(message.id)
        if keep_row and self.chat.snapshot is not None:
            self.chat.rebuild(self.chat.snapshot)
        elif number is not None:
            self.conversation.rows_model.remove_from(number)
        if not self.composer.text().strip():
            self.composer.set_text(message.content)
            self.save_draft(message.content)
        self.composer.set_hint(f"Not sent: {failure_text(error).rstrip('.')}; your text is back in the box.",
                               error=True)

    def start_reply(self, edited: bool = False, regenerate: Message | None = None,
                    going_on: Message | None = None, force: str | None = None) -> None:
        """Stream the reply into a placeholder row; regenerating, into the last reply's row, emptied; going on
        (Continue), after the last reply's text. In a chat with tools, the model answers (or regenerates) with them."""
        if going_on is None and self.tool_turns.may_have_tools():
            self.tool_turns.start(edited, regenerate, force)
            return
        model = self.conversation.rows_model
        before = ""
        if going_on is not None:
            placeholder, before = going_on.with_changes(incomplete=True, cut_at=None), going_on.content
            model.update_message(placeholder, streaming=True)
        elif regenerate is not None:
            placeholder = regenerate.with_changes(content="", incomplete=True)
            model.update_message(placeholder, streaming=True)
        else:
            placeholder = Message(role="assistant", content="", incomplete=True)
            model.append(Row(message=placeholder, streaming=True))
        if self.conversation.is_at_bottom():
            self.conversation.scroll_to_end()
        buffer = StreamBuffer()
        started = time.monotonic()

        def show(text: str) -> None:
            if text:
                model.update_message(placeholder.with_changes(content=before + joint(before, text) + text),
                                     streaming=True)
            else:  # a long prompt takes the local model a while to read: say so, and how far it is
                model.set_waiting(placeholder.id, waiting_text(buffer.progress, time.monotonic() - started))

        pump = StreamPump(buffer, show, self)

        def done(result: ReplyResult) -> None:
            pump.stop()
            model.end_reply(result)
            stopped = reply_stopped_text(result)
            if stopped:
                self.status.tell(stopped, 10_000)
            if result.failure and not result.kept:  # no row says it: the box does, until the next message
                self.composer.set_hint(stopped or "", error=True)
            self._model_answered(result)
            notes = []
            if edited and not result.problem:
                notes.append("Message edited and resent; ‹ › on it pages back to the earlier one and its reply.")
            elif regenerate is not None and not result.problem:
                notes.append("Reply regenerated; ‹ › on it switches back to the earlier one.")
            if result.cut_at is not None:  # else a reply ending mid-sentence reads as a fault
                notes.append(f"The reply reached its limit of {result.cut_at:,} tokens and stopped there; Continue on "
                             "it goes on (the chat's setting 'Tokens reserved for the reply' sets the limit)")
            if notes:
                self.status.tell(" ".join(notes), 15_000)
            self.chat.apply(result.snapshot)
            self.switcher.refresh_chats()
            self.reply_finished.emit(result)

        def failed(error: BaseException) -> None:
            pump.stop()
            model.update_message(going_on or regenerate or placeholder, streaming=False, error=failure_text(error))

        if going_on is not None:
            job = self.chat.continue_reply(buffer, going_on.id, done, failed)
        else:
            job = self.chat.reply(buffer, placeholder, done, failed, regenerate=regenerate is not None)
        self.composer.set_streaming(True)
        self.inspector.set_busy(True)
        job.finished.connect(lambda: (self.composer.set_streaming(False), self.inspector.set_busy(False)))

    def _show_unsaved(self, snapshot: Snapshot, _rebuilt: bool) -> None:
        """A reply whose last save failed says so on its row, its whole text still shown, with Save again in the
        status bar, until it is saved (Save again, or before the chat's next change); then the mark goes."""
        unsaved, model = snapshot.unsaved, self.conversation.rows_model
        shown = {m.id: m for m in snapshot.messages[-3:]}  # the last reply (a tool's result may follow it)
        if unsaved is not None and unsaved.message_id in shown:
            model.update_message(shown[unsaved.message_id], streaming=False, error=unsaved.words())
            if unsaved != self._unsaved:
                self.status.offer_undo(unsaved.words(), SAVE_AGAIN, self.save_again, lasting=True)
        elif self._unsaved is not None:
            if self._unsaved.message_id in shown:
                model.update_message(shown[self._unsaved.message_id], error=None)
            self.status.withdraw_undo(SAVE_AGAIN)
        self._unsaved = unsaved

    def save_again(self) -> None:
        """Save again the reply not saved whole; failing again, the offer stays and the status bar says why."""
        session = self.chat.session
        if session is None:
            return

        def failed(error: BaseException) -> None:
            self._unsaved = None  # offered again, with why it failed this time
            if self.chat.snapshot is not None:
                self._show_unsaved(self.chat.snapshot, False)

        self.chat.run_on_chat("save the reply", lambda _job: session.save_unsaved(), self.chat.apply, failed)

    def _model_answered(self, result: ReplyResult) -> None:
        """The model's state as a reply ended shows it: ready, or the local model's process stopped."""
        stopped_because = getattr(self.chat.model.provider, "stopped_because", None)  # the local model's process died
        if result.failure:
            if stopped_because:
                self.chat.model.set_state(f"stopped ({stopped_because})", "The model process stopped; the next "
                                          "message restarts it. The part of the reply that arrived is kept.")
            else:  # a server that is not there, refuses the key, or the model: "configured" said nothing of it
                self.chat.model.set_state(NOT_ANSWERING, f"The last reply failed: {brief(result.failure)}")
        elif not result.stopped and (self.chat.model.state in ("configured", "not loaded yet", NOT_ANSWERING)
                                     or self.chat.model.state.startswith("stopped")):
            self.chat.model.set_state("ready")  # a reply came back, however the model got loaded

    def _turn_finished(self, result: ReplyResult | None) -> None:
        """A message answered with tools: shown, as a reply is once done."""
        if result is not None:
            self._model_answered(result)
        self.switcher.refresh_chats()
        if result is not None:
            self.reply_finished.emit(result)

    def run_command(self, command: slash.SlashCommand) -> None:
        why = self.chat.summary_refusal(command.name)
        if why is not None:  # the command stays in the box (its instructions too), to send once the summary is made
            self.composer.set_hint(why, error=True)
            return
        self.clear_composer()
        self._run_command(command.name, command.argument)

    def run_tool(self, label: str, produce: Callable[[Job], tuple[Message, ...]]) -> None:
        """Run a tool off the GUI thread with a visible Stop; its call and result become messages of the chat."""

        def show(messages: tuple[Message, ...]) -> None:
            if self.chat.snapshot is not None:  # while loading they are shown once saved
                for message in messages:
                    self.conversation.rows_model.append(Row(message=message))
            self.conversation.scroll_to_end()

        job = self.chat.run_tool(label, produce, show, self.feedback.hint_failure)
        self.composer.set_streaming(True)
        job.finished.connect(lambda: self.composer.set_streaming(self.chat.reply_job is not None))

    def attach_files(self, paths: list[str]) -> None:
        if self.chat.session is None:
            self.switcher.new_chat(title_from(", ".join(Path(path).name for path in paths)),
                                       then=lambda _chat_id: self.attach_files(paths))
            return

        def read(_job: Job) -> tuple[Message, ...]:
            return tuple(message for path in paths for message in tools.read_file_messages(path))

        self.run_tool(f"Attaching {len(paths)} file(s)", read)

    def save_draft(self, text: str) -> None:
        """Saved off the GUI thread (a write can wait for another writer); a failure is told, the text stays. Not
        tried in a read-only data folder (the status bar says it is one): it would fail at every pause in typing."""
        if self.chat.session is not None and not self.chat.store.read_only:
            chat_id = self.chat.session.chat_id
            self.chat.store_calls.write("save the draft", lambda store: store.set_draft(chat_id, text),
                                        failed=lambda error: self.status.tell(f"Draft not saved: {failure_text(error)}",
                                                                                10_000))
