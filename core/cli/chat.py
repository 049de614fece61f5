"""`precis chat`: one message streams its reply to stdout; without one, a terminal chat through the context engine."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TextIO

import click

from ..commands import SlashError, help_text, parse
from ..context.engine import ContextEngine, EngineEvent, IntegrityError, NothingToSummarize, NothingToUndo
from ..context.policy import SummarizationPolicy
from ..model.messages import Message
from ..providers.base import CancelToken, ContextLengthExceeded, Provider, ProviderError, Usage, token_counter
from ..providers.registry import KINDS, make_provider
from ..storage.chats import restore_engine
from ..storage.store import StoreError, attach_engine, open_store
from ..summary.summarize import make_summarizer
from ..tools import RUN_TIMEOUT_SECONDS, ToolInputError, grep, grep_argument, run_command_messages, tool_exchange
from .group import cli, data_dir_option
from .store import exit_code
from .terminal import TerminalText

QUIT_COMMANDS = ("/quit", "/exit")
HISTORY_MESSAGES = 10  # the recent messages /history lists after the summaries
SNIPPET_CHARS = 100

@dataclass
class Reply:
    text: str
    usage: Usage | None = None
    error: ProviderError | None = None
    cancelled: bool = False
    cut_at: int | None = None  # the reply's token limit, when it stopped there mid-answer

    @property
    def incomplete(self) -> bool:
        return self.cancelled or self.error is not None


def stream_reply(provider: Provider, messages: list[Message], out: TextIO, *, max_tokens: int,
                 temperature: float) -> Reply:
    """Print the reply as it streams. Ctrl-C cancels it (the connection is dropped); what arrived is kept."""
    cancel = CancelToken()
    parts: list[str] = []
    usage = finish = None
    shown = TerminalText()
    stream = provider.stream_chat(messages, max_tokens=max_tokens, temperature=temperature, cancel=cancel)
    try:
        for chunk in stream:
            if chunk.text:
                parts.append(chunk.text)
                out.write(shown.feed(chunk.text))
                out.flush()
            if chunk.done:
                usage, finish = chunk.usage, chunk.finish_reason
        out.write(shown.end())
    except KeyboardInterrupt:
        cancel.cancel()
        return Reply("".join(parts), cancelled=True)
    except ProviderError as exc:
        # Cancelled and StreamInterrupted carry the text that arrived; the chunks printed so far are the same.
        return Reply(getattr(exc, "partial", "") or "".join(parts), error=exc)
    finally:
        stream.close()
    return Reply("".join(parts), usage=usage, cut_at=max_tokens if finish == "length" else None)


def _finish_line(reply: Reply, out: TextIO, err: TextIO) -> None:
    if reply.text:
        out.write("\n")
    if reply.cancelled:
        print("[reply cancelled; the part shown is kept]", file=err)
    elif reply.error:
        print(f"precis chat: {reply.error}", file=err)
    elif reply.cut_at is not None:  # else a reply ending mid-sentence reads as a fault
        print(f"[the reply reached its limit of {reply.cut_at} tokens and stopped there; --max-tokens sets it]",
              file=err)


def one_message(provider: Provider, text: str, args, out: TextIO, err: TextIO) -> int:
    reply = stream_reply(provider, [Message("user", text)], out, max_tokens=args.max_tokens,
                         temperature=args.temperature)
    _finish_line(reply, out, err)
    return 130 if reply.cancelled else 1 if reply.error else 0


def describe_event(event: EngineEvent) -> str:
    record = event.record
    fallback = ", fell back to rules" if record.fallback_used else ""
    what = "merged older summaries" if event.kind == "merged" else "summarized older messages"
    return (f"[precis: {what} ({event.reason}): {event.tokens_before} -> {event.tokens_after} tokens, "
            f"depth {record.depth}, {record.kind}{fallback}]")


def chat_turn(engine: ContextEngine, provider: Provider, args, out: TextIO, err: TextIO,
              keep: Callable[[Message], None], label: str = "model> ") -> Reply:
    """Send what the engine assembles; on a context-length error from the backend, summarize and retry once.
    The reply goes to `keep` (the store, then the engine)."""
    for attempt in range(2):
        prompt = engine.assemble()
        raw_estimate = engine.counter.prompt_raw_tokens(prompt.messages)
        out.write(label)
        out.flush()
        reply = stream_reply(provider, prompt.messages, out, max_tokens=args.max_tokens,
                             temperature=args.temperature)
        if attempt == 0 and isinstance(reply.error, ContextLengthExceeded):
            out.write("\n")
            try:
                engine.summarize_now()
            except NothingToSummarize:
                break
            continue
        if reply.usage is not None:
            engine.counter.calibrate(raw_estimate, reply.usage.prompt_tokens)
        break
    _finish_line(reply, out, err)
    if reply.text:
        keep(Message("assistant", reply.text, incomplete=reply.incomplete))
    return reply


def terminal_chat(provider: Provider, args, stdin: TextIO, out: TextIO, err: TextIO, message: str | None = None) -> int:
    """A chat one line a turn, stored like any other (`precis chats`, the window), resumable with --chat ID; with
    `message` (and --chat), that one turn of the stored chat, its reply alone on `out`."""
    window = args.context_tokens or provider.context_window()
    counter = token_counter(provider)
    summarizer = make_summarizer(args.summaries, provider)
    with open_store(args.data_dir) as store:
        if args.chat:
            chat_id = store.find_chat(args.chat).id
        else:
            chat_id = store.create_chat(f"Terminal chat {time.strftime('%Y-%m-%d %H:%M')}", {
                "context_window": window, "reserve_output": args.max_tokens,
                "summarization": {"mode": args.summaries}})
        engine, _ = restore_engine(store, chat_id, default_window=window, counter=counter, summarizer=summarizer)
        # A summary that cannot be saved (a full disk) is told; the chat goes on with it in memory.
        attach_engine(store, chat_id, engine, on_error=lambda exc: print(f"precis chat: {exc}", file=err, flush=True))
        run_timeout = store.get_chat(chat_id).settings.run_timeout
        # One turn keeps standard output for the reply: what the engine does goes to standard error.
        engine.subscribe(lambda event: print(describe_event(event), file=out if message is None else err, flush=True))

        def keep(added: Message) -> None:
            store.add_message(chat_id, added)  # stored first: a summary may archive it at once
            engine.append(added)

        def save(changed: Message) -> None:
            store.update_message(chat_id, changed)

        if message is not None:
            try:
                command = parse(message)
            except SlashError as exc:
                print(exc, file=err)
                return 2
            if command is not None:  # as in the terminal chat: run here, never sent to the model
                print(run_slash(engine, command.name, command.argument, keep, run_timeout, save), file=out)
                return 0
            keep(Message("user", message.removeprefix("/")))  # "//x" sends "/x"
            reply = chat_turn(engine, provider, args, out, err, keep, label="")
            return 130 if reply.cancelled else 1 if reply.error else 0
        print(f"precis chat {chat_id} with {provider.name} {provider.model} ({window} token window). "
              f"One line a turn; {QUIT_COMMANDS[0]} or end of input leaves; `precis chat --chat {chat_id[:8]}` "
              "resumes.", file=out)
        try:
            return _turns(engine, provider, args, stdin, out, err, keep, run_timeout, save)
        finally:
            if not args.chat and not engine.messages:  # nothing was said: no empty chat left in the lists
                store.delete_chat(chat_id)


def _turns(engine: ContextEngine, provider: Provider, args, stdin: TextIO, out: TextIO, err: TextIO,
           keep: Callable[[Message], None], run_timeout: float, save: Callable[[Message], None]) -> int:
    while True:
        out.write("you> ")
        out.flush()
        try:
            line = stdin.readline()
        except KeyboardInterrupt:
            out.write("\n")
            return 0
        if not line:
            out.write("\n")
            return 0
        text = line.strip()
        if not text:
            continue
        if text in QUIT_COMMANDS:
            return 0
        try:
            command = parse(text)
        except SlashError as exc:
            print(exc, file=out)
            continue
        if command is not None:
            print(run_slash(engine, command.name, command.argument, keep, run_timeout, save), file=out)
            continue
        keep(Message("user", text.removeprefix("/")))  # "//x" sends "/x"
        chat_turn(engine, provider, args, out, err, keep)


def run_slash(engine: ContextEngine, name: str, argument: str, keep: Callable[[Message], None],
              run_timeout: float = RUN_TIMEOUT_SECONDS, save: Callable[[Message], None] | None = None) -> str:
    """A slash command of the registry in the terminal chat; returns what to print. /pin and /unpin act on the last
    message (there is no selection) and `save` keeps the change; /run stops after the chat's time limit
    (`run_timeout`)."""
    try:
        if name == "context":
            usage = engine.usage()
            return (f"context: {usage.total} / {usage.available} tokens ({usage.ratio:.0%}); "
                    f"summary chain: {len(engine.chain())}")
        if name == "summarize":
            return engine.summarize_now(argument or None).result().describe()
        if name == "undo-summary":
            record = engine.undo_last()
            return f"undid the summary: {record.undone_description()}"
        if name == "history":
            chain = engine.chain()
            summaries = [f"{r.depth}. {r.result(engine.archive.covered_count(r)).describe()} ({r.kind}, {r.trigger})"
                         for r in chain] or ["no summaries"]
            recent = [f"  {m.role}: {_one_line(m)}" for m in engine.archive.visible()[-HISTORY_MESSAGES:]]
            return "\n".join([*summaries, *(["recent messages:", *recent] if recent else [])])
        if name in ("pin", "unpin") and save is not None:
            if not engine.messages:
                return "no message to pin yet"
            last = engine.messages[-1]
            engine.set_pinned(last.id, name == "pin")
            save(engine.messages[-1])
            return f"{name}ned the last message: {_one_line(engine.messages[-1])}"
        if name == "help":
            return help_text()
        if name in ("run", "grep"):
            if name == "run":
                messages = run_command_messages(argument, timeout=run_timeout)
            else:
                pattern, path = grep_argument(argument)
                messages = tool_exchange("grep", {"pattern": pattern, "path": path}, grep(pattern, path))
            for message in messages:
                keep(message)
            return messages[-1].content
    except (NothingToSummarize, NothingToUndo, IntegrityError, ToolInputError) as exc:
        return str(exc)
    return f"/{name} works in the window only"


def _one_line(message: Message) -> str:
    text = " ".join(message.content.split()) or ", ".join(c.name for c in message.tool_calls) or "(empty)"
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS - 1] + "…"


@cli.command()
@click.argument("message", required=False)
@click.option("--provider", type=click.Choice(KINDS), default="local", show_default=True, help="the backend")
@click.option("--base-url", help="the server's base URL (OpenAI-compatible: …/v1)")
@click.option("--model", help="the model name on that server")
@click.option("--max-tokens", type=click.IntRange(min=1), default=512, show_default=True,
              help="longest reply in tokens")
@click.option("--temperature", type=click.FloatRange(min=0), default=0.7, show_default=True)
# The least a chat's context window may be (ChatSettings): a smaller one was refused with a pydantic dump.
@click.option("--context-tokens", type=click.IntRange(min=256),
              help="the model's context window, if the backend's own figure is wrong or missing")
@click.option("--summaries", type=click.Choice(("rule", "llm", "hybrid")), default=SummarizationPolicy().mode,
              show_default=True, help="how the terminal chat summarizes old turns")
@click.option("--chat", "chat_ref", help="continue a stored chat (id, unique id prefix or exact title); with MESSAGE, one turn of it")
@data_dir_option
def chat(message: str | None, provider: str, base_url: str | None, model: str | None, chat_ref: str | None,
         data_dir: str | None, **options) -> int:
    """Send MESSAGE and stream the reply to stdout; without MESSAGE, chat one line a turn through the context
    engine, which summarizes old turns as the window fills."""
    # The reply options the turns read (max_tokens, temperature, ...) and where the chat is kept.
    args = SimpleNamespace(**options, chat=chat_ref, data_dir=data_dir)
    try:
        backend = make_provider(provider, base_url=base_url, model=model)
        if message is not None and chat_ref is None:
            return one_message(backend, message, args, sys.stdout, sys.stderr)
        return terminal_chat(backend, args, sys.stdin, sys.stdout, sys.stderr, message)
    except (ProviderError, ValueError) as exc:
        print(f"precis chat: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        print(f"precis chat: {exc}", file=sys.stderr)
        return exit_code(exc)
