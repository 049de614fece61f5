"""The next prompt as it will be sent, part by part, each with where it came from: what the window's Prompt view and
`precis prompt` show. The text of each part is the text sent; the parts' tokens add up to the prompt's (the gauge's
total when nothing is cut)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from ..model.counted import counted
from ..model.messages import Message
from ..model.tokens import REPLY_PRIMING
from .engine import ContextEngine, Prompt
from .recall_index import content_words
from .usage import SYSTEM_PROMPT_ID

# What each part is, in the user's words.
SYSTEM_PROMPT, OPENING, SESSION = "system prompt", "chat's opening", "session marker"
SUMMARY, PINNED, MESSAGE, CUT = "summary", "pinned message", "message", "message cut to fit"
TOOL_OUTPUT, SHRUNK, LEFT_OUT = "tool output", "tool output shrunk to one line", "note: messages left out"
RECALLED, TOOLS, PRIMING = "recalled from the archive", "tool definitions", "the reply's opening"


@dataclass(frozen=True)
class PromptPart:
    kind: str
    role: str
    text: str  # as sent (for the reply's opening, what stands for the tokens the template adds)
    tokens: int
    source: str = ""  # the message, summary or archived original it comes from ("" for none)
    detail: str = ""  # which summary, how large the original was, which words a recalled message matched

    def as_json(self) -> dict:
        return asdict(self)


def sent_text(message: Message) -> str:
    """A message's text as sent: its content, then each tool call it makes as the model wrote it, one a line
    (`{"name": "read_file", "arguments": {"path": "main.py"}}`): a reply that only calls a tool has no content."""
    calls = [json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
             for call in message.tool_calls]
    return "\n".join(part for part in (message.content, *calls) if part)


def prompt_parts(engine: ContextEngine, prompt: Prompt | None = None) -> tuple[list[PromptPart], int]:
    """(the parts of the prompt the next reply is written from, in the order sent; its tokens). Tool definitions come
    first (sent beside the messages), the reply's opening last. `prompt`: the engine's assemble() if made already."""
    archive, counter = engine.archive, engine.counter
    prompt = prompt or engine.assemble()
    pending = next((m.content for m in reversed(engine.messages) if m.role == "user"), "")
    asked = set(content_words(pending))
    raw: list[tuple[str, str, str, int, str, str]] = []
    if engine.setup.tool_tokens:
        raw.append((TOOLS, "system", engine.setup.tool_text, engine.setup.tool_tokens, "", ""))
    for item in prompt.items:
        message, source = item.message, item.source_id
        kind, detail = MESSAGE, ""
        if item.kind == "system":
            kind = (SYSTEM_PROMPT if source == SYSTEM_PROMPT_ID else
                    OPENING if archive.is_opening(message) else SESSION)
        elif item.kind == "summary":
            record = archive.by_record[source]
            kind = SUMMARY
            detail = (f"depth {record.depth}, {counted(archive.covered_count(record), 'message')}, {record.kind}, "
                      f"written by {record.written_by}")
        elif item.kind == "recalled":
            original = archive.messages[archive.position[source]]
            kind = RECALLED
            matched = sorted(asked & set(content_words(original.content)))
            detail = "matched: " + ", ".join(matched) if matched else "follows a matched message"
        elif item.kind == "trimmed" and source in archive.position and item.tokens_before_cut is None:
            kind = SHRUNK
            detail = f"from {counter.raw_message_tokens(archive.messages[archive.position[source]]):,} tokens"
        elif item.kind == "trimmed":
            kind, source = LEFT_OUT, ""  # a note of the assembler's own: it stands for no one message
        elif item.tokens_before_cut is not None:
            kind, detail = CUT, f"cut from {item.tokens_before_cut:,} tokens"
        elif item.kind == "tool_output":
            kind = TOOL_OUTPUT
        elif message.pinned:
            kind = PINNED
        raw.append((kind, message.role, sent_text(message), item.tokens, source, detail))
    raw.append((PRIMING, "assistant", "", REPLY_PRIMING, "", "the header the model's reply starts with"))
    # Calibrated as running sums, as the gauge's kinds are: the parts add up to the prompt's total.
    parts, running, shown = [], 0, 0
    for kind, role, text, tokens, source, detail in raw:
        running += tokens
        calibrated = counter.calibrated(running) - shown
        shown += calibrated
        parts.append(PromptPart(kind, role, text, calibrated, source, detail))
    return parts, prompt.tokens
