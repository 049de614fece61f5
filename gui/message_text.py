"""How tool calls and terminal output read in the conversation: one-line subjects, cleaned output, first lines."""

from __future__ import annotations

import functools
import json
import re

from ..core.model.messages import Message, ToolCall
from ..core.summary.text_rules import is_progress_meter, without_harness_head
from ..core.summary.tool_output import result_mark

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _call_subject(arguments: dict) -> str:
    shown = arguments.get("command") or arguments.get("path") or arguments.get("file_path") or arguments.get("pattern")
    if shown is None:
        shown = json.dumps(arguments, ensure_ascii=False) if arguments else ""
    return str(shown)


def call_subject(call: ToolCall) -> str:
    """A call's main argument on one line, without the tool's name where a command starts with it (imported
    SWE-agent calls are named for their program: "curl" running "curl -X POST ...")."""
    subject = _call_subject(call.arguments).strip().replace("\n", " ⏎ ")
    return subject[len(call.name):].lstrip() if subject.split(" ", 1)[0] == call.name else subject


def tool_call_line(message: Message) -> str:
    """One line per call: tool name and its main argument."""
    return "\n".join(f"{call.name}  {call_subject(call)}".rstrip() for call in message.tool_calls)


FAILED_MARK = "✗"  # the one-line summary's ❌, which monospace fonts lack (it needs an emoji font)


def outcome_mark(result: Message) -> str:
    """✓ or ✗ (? when a command's exit code is unknown) for a tool result row; worked out once per result, not at
    each paint."""
    return _mark(result.id, result.name or "", result.content)


@functools.lru_cache(maxsize=4096)
def _mark(_message_id: str, name: str, content: str) -> str:
    mark = result_mark(Message(role="tool", content=content, name=name or None))
    return FAILED_MARK if mark == "❌" else mark


def tool_call_details(message: Message) -> str:
    return "\n\n".join(
        f"{call.name}\n{json.dumps(call.arguments, ensure_ascii=False, indent=2)}" for call in message.tool_calls)


def clean_output(text: str) -> str:
    """Terminal output as plain lines: CR/LF normalised, backspaces and other control characters dropped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _CONTROL.search(text):
        text = _CONTROL.sub("", text)
    return text.strip("\n")


def first_line_and_count(text: str) -> tuple[str, int]:
    """The first line of a tool output (cleaned) that has a letter or digit, else its first non-blank line, and its
    number of lines, without copying it all. An MCP server's JSON answer would otherwise read "{"."""
    stripped = text.strip()
    total = stripped.count("\n") + 1 if stripped else 0
    head = without_harness_head(stripped[:2000])
    lines = [line for line in (_CONTROL.sub("", raw).strip() for raw in head.splitlines()) if line]
    return next((line for line in lines if any(c.isalnum() for c in line) and not is_progress_meter(line)),
                lines[0] if lines else "(no output)"), total


def first_lines(text: str, count: int) -> tuple[str, int]:
    """The first `count` lines of text, and how many lines there are in all."""
    total = text.count("\n") + 1
    if total <= count:
        return text, total
    end = -1
    for _ in range(count):
        end = text.find("\n", end + 1)
    return text[:end], total
