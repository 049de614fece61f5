"""Tools for a model whose chat template has none (the embedded model's ChatML): the tools described in the system
message, the way llama-cpp-python's "chatml-function-calling" handler does (each function's name, description and
parameter schema, then how to call one), and a call the model wrote in a fixed form found in its reply.

A forced call needs no form: the reply is constrained to the tool's parameter schema (local.py). Under "auto" the
model writes `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` or answers in text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..model.messages import ToolCall
from ..model.tools import ToolSpec, compact_json
from .tool_calls import UNPARSED, new_call_id, parse_arguments

CALL_START, CALL_END = "<tool_call>", "</tool_call>"


def tools_prompt(tools: Sequence[ToolSpec], forced: ToolSpec | None) -> str:
    """The system message's account of the tools and of how to call one (or that `forced` is called now)."""
    lines = ["You can call functions. Each is given by its name, what it does, and the JSON schema of its arguments:", ""]
    for spec in tools:
        lines += [f"functions.{spec.name}:", spec.description, compact_json(spec.parameters), ""]
    if forced is not None:
        lines.append(f"Call functions.{forced.name} now: reply with its arguments, one JSON object.")
    else:
        lines += ["To call a function, reply with this and nothing else:",
                  f'{CALL_START}{{"name": "<function name>", "arguments": {{<its arguments>}}}}{CALL_END}',
                  "Otherwise answer in plain text."]
    return "\n".join(lines)


def with_system_text(messages: list[dict[str, str]], text: str) -> list[dict[str, str]]:
    """Template messages with `text` added to the leading system message (or a new one: SmolLM2's template would
    otherwise add its default system message before ours)."""
    if messages and messages[0]["role"] == "system":
        first = messages[0]
        return [{**first, "content": "\n\n".join(part for part in (first["content"], text) if part)}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def parse_call(text: str) -> ToolCall | None:
    """The call in a reply that begins with CALL_START, or None when what follows is not a JSON object with the name
    of a function (the reply is then text). Arguments that are not an object are kept as {"_unparsed": raw}."""
    body = text[len(CALL_START):]
    end = body.find(CALL_END)
    try:
        call = json.loads(body[:end] if end >= 0 else body)
    except ValueError:
        return None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
        return None
    arguments = call.get("arguments", {})
    if isinstance(arguments, str):  # some models write the arguments as a JSON string, as OpenAI's wire carries them
        arguments = parse_arguments(arguments)
    elif not isinstance(arguments, dict):
        arguments = {UNPARSED: json.dumps(arguments)}
    return ToolCall(new_call_id(), call["name"], arguments)


class CallWatch:
    """Passes a reply's text on until a call begins. Text that could be the start of CALL_START is held back until
    the next piece shows it is not; from CALL_START on, nothing is passed on: it is the call."""

    def __init__(self) -> None:
        self.text = ""
        self._passed = 0
        self._call_at: int | None = None

    def feed(self, piece: str) -> str:
        """The text now known to be reply text."""
        self.text += piece
        if self._call_at is None:
            found = self.text.find(CALL_START, self._passed)  # passed text holds no beginning of it
            self._call_at = found if found >= 0 else None
        limit = self._call_at if self._call_at is not None else len(self.text) - self._held()
        out = self.text[self._passed:limit]
        self._passed = max(self._passed, limit)
        return out

    @property
    def call_closed(self) -> bool:
        """A call has begun and ended: the model need write no more."""
        return self._call_at is not None and CALL_END in self.text[self._call_at:]

    def finish(self) -> tuple[str, ToolCall | None]:
        """(text held back, the call): what remains is text unless it parses as a call."""
        call = parse_call(self.text[self._call_at:]) if self._call_at is not None else None
        return ("", call) if call is not None else (self.text[self._passed:], None)

    def _held(self) -> int:
        """How many of the last characters are a beginning of CALL_START."""
        for size in range(min(len(CALL_START) - 1, len(self.text)), 0, -1):
            if self.text.endswith(CALL_START[:size]):
                return size
        return 0
