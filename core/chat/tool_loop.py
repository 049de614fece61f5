"""The model using tools, written once for the window and the terminal: the model replies; each tool call it makes
is asked about (when it writes or runs), run, and its result stored as a message; the model is called again with
them, until it answers without a call, the user stops it, or the step limit is reached. A call that cannot run (an
unknown tool, arguments that are not JSON or do not fit the schema, a path outside the workspace) is answered with
why at once: the user is not asked about it.

Every call is answered with a result (a denied, skipped or stopped one says so), as every provider requires; the
results go through the chat's engine like any message, so old outputs shrink and summaries are made between steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ..model.messages import Message, ToolCall
from ..model.tools import AUTO, SAYS_ERROR, ToolOutcome, ToolSpec, not_run
from ..providers.base import CancelToken
from .session import ChatSession
from .snapshot import ReplyResult

Decision = Literal["once", "chat", "deny"]
# What the user decides on a call that writes or runs: run it this time, run this tool without asking for the rest
# of the chat, or do not run it (the model is told).
ALLOW_ONCE: Decision = "once"
ALLOW_IN_CHAT: Decision = "chat"
DENY: Decision = "deny"
USER_DENIED = "the user denied this call"  # what the model is told of a denied call, unless the loop says otherwise

DEFAULT_MAX_STEPS = 25


class Tools(Protocol):
    """What the loop needs of a chat's tools (core.tools.toolbox.Toolbox)."""

    def specs(self) -> list[ToolSpec]: ...

    def unknown(self, name: str) -> str | None: ...

    def problem(self, call: ToolCall) -> str: ...

    def needs_consent(self, name: str) -> bool: ...

    def preview(self, call: ToolCall) -> str: ...

    def run(self, call: ToolCall, cancel: CancelToken | None = None) -> ToolOutcome: ...


# Asked on the loop's thread, which waits for the answer: (the call, what it would do) -> the user's decision.
Ask = Callable[[ToolCall, str], Decision]


@dataclass
class Step:
    """One call and what came of it: its result as stored (the message the model reads next)."""

    call: ToolCall
    result: Message
    outcome: ToolOutcome
    asked: bool = False


@dataclass
class Turn:
    """A message's whole answer: every reply of the model, every step between them, and why it ended early, if it
    did ("" when the model answered)."""

    replies: list[ReplyResult] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    ended: str = ""


@dataclass
class ToolLoop:
    """The tools of one chat. `ask_before_reading`: read-only tools ask too. The tools the user allowed in this chat
    (ChatSettings.allowed_tools) run without asking. `denied`: what the model is told of a call `ask` denied (a
    terminal chat whose input is piped denies every call it would ask about, since no one is there to answer)."""

    session: ChatSession
    tools: Tools
    ask: Ask
    max_steps: int = DEFAULT_MAX_STEPS
    ask_before_reading: bool = False
    denied: str = USER_DENIED

    def answer(self, *, cancel: CancelToken, on_text: Callable[[Message, str], object],
               on_start: Callable[[Message], object] = lambda _placeholder: None,
               on_reply: Callable[[ReplyResult], object] = lambda _result: None,
               on_step: Callable[[Step], object] = lambda _step: None,
               on_progress: Callable[[int, int], object] | None = None, regenerate: Message | None = None,
               force: str | None = None) -> Turn:
        """Answer the user's last message, with tools. `on_start(placeholder)` as each reply begins (a new
        placeholder for each: a window shows it before its first words); `on_text(placeholder, piece)` as it
        streams; `on_reply` when it ends; `on_step` when a call's result is stored. With `regenerate` (the last
        reply), the first reply writes it again in its place, its earlier text kept as a version of it. With
        `force` (a tool's name: /use), the first reply must call that tool; ValueError if there is none of the name."""
        session, turn = self.session, Turn()
        specs = self.tools.specs()
        unknown = self.tools.unknown(force) if force is not None else None
        if unknown:
            raise ValueError(unknown)
        # ToolsTooLarge goes to the caller: nothing was sent yet. /use's call is offered its tool in any chat.
        session.use_tools(specs if force is not None else offered_tools(session, specs))
        while True:
            again = regenerate is not None and not turn.replies
            placeholder = (regenerate.with_changes(content="", incomplete=True, cut_at=None)
                           if regenerate is not None and again else Message(role="assistant", content="", incomplete=True))
            on_start(placeholder)
            result = session.reply(placeholder, on_text=lambda piece, p=placeholder: on_text(p, piece),
                                   cancel=cancel, on_progress=on_progress, regenerate=again,
                                   tool_choice=force if force is not None and not turn.replies else AUTO)
            turn.replies.append(result)
            on_reply(result)
            calls = result.message.tool_calls
            if not calls or result.problem or result.unsaved:  # a call not saved is not run: nothing would say it was
                turn.ended = "stopped" if cancel.cancelled else result.problem or ""
                if not turn.ended and force is not None and len(turn.replies) == 1:  # a server may not hold to it
                    turn.ended = f"the model answered without calling {force}, which /use asked for"
                return turn
            over = False
            for call in calls:  # the calls past the limit are answered, not run
                over = len(turn.steps) >= self.max_steps
                step = self._step(call, cancel, over)
                session.add_messages([step.result])
                turn.steps.append(step)
                on_step(step)
            if cancel.cancelled:
                turn.ended = "stopped"
                return turn
            if over:
                turn.ended = (f"the step limit was reached: {self.max_steps} tool calls for one message "
                              f"(Settings → This chat sets it)")
                return turn
            session.use_tools(offered_tools(session, self.tools.specs()))  # a server that started or ended meanwhile

    def _step(self, call: ToolCall, cancel: CancelToken, over: bool) -> Step:
        asked = False
        if cancel.cancelled:
            outcome = not_run("the user stopped the answer")
        elif over:
            outcome = not_run(f"the limit of {self.max_steps} tool calls for one message was reached; "
                              "answer with what you have")
        elif problem := self.tools.problem(call):  # it cannot run: nothing to ask the user about
            outcome = ToolOutcome(problem, ok=False)
        else:
            decision: Decision = ALLOW_ONCE
            allowed = call.name in self.session.settings.allowed_tools
            if not allowed and (self.ask_before_reading or self.tools.needs_consent(call.name)):
                asked = True
                decision = self.ask(call, self.tools.preview(call))
                if decision == ALLOW_IN_CHAT:
                    self.session.allow_tool(call.name)
            outcome = (not_run(self.denied) if decision == DENY
                       else self.tools.run(call, cancel))
        return Step(call, tool_result(call, outcome), outcome, asked)


def offers_tools(session: ChatSession) -> bool:
    """Whether each message offers the model the chat's tools (ChatSettings.offer_tools). "auto" offers them to every
    model but the built-in SmolLM2-135M: it called none unasked in 160 plain messages, while their definitions (about
    700 tokens) doubled its time a reply and turned its small talk to programming (benchmarks/bench_unasked_calls.py,
    docs/tools.md). A GGUF the user picked is another model, and is offered them."""
    choice = session.settings.offer_tools
    return choice == "yes" or (choice == "auto" and not getattr(session.provider, "built_in", False))


def offered_tools(session: ChatSession, specs: list[ToolSpec]) -> list[ToolSpec]:
    """The tools sent with each message: `specs`, or none where offers_tools says so."""
    return specs if offers_tools(session) else []


def tool_result(call: ToolCall, outcome: ToolOutcome) -> Message:
    """The message the model reads for a call: the tool's output, marked when the tool failed or was cut short (the
    bounded tools end such output with a bracketed note of why; others get one)."""
    text = outcome.output if outcome.ok or SAYS_ERROR.match(outcome.output) else f"Error: {outcome.output}"
    if outcome.cut and not text.rstrip().endswith("]"):
        text += "\n[output cut short: a time or size limit, or Stop]"
    return Message(role="tool", content=text, name=call.name, tool_call_id=call.id, incomplete=outcome.cut,
                   created_at=time.time())
