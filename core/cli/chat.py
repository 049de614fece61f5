"""`precis chat`: one message streams its reply to stdout; without one, a terminal chat through the context engine."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from ..context.engine import Budget, ContextEngine, EngineEvent, NothingToSummarize
from ..context.policy import SummarizationPolicy
from ..model.messages import Message
from ..model.tokens import TokenCounter
from ..providers.base import CancelToken, ContextLengthExceeded, Provider, ProviderError, Usage
from ..providers.registry import KINDS, make_provider
from ..summary.summarize import make_summarizer

QUIT_COMMANDS = ("/quit", "/exit")


@dataclass
class Reply:
    text: str
    usage: Usage | None = None
    error: ProviderError | None = None
    cancelled: bool = False

    @property
    def incomplete(self) -> bool:
        return self.cancelled or self.error is not None


def stream_reply(provider: Provider, messages: list[Message], out: TextIO, *, max_tokens: int,
                 temperature: float) -> Reply:
    """Print the reply as it streams. Ctrl-C cancels it (the connection is dropped); what arrived is kept."""
    cancel = CancelToken()
    parts: list[str] = []
    usage = None
    stream = provider.stream_chat(messages, max_tokens=max_tokens, temperature=temperature, cancel=cancel)
    try:
        for chunk in stream:
            if chunk.text:
                parts.append(chunk.text)
                out.write(chunk.text)
                out.flush()
            if chunk.done:
                usage = chunk.usage
    except KeyboardInterrupt:
        cancel.cancel()
        return Reply("".join(parts), cancelled=True)
    except ProviderError as exc:
        # Cancelled and StreamInterrupted carry the text that arrived; the chunks printed so far are the same.
        return Reply(getattr(exc, "partial", "") or "".join(parts), error=exc)
    finally:
        stream.close()
    return Reply("".join(parts), usage=usage)


def _finish_line(reply: Reply, out: TextIO, err: TextIO) -> None:
    if reply.text:
        out.write("\n")
    if reply.cancelled:
        print("[reply cancelled; the part shown is kept]", file=err)
    elif reply.error:
        print(f"precis chat: {reply.error}", file=err)


def one_message(provider: Provider, text: str, args, out: TextIO, err: TextIO) -> int:
    reply = stream_reply(provider, [Message("user", text)], out, max_tokens=args.max_tokens,
                         temperature=args.temperature)
    _finish_line(reply, out, err)
    return 130 if reply.cancelled else 1 if reply.error else 0


def describe_event(event: EngineEvent) -> str:
    fallback = ", fell back to rules" if event.fallback_used else ""
    what = "merged older summaries" if event.kind == "merged" else "summarized older messages"
    return (f"[precis: {what} ({event.reason}): {event.tokens_before} -> {event.tokens_after} tokens, "
            f"depth {event.depth}, {event.mode}{fallback}]")


def chat_turn(engine: ContextEngine, provider: Provider, args, out: TextIO, err: TextIO) -> Reply:
    """Send what the engine assembles; on a context-length error from the backend, summarize and retry once."""
    for attempt in range(2):
        prompt = engine.assemble()
        raw_estimate = engine.counter.prompt_raw_tokens(prompt.messages)
        out.write("model> ")
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
        engine.append(Message("assistant", reply.text, incomplete=reply.incomplete))
    return reply


def terminal_chat(provider: Provider, args, stdin: TextIO, out: TextIO, err: TextIO) -> int:
    window = args.context_tokens or provider.context_window()
    exact = provider.count_tokens if provider.count_tokens("") is not None else None
    policy = SummarizationPolicy(mode=args.summaries)
    engine = ContextEngine(Budget(window=window, reserve_output=args.max_tokens), policy, TokenCounter(exact=exact),
                           make_summarizer(args.summaries, provider))
    engine.subscribe(lambda event: print(describe_event(event), file=out, flush=True))
    print(f"precis chat with {provider.name} {provider.model} ({window} token window). "
          f"One line a turn; {QUIT_COMMANDS[0]} or end of input leaves.", file=out)
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
        engine.append(Message("user", text))
        chat_turn(engine, provider, args, out, err)


def run(args) -> int:
    try:
        provider = make_provider(args.provider, base_url=args.base_url, model=args.model)
        if args.message is not None:
            return one_message(provider, args.message, args, sys.stdout, sys.stderr)
        return terminal_chat(provider, args, sys.stdin, sys.stdout, sys.stderr)
    except (ProviderError, ValueError) as exc:
        print(f"precis chat: {exc}", file=sys.stderr)
        return 2


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "chat", help="chat with a model in the terminal",
        description="Send MESSAGE and stream the reply to stdout; without MESSAGE, chat one line a turn through "
                    "the context engine, which summarizes old turns as the window fills.")
    parser.add_argument("message", nargs="?", metavar="MESSAGE", help="one message to send")
    parser.add_argument("--provider", choices=KINDS, default="local", help="the backend (default: the local model)")
    parser.add_argument("--base-url", help="the server's base URL (OpenAI-compatible: …/v1)")
    parser.add_argument("--model", help="the model name on that server")
    parser.add_argument("--max-tokens", type=int, default=512, help="longest reply in tokens (512)")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--context-tokens", type=int,
                        help="the model's context window, if the backend's own figure is wrong or missing")
    parser.add_argument("--summaries", choices=("rule", "llm", "hybrid"), default=SummarizationPolicy().mode,
                        help="how the terminal chat summarizes old turns")
    parser.set_defaults(func=run)
