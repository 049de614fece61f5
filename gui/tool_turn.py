"""A message answered with the chat's tools in the window: the chat core's loop (core/chat/tool_loop.py) runs on the
chat's worker, as a reply does. Each reply of the model streams into a row of its own, each call's result is shown
as it is stored, with the inspector following; a call that writes or runs waits on the consent card. Stop (or Esc)
ends the running tool and the loop.

The worker never touches a widget: what the loop reports is handed to the window by queued signals."""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, Qt, QTimer, Signal

from ..core.chat.rows import Row
from ..core.chat.session import ChatSession
from ..core.chat.snapshot import ReplyResult, Snapshot
from ..core.chat.tool_loop import DENY, Decision, Step, ToolLoop, Turn, offered_tools, offers_tools
from ..core.context.engine import ToolsTooLarge
from ..core.model.messages import Message, ToolCall
from ..core.providers.base import CancelToken
from ..core.tools.bounded import ToolInputError
from ..core.tools.mcp_servers import server_news
from .composer import Composer
from .consent_card import ConsentCard, ConsentRequest
from .controller import ChatController
from .conversation import ConversationView
from .inspector import Inspector
from .status import StatusLine
from .tool_service import ToolService
from .wording import failure_text, reply_stopped_text, waiting_text
from .workers import Job, StreamBuffer, StreamPump

SERVER_WATCH_MS = 500
SERVER_NEWS_MS = 30_000
LOCAL_MODEL_TOOLS = ("The local model rarely calls a tool by itself: expect answers in text. A hosted model "
                     "(File → Settings → Provider) uses the chat's tools.")
# Said instead where the local model is not offered the tools (ChatSettings.offer_tools: the built-in one, by default).
TOOLS_NOT_OFFERED = ("The model is not offered the tools (the built-in one calls none by itself): /use TOOL MESSAGE "
                     "calls one; Settings → This chat offers them.")


class TurnSignals(QObject):
    """What the loop reports from the worker; made on the window's thread, so its receivers run there."""

    reply_started = Signal(object, object)  # the reply's placeholder message, the StreamBuffer its text goes to
    reply_ended = Signal(object)  # ReplyResult
    step_stored = Signal(object, object)  # the Step, and a snapshot of the chat once its result is stored
    consent_asked = Signal(object)  # a ConsentRequest, waiting for the user
    told = Signal(str)  # why this message is answered without tools
    local_model_has_tools = Signal(bool)  # whether it is offered them with each message


class _Reporter:
    """The loop's callbacks, on the worker: each reply gets a buffer of its own for its streamed text."""

    def __init__(self, signals: TurnSignals, session: ChatSession) -> None:
        self.signals, self.session = signals, session
        self.buffer = StreamBuffer()

    def start(self, placeholder: Message) -> None:
        self.buffer = StreamBuffer()
        self.signals.reply_started.emit(placeholder, self.buffer)

    def text(self, _placeholder: Message, piece: str) -> None:
        self.buffer.append(piece)

    def progress(self, read: int, total: int) -> None:
        self.buffer.set_progress(read, total)

    def reply(self, result: ReplyResult) -> None:
        self.signals.reply_ended.emit(result)

    def step(self, step: Step) -> None:
        self.signals.step_stored.emit(step, self.session.snapshot())


def answer_message(session: ChatSession, service: ToolService, signals: TurnSignals, cancel: CancelToken,
                   regenerate: Message | None = None, force: str | None = None) -> Turn:
    """On the chat's worker: answer the last message with the chat's tools; without them when it has none, its
    workspace folder is not there, or their definitions do not fit the window (said through `signals.told`). With
    `regenerate` (the last reply), it is written again in its place first."""
    reporter = _Reporter(signals, session)
    try:
        toolbox = service.toolbox_for(session.settings)
    except ToolInputError as exc:
        signals.told.emit(f"No tools for this message: {exc} (Settings → This chat names the workspace folder).")
        toolbox = None
    if toolbox is not None:
        if session.provider.name == "local":
            signals.local_model_has_tools.emit(offers_tools(session))

        def ask(call: ToolCall, preview: str) -> Decision:
            request = ConsentRequest(call, preview, toolbox.question(call))
            signals.consent_asked.emit(request)
            return request.wait(cancel)

        loop = ToolLoop(session, toolbox, ask, max_steps=session.settings.tool_steps,
                        ask_before_reading=service.settings().ask_before_reading)
        try:
            return loop.answer(cancel=cancel, on_start=reporter.start, on_text=reporter.text,
                               on_reply=reporter.reply, on_step=reporter.step, on_progress=reporter.progress,
                               regenerate=regenerate, force=force)
        except ToolsTooLarge as exc:
            signals.told.emit(f"Answered without tools: {exc}.")
    elif session.tools:  # the chat's tools went (its servers stopped): the model is no longer offered them
        session.use_tools([])
    placeholder = (regenerate.with_changes(content="", incomplete=True, cut_at=None) if regenerate is not None
                   else Message(role="assistant", content="", incomplete=True))
    reporter.start(placeholder)
    result = session.reply(placeholder, on_text=lambda piece: reporter.text(placeholder, piece), cancel=cancel,
                           on_progress=reporter.progress, regenerate=regenerate is not None)
    reporter.reply(result)
    return Turn(replies=[result])


def offer_tools(session: ChatSession, service: ToolService) -> Snapshot | None:
    """On the chat's worker, as the chat opens: its tools are offered from the start, so the inspector counts their
    definitions in the next prompt (as it did when the chat was last used). None when it has none that fit (the
    next message says why)."""
    try:
        toolbox = service.toolbox_for(session.settings)
        session.use_tools(offered_tools(session, toolbox.specs()) if toolbox is not None else [])
    except (ToolInputError, ToolsTooLarge):
        return None
    return session.snapshot()


class ToolTurns(QObject):
    """The window's side of a turn with tools: rows, the consent card, what is said. `finished(result)` with the
    last reply's ReplyResult (None if there was none) once the turn is shown."""

    finished = Signal(object)

    def __init__(self, chat: ChatController, service: ToolService, conversation: ConversationView, composer: Composer,
                 inspector: Inspector, status: StatusLine, card: ConsentCard, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.chat, self.service, self.conversation, self.composer = chat, service, conversation, composer
        self.inspector, self.status, self.card = inspector, status, card
        self.hinted: set[str] = set()  # chats told that the local model rarely calls tools
        self._pump: StreamPump | None = None
        self._streaming: Message | None = None  # the placeholder of the reply being written
        card.decided.connect(lambda request, decision: request.decide(decision))
        chat.chat_opened.connect(self._offer_tools)
        composer.stop_requested.connect(card.withdraw)
        # A server that fails or ends, or an mcp.json that cannot be read, is said in the status bar as it happens.
        self._told_states: dict[str, str] = {}
        self._told_problem = ""
        # The servers' tools when the open chat was last offered them: Settings → Tools restarting the servers left
        # the inspector without their definitions until the next message.
        self._offered: tuple = ()
        self._server_watch = QTimer(self)
        self._server_watch.timeout.connect(self._tell_server_news)
        self._server_watch.start(SERVER_WATCH_MS)

    def may_have_tools(self) -> bool:
        """Whether the open chat may have tools (a workspace folder named, or MCP servers started): then it is
        answered here, where the worker finds out."""
        session = self.chat.session
        return session is not None and (bool(session.settings.workspace.strip()) or self.service.servers is not None)

    def _tell_server_news(self) -> None:
        statuses = self.service.statuses()  # a copy of each state: cheap enough twice a second
        offered = tuple((status.name, status.state, status.tools) for status in statuses)
        if offered != self._offered:  # a server came up, ended or was restarted: the next prompt's tools changed
            self._offered = offered
            self.offer_again()
        news = server_news(self._told_states, statuses)
        problem = self.service.problem
        if problem and problem != self._told_problem:
            news = f"MCP servers not started: {problem}"
        self._told_states = {status.name: status.state for status in statuses}
        self._told_problem = problem
        if news:
            self.status.tell(news, SERVER_NEWS_MS)

    def offer_again(self) -> None:
        """Offer the open chat its tools as they are now (servers restarted, tools switched off or on), so the
        inspector counts their definitions at once; queued after any answer being written."""
        if self.chat.session is not None:
            self._offer_tools(self.chat.session.chat_id)

    def _offer_tools(self, chat_id: str) -> None:
        session, service = self.chat.session, self.service
        # Also when it had tools and may have none now (its servers were removed): they are taken back.
        if session is not None and session.chat_id == chat_id and (self.may_have_tools() or session.tools):
            self.chat.run_on_chat("offer the chat's tools", lambda _job: offer_tools(session, service),
                                  lambda snapshot: snapshot is not None and self.chat.apply(snapshot))

    def start(self, edited: bool = False, regenerate: Message | None = None, force: str | None = None) -> Job:
        """Answer the open chat's last message with its tools (`edited`: a new version of it); with `regenerate`,
        the last reply is written again in its place first."""
        session = self.chat.session
        chat_id = session.chat_id
        signals = TurnSignals(self)
        queued = Qt.ConnectionType.QueuedConnection
        signals.reply_started.connect(lambda placeholder, buffer: self._reply_started(chat_id, placeholder, buffer),
                                      queued)
        signals.reply_ended.connect(self._reply_ended, queued)
        signals.step_stored.connect(self._step_stored, queued)
        signals.consent_asked.connect(lambda request: self._ask(chat_id, request), queued)
        signals.told.connect(lambda text: self.chat.is_open(chat_id) and self.composer.set_hint(text, error=True),
                             queued)
        signals.local_model_has_tools.connect(lambda offered: self._hint_local_model(chat_id, offered), queued)
        service = self.service
        job = self.chat.answer(lambda cancel: answer_message(session, service, signals, cancel, regenerate, force),
                               lambda turn: self._done(turn, edited, regenerate is not None), self._failed)
        self.composer.set_streaming(True)
        self.inspector.set_busy(True)
        job.finished.connect(self._ended)
        job.finished.connect(signals.deleteLater)
        return job

    # ---- what the worker reports, on the window's thread ------------------------------------------------------
    def _reply_started(self, chat_id: str, placeholder: Message, buffer: StreamBuffer) -> None:
        if not self.chat.is_open(chat_id):
            return
        model = self.conversation.rows_model
        if model.row_of(placeholder.id) is not None:  # the last reply, written again in its row
            model.update_message(placeholder, streaming=True)
        else:
            model.append(Row(message=placeholder, streaming=True))
        if self.conversation.is_at_bottom():
            self.conversation.scroll_to_end()
        started = time.monotonic()

        def show(text: str) -> None:
            if text:
                model.update_message(placeholder.with_changes(content=text), streaming=True)
            else:  # a long prompt takes the local model a while to read: say so, and how far it is
                model.set_waiting(placeholder.id, waiting_text(buffer.progress, time.monotonic() - started))

        self._stop_pump()
        self._streaming = placeholder
        self._pump = StreamPump(buffer, show, self)

    def _reply_ended(self, result: ReplyResult) -> None:
        self._stop_pump()
        self._streaming = None
        if not self.chat.is_open(result.snapshot.chat_id):
            return
        self.conversation.rows_model.end_reply(result)
        stopped = reply_stopped_text(result)
        if stopped:
            self.status.tell(stopped, 10_000)
        if result.failure and not result.kept:  # no row says it: the box does, until the next message
            self.composer.set_hint(stopped or "", error=True)
        self.chat.apply(result.snapshot)
        if self.conversation.is_at_bottom():
            self.conversation.scroll_to_end()

    def _step_stored(self, step: Step, snapshot: Snapshot) -> None:
        if not self.chat.is_open(snapshot.chat_id):
            return
        bottom = self.conversation.is_at_bottom()
        self.conversation.rows_model.append(Row(message=step.result))
        self.chat.apply(snapshot)  # rows rebuilt if a summary was made meanwhile: this one among them
        if bottom:
            self.conversation.scroll_to_end()

    def _ask(self, chat_id: str, request: ConsentRequest) -> None:
        if self.chat.is_open(chat_id) and self.chat.reply_job is not None:
            self.card.ask(request)
        else:  # the answer was stopped or its chat closed while the question travelled here
            request.decide(DENY)

    def _hint_local_model(self, chat_id: str, offered: bool) -> None:
        if chat_id not in self.hinted and self.chat.is_open(chat_id):
            self.hinted.add(chat_id)
            self.composer.set_hint(LOCAL_MODEL_TOOLS if offered else TOOLS_NOT_OFFERED)

    # ---- the end of the turn --------------------------------------------------------------------------------
    def _done(self, turn: Turn, edited: bool, regenerated: bool) -> None:
        last = turn.replies[-1] if turn.replies else None
        # Said together: a reply cut at its limit that also made no call /use asked for had its "no call" hidden.
        notices = []
        if turn.ended == "stopped":
            notices.append("Stopped: the model was told which calls did not run.")
        elif turn.ended and last is not None and not last.problem:  # a reply's own problem was said as it ended
            notices.append(f"Tool calls ended: {turn.ended}.")
        elif edited and last is not None and not last.problem:
            notices.append("Message edited and resent; ‹ › on it pages back to the earlier one and its reply.")
        elif regenerated and last is not None and not last.problem:
            notices.append("Reply regenerated; ‹ › on it switches back to the earlier one.")
        if last is not None and last.cut_at is not None:
            notices.append(f"The reply reached its limit of {last.cut_at:,} tokens and stopped there; Continue on "
                           "it goes on (the chat's setting 'Tokens reserved for the reply' sets the limit)")
        if notices:
            self.status.tell(" ".join(notices), 15_000)
        self.finished.emit(last)

    def _failed(self, error: BaseException) -> None:
        """The turn failed (the store refused a write; the controller says so): a reply being written is marked."""
        self._stop_pump()
        if self._streaming is not None:
            self.conversation.rows_model.update_message(self._streaming, streaming=False, error=failure_text(error))
        self.finished.emit(None)

    def _ended(self) -> None:
        self._stop_pump()
        self._streaming = None
        self.card.withdraw()
        self.composer.set_streaming(False)
        self.inspector.set_busy(False)

    def _stop_pump(self) -> None:
        if self._pump is not None:
            self._pump.stop()
            self._pump.deleteLater()
            self._pump = None
