"""`precis chat`: one message streams its reply to stdout; without one, a terminal chat on the chat core (the window's
use cases, core/chat), stored like any other chat."""

from __future__ import annotations

import sys
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, get_args

import click

from ..chat.commands import (
    NothingToRegenerate,
    SlashError,
    forced_tool,
    help_text,
    parse,
    regenerate_target,
    run_command,
    unescape,
)
from ..chat.session import ChatSession
from ..chat.snapshot import ReplyResult, Snapshot
from ..chat.streaming import stream_reply
from ..chat.tool_loop import ALLOW_ONCE, USER_DENIED, Step, ToolLoop, offers_tools
from ..context.engine import EngineEvent
from ..model.messages import Message
from ..model.schema import setting_fields
from ..model.titles import NEW_CHAT_TITLE, first_message_title
from ..providers.base import DEFAULT_TEMPERATURE, CancelToken, Provider, ProviderError
from ..providers.registry import make_provider
from ..settings import KINDS, MIN_REPLY_TOKENS, MODES, ChatSettings, ToolOffer
from ..storage.chats import chosen_provider
from ..storage.store import Store, StoreError
from ..tools.toolbox import Toolbox
from ..tools.workspace import workspace_problem
from .chat_input import QUIT_COMMANDS, read_turns
from .chat_tools import (
    ALLOW_CHOICES,
    NO_ONE_TO_ASK,
    TOOLS_NOT_OFFERED,
    ServerWatch,
    mcp_command,
    step_line,
    terminal_ask,
    terminal_toolbox,
    unattended_ask,
)
from .group import cli, data_dir_option
from .opening import open_cli_store
from .store import BAD_INPUT, STORE_FAILED, context_lines, exit_code
from .terminal import TerminalText, fitted, terminal_width


@dataclass
class TurnOptions:
    """What `precis chat` was told beyond the provider: for a new chat, its settings; for a stored one, this run's
    overrides of them (None: as stored)."""

    max_tokens: int | None = None
    temperature: float = DEFAULT_TEMPERATURE
    context_tokens: int | None = None
    mode: str | None = None
    chat: str | None = None
    data_dir: str | None = None
    workspace: str | None = None
    allow: str = "read"
    mcp: tuple[str, ...] = ()
    offer_tools: str | None = None

    def settings(self) -> dict:
        values: dict = {"context_window": self.context_tokens, "reserve_output": self.max_tokens}
        values = {name: value for name, value in values.items() if value is not None}
        if self.mode is not None:
            values["summarization"] = {"mode": self.mode}
        if self.offer_tools is not None:
            values["offer_tools"] = self.offer_tools
        return values


def one_message(provider: Provider, text: str, options: TurnOptions, out: TextIO, err: TextIO) -> int:
    """A message with no chat: its reply to `out` as it streams; Ctrl-C stops it, keeping what was printed."""
    shown = TerminalText()
    cancel, received = CancelToken(), list[str]()
    max_tokens = options.max_tokens or ChatSettings().reserve_output

    def write(piece: str) -> None:
        out.write(shown.feed(piece))
        out.flush()

    problem, cut = None, False
    try:
        finish = _interruptible(lambda: stream_reply(provider, [Message("user", text)], received, write, cancel,
                                                     max_tokens=max_tokens, temperature=options.temperature),
                                cancel).finish
        cut = finish == "length"
    except ProviderError as exc:
        problem = exc
    out.write(shown.end())
    _end_line(bool(received), cancel.cancelled, str(problem) if problem else None, max_tokens if cut else None,
              out, err)
    return 130 if cancel.cancelled else 1 if problem else 0


def _interruptible(work, cancel: CancelToken):
    """Run `work` on a thread of its own, so that Ctrl-C here sets `cancel` (the reply stops and what arrived is
    kept, as Stop does in the window) instead of unwinding through the reply's saving. The wait is on an event the
    work sets, not on Thread.join: before Python 3.13 a join interrupted by Ctrl-C marks the thread as ended while it
    still runs (CPython gh-90882), and the reply was read before it existed."""
    outcome: dict = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, raised there
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="precis-reply", daemon=True).start()
    while not done.is_set():
        try:
            done.wait(0.1)
        except KeyboardInterrupt:
            cancel.cancel()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _end_line(printed: bool, cancelled: bool, problem: str | None, cut_at: int | None, out: TextIO,
              err: TextIO, go_on: str = "") -> None:
    """What ends a reply's line: why it stopped, if it did not end by itself (`go_on`: how to continue it)."""
    if printed:
        out.write("\n")
    if cancelled:
        print("[reply cancelled; the part shown is kept]", file=err)
    elif problem:
        print(f"precis chat: {problem}", file=err)
    elif cut_at is not None:  # else a reply ending mid-sentence reads as a fault
        print(f"[the reply reached its limit of {cut_at} tokens and stopped there; {go_on}--max-tokens sets it]",
              file=err)


def describe_event(event: EngineEvent) -> str:
    record = event.record
    if event.kind == "undone":
        return (f"[precis: undid the summary: {record.undone_description()} "
                f"({event.tokens_before} -> {event.tokens_after} tokens)]")
    if event.kind == "declined":
        return (f"[precis: an automatic summary ({event.reason}) was not kept: it would have left "
                f"{event.tokens_after} tokens, not fewer than {event.tokens_before}]")
    fallback = ", fell back to rules" if record.fallback_used else ""
    what = "merged older summaries" if event.kind == "merged" else "summarized older messages"
    return (f"[precis: {what} ({event.reason}): {event.tokens_before} -> {event.tokens_after} tokens, "
            f"depth {record.depth}, {record.kind}{fallback}]")


class TerminalChat:
    """A stored chat driven one line at a time: messages go to the model through the chat core, slash commands to
    their handlers; what is said beside a reply (what the engine did: summaries, folds, undos; a command refused)
    goes to `asides`."""

    def __init__(self, session: ChatSession, out: TextIO, err: TextIO, asides: TextIO) -> None:
        self.session = session
        self.out, self.err, self.asides = out, err, asides
        self.loop: ToolLoop | None = None  # the model calls tools (--workspace, --mcp)
        self.toolbox: Toolbox | None = None  # the loop's tools
        self.watch: ServerWatch | None = None  # the MCP servers (--mcp), whose failures are said as they happen
        self.replying: CancelToken | None = None  # the reply being written, which Ctrl-C stops

    def stopped(self) -> bool:
        """Whether the user stopped the reply being written (a question about a tool call then waits no longer)."""
        return self.replying is not None and self.replying.cancelled

    def tell(self, snapshot: Snapshot | None) -> None:
        """What the engine did, and an MCP server that failed or ended since the user was last told."""
        for event in snapshot.events if snapshot is not None else ():
            print(describe_event(event), file=self.asides, flush=True)
        if self.watch is not None and (news := self.watch.news()):
            print(news, file=self.asides, flush=True)

    def refuse(self, why: str) -> int:
        """A line refused, nothing done: why, fitted to the terminal; the exit code of such a line."""
        print(fitted(why), file=self.asides)
        return BAD_INPUT

    def line(self, text: str, label: str = "model> ") -> int:
        """One line: a slash command (run here, never sent to the model) or a message and its reply. Returns the
        exit code it would end `precis chat` with."""
        self.tell(None)  # a server that ended while the user was typing
        try:
            command = parse(text)
        except SlashError as exc:
            return self.refuse(str(exc))
        if command is not None and command.name == "help":
            print(help_text(terminal_width()), file=self.out)
            return 0
        if command is not None and command.name == "continue":
            return self.go_on(label)
        if command is not None and command.name == "regenerate":
            return self.regenerate(label)
        if command is not None and command.name == "use":
            return self.use_tool(command.argument, label)
        if command is not None and command.name == "mcp":  # the window's Settings → Tools, its Restart buttons
            return mcp_command(self.watch.servers if self.watch else None, command.argument, self.out, self.asides)
        if command is not None and command.name == "context":  # the window's shows its inspector; this prints it
            self.tell(self.session.snapshot())
            print("\n".join(context_lines(self.session.built_engine, terminal_width())), file=self.out)
            print(f"The prompt itself, part by part: precis prompt {self.session.chat_id[:8]}", file=self.out)
            return 0
        if command is not None:
            result = run_command(self.session, command)
            self.tell(result.snapshot)
            if result.failed:
                print(fitted(result.text), file=self.asides)
                return BAD_INPUT if result.bad_input else STORE_FAILED
            print(result.text, file=self.out)
            return 0
        try:
            self.said(unescape(text))
        except StoreError as exc:
            # The chat goes on, as the window keeps the text in its box: the message is said back whole, to send
            # again once the store can be written (a full disk, another program holding it too long).
            print(f"precis chat: not sent: {exc}\nYour message, to send again:\n{text}", file=self.err, flush=True)
            return exit_code(exc)
        return self.reply(label)

    def said(self, text: str) -> None:
        """The user's message added; a chat's first names it, as in the window."""
        session = self.session
        if session.engine is not None and (title := first_message_title(
                session.store.get_chat(session.chat_id).title, len(session.engine.messages), text)):
            session.store.rename_chat(session.chat_id, title)
        self.tell(session.add_messages([Message("user", text)]))

    def reply(self, label: str, again: Message | None = None) -> int:
        """The reply to the user's last message; with `again` (the last reply), that reply written again in its place,
        its earlier text kept as a version of it."""
        if self.loop is not None:
            return self._stream(label, lambda write, cancel: self._answer_with_tools(write, cancel, regenerate=again))
        placeholder = (Message(role="assistant", content="", incomplete=True) if again is None
                       else again.with_changes(content="", incomplete=True, cut_at=None))
        return self._stream(label, lambda write, cancel: self.session.reply(placeholder, on_text=write, cancel=cancel,
                                                                             regenerate=again is not None))

    def regenerate(self, label: str) -> int:
        """/regenerate, by the window's rule (regenerate_target): the last reply written again, or the reply your
        last message lacks (it failed, or was stopped, before its first word)."""
        try:
            again = regenerate_target(self.session.built_engine.messages)
        except NothingToRegenerate as exc:
            return self.refuse(str(exc))
        return self.reply(label, again)

    def use_tool(self, argument: str, label: str) -> int:
        """/use TOOL MESSAGE: the message, answered by the model calling TOOL first."""
        try:
            tool, text = forced_tool(argument)
            if self.loop is None:
                raise ValueError("this chat has no tools: start precis chat with --workspace DIR or --mcp NAME")
            assert self.toolbox is not None  # the loop's
            unknown = self.toolbox.unknown(tool)
            if unknown:  # a dead server's tool: how to start it again here (the window has a Restart button)
                gone = self.toolbox.gone_server(tool)
                raise ValueError(f"{unknown}; /mcp restart {gone.name} starts it again" if gone else unknown)
        except ValueError as exc:
            return self.refuse(str(exc))
        self.said(text)
        return self._stream(label, lambda write, cancel: self._answer_with_tools(write, cancel, force=tool))

    def _answer_with_tools(self, write, cancel: CancelToken, force: str | None = None,
                           regenerate: Message | None = None) -> ReplyResult:
        """The model's replies and its tool steps, each step on a line of its own; the last reply's result."""
        assert self.loop is not None

        def step(done: Step) -> None:
            print(step_line(done), file=self.asides, flush=True)
            self.tell(None)  # the server that ended during the call, at once

        turn = self.loop.answer(cancel=cancel, on_text=lambda _placeholder, piece: write(piece), on_step=step,
                                force=force, regenerate=regenerate)
        if turn.ended and not cancel.cancelled and turn.replies and not turn.replies[-1].problem:
            print(f"[precis: {turn.ended}]", file=self.asides)  # the step limit
        return turn.replies[-1]

    def go_on(self, label: str) -> int:
        """/continue: the model goes on with the last reply, through the chat core as in the window."""
        messages = self.session.built_engine.messages
        if not messages or messages[-1].role != "assistant":
            return self.refuse("There is no reply to continue: the last message is not one.")
        last = messages[-1]
        return self._stream(label, lambda write, cancel: self.session.continue_reply(last.id, on_text=write,
                                                                                       cancel=cancel))

    def _stream(self, label: str, write_reply) -> int:
        """A reply written by `write_reply(on_text, cancel)`, streamed to `out`; Ctrl-C stops it."""
        shown, cancel = TerminalText(), CancelToken()
        self.replying = cancel
        self.out.write(label)
        self.out.flush()

        def write(piece: str) -> None:
            self.out.write(shown.feed(piece))
            self.out.flush()

        try:
            result: ReplyResult = _interruptible(lambda: write_reply(write, cancel), cancel)
        except StoreError as exc:  # the reply was shown whole but not saved whole (a full disk): the chat goes on
            self.out.write(shown.end() + "\n")
            print(f"precis chat: the reply above was not saved whole: {exc}", file=self.err, flush=True)
            self._reload()
            return exit_code(exc)
        self.out.write(shown.end())
        if result.unsaved:  # shown whole, stored in part: the next message saves it first
            self.out.write("\n")
            print(f"precis chat: the reply above was not saved whole: {result.unsaved.why} Your next message saves "
                  "it first.", file=self.err, flush=True)
            self.tell(result.snapshot)
            return STORE_FAILED
        problem = None if cancel.cancelled else result.problem
        _end_line(bool(result.message.content), cancel.cancelled, problem, result.cut_at, self.out, self.err,
                  go_on="/continue goes on, ")
        self.tell(result.snapshot)
        return 130 if cancel.cancelled else 1 if problem else 0

    def _reload(self) -> None:
        """The chat as stored, after a reply whose last save failed: its engine lacks the part that was saved."""
        try:
            self.tell(self.session.reload_if_changed())
        except StoreError as exc:
            print(f"precis chat: {exc}", file=self.err, flush=True)


def terminal_chat(provider: Provider, options: TurnOptions, stdin: TextIO, out: TextIO, err: TextIO,
                  message: str | None = None) -> int:
    """A chat one line a turn, stored like any other (`precis chats`, the window), resumable with --chat ID; with
    `message` (and --chat), that one turn of the stored chat, its reply alone on `out`. With a workspace (given, or
    the chat's own) or MCP servers, the model calls tools."""
    # One turn, or lines not typed at a terminal (piped, a file), keep standard output for the replies and the
    # commands' answers: no prompt there, and the rest goes to standard error.
    typed = message is None and stdin.isatty()
    asides = out if typed else err
    folder = _whole_folder(options.workspace) if options.workspace is not None else None
    with open_cli_store(options.data_dir, err) as store:
        if options.chat:
            chat_id, overrides = store.find_chat(options.chat).id, options.settings()
        else:
            chat_id = store.create_chat(NEW_CHAT_TITLE, options.settings())
            overrides = {}
        session: ChatSession | None = None
        try:
            if folder is not None:
                _keep_workspace(store, chat_id, folder)
            session = ChatSession(store, chat_id, provider, overrides)
            session.temperature = options.temperature
            chat = TerminalChat(session, out, err, asides)
            workspace = store.get_chat(chat_id).settings.workspace or None
            with terminal_toolbox(workspace, options.mcp, options.data_dir, err) as toolbox:
                if toolbox is not None:
                    # Piped lines are messages: none is taken as consent (only --allow or the chat's own allowance).
                    answered = stdin.isatty()
                    ask = ((lambda _call, _preview: ALLOW_ONCE) if options.allow == "all"
                           else terminal_ask(toolbox, stdin, asides, chat.stopped) if answered
                           else unattended_ask(toolbox, err))
                    chat.toolbox = toolbox
                    chat.loop = ToolLoop(session, toolbox, ask, ask_before_reading=options.allow == "ask",
                                         denied=USER_DENIED if answered else NO_ONE_TO_ASK)
                    chat.watch = ServerWatch(toolbox.servers) if toolbox.servers is not None else None
                chat.tell(session.build_engine(estimate=False))
                if chat.loop is not None:
                    chat.loop.max_steps = session.settings.tool_steps
                    if not offers_tools(session):  # said where the tools are: the model will not call them unasked
                        print(textwrap.fill(TOOLS_NOT_OFFERED, terminal_width()), file=asides)
                if message is not None:
                    return chat.line(message, label="")
                window = session.built_engine.budget.window
                print(textwrap.fill(f"precis chat {chat_id} with {provider.name} {provider.model} ({window} token "
                                    f"window). One line a turn; {QUIT_COMMANDS[0]} or end of input leaves; `precis "
                                    f"chat --chat {chat_id[:8]}` resumes.", terminal_width()), file=asides)
                return read_turns(chat, stdin, out, typed)
        finally:
            if session is not None and (unsaved := session.close()) is not None:
                print(f"precis chat: leaving with the last reply not saved whole ({unsaved.why.rstrip('.')}); the chat "
                      "holds only the part saved before, the whole text is above.", file=sys.stderr, flush=True)
            # Nothing was said (or the chat never opened: Ctrl-C meanwhile): no empty chat left behind.
            if not options.chat and (session is None or session.engine is None or not session.engine.messages):
                store.delete_chat(chat_id)


def _whole_folder(given: str) -> str:
    """--workspace as the chat keeps it: a whole path to a folder that is there (ValueError naming it if not)."""
    folder = str(Path(given).expanduser().resolve())
    problem = workspace_problem(folder)
    if problem:
        raise ValueError(f"--workspace: {problem}")
    return folder


def _keep_workspace(store: Store, chat_id: str, folder: str) -> None:
    """--workspace becomes the chat's workspace folder, as Settings → This chat → Workspace folder sets it in the
    window: the chat continued later (here with --chat, or in the window) has the same tools without it."""
    stored = store.get_chat(chat_id).settings
    if stored.workspace != folder:
        store.update_chat_settings(chat_id, stored.model_copy(update={"workspace": folder}))


def setting_range(name: str, low: int | None = None) -> click.IntRange:
    """The range of the chat setting an option sets (ChatSettings): a value beyond it is a usage error naming the
    option, not pydantic's dump ('1 validation error for ChatSettings…'). `low` raises its lower end."""
    field = next(field for field in setting_fields(ChatSettings) if field.name == name)
    assert field.low is not None and field.high is not None, f"the setting {name} has no range"
    return click.IntRange(min=max(int(field.low), low or 0), max=int(field.high))


@cli.command(short_help="Chat with the model in the terminal, or send one message.")
@click.argument("message", required=False)
@click.option("--provider", type=click.Choice(KINDS), help="the backend (default: the one chosen in Settings, at "
              "first the embedded local model)")
@click.option("--base-url", help="the server's base URL (OpenAI-compatible: …/v1)")
@click.option("--model", help="the model name on that server")
@click.option("--max-tokens", type=setting_range("reserve_output", low=MIN_REPLY_TOKENS),
              help=f"longest reply in tokens (default: the chat's 'Tokens reserved for the reply', "
                   f"{ChatSettings().reserve_output})")
# The widest range a provider takes (OpenAI-compatible servers: 0 to 2; Anthropic's 0 to 1 is its own check).
@click.option("--temperature", type=click.FloatRange(min=0, max=2), default=DEFAULT_TEMPERATURE, show_default=True)
@click.option("--context-tokens", type=setting_range("context_window"),
              help="the model's context window, if the backend's own figure is wrong or missing")
@click.option("--mode", type=click.Choice(MODES), help="how old turns are summarized (default: the chat's "
              "setting, else Settings → Summarization's)")
@click.option("--chat", "chat_ref", help="continue a stored chat (id, unique id prefix or exact title) with its "
              "settings; with MESSAGE, one turn of it")
@click.option("--workspace", type=click.Path(file_okay=False), help="a folder, kept as the chat's workspace folder: "
              "the model may read, search and change files in it and run commands there (docs/tools.md)")
@click.option("--allow", type=click.Choice(ALLOW_CHOICES), default="read", show_default=True,
              help="which tool calls run without asking y/n: read (reading and searching), all, or ask (none)")
@click.option("--mcp", multiple=True, metavar="NAME", help="an MCP server of mcp.json in the data folder whose tools "
              "the model may call (repeatable)")
@click.option("--offer-tools", type=click.Choice(get_args(ToolOffer)), help="whether each message offers the model "
              "the tools to call as it sees fit (default: the chat's 'Offer tools with each message', auto: yes but "
              "to the built-in model); /use calls one either way")
@data_dir_option
def chat(message: str | None, provider: str | None, base_url: str | None, model: str | None, chat_ref: str | None,
         data_dir: str | None, **options) -> int:
    """Send MESSAGE and stream the reply to stdout; without MESSAGE, chat one line a turn through the context
    engine, which summarizes old turns as the window fills. Options given with --chat apply to this run only."""
    turn = TurnOptions(**options, chat=chat_ref, data_dir=data_dir)
    try:
        if provider is None:  # the window's: Settings → Provider, with what was given here over it
            given = {name: value for name, value in (("base_url", base_url), ("model", model)) if value}
            with open_cli_store(data_dir) as store:
                backend = chosen_provider(store, **given)
        else:
            backend = make_provider(provider, base_url=base_url, model=model)
        if message is not None and chat_ref is None and not (turn.workspace or turn.mcp):
            return one_message(backend, message, turn, sys.stdout, sys.stderr)
        return terminal_chat(backend, turn, sys.stdin, sys.stdout, sys.stderr, message)
    except (ProviderError, ValueError) as exc:
        print(f"precis chat: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        print(f"precis chat: {exc}", file=sys.stderr)
        return exit_code(exc)
