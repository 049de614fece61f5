"""What a model's summary may say: the strict JSON it is asked for (bounded, so its grammar always closes), checked
against the transcript (what it could not have read there is dropped) and cleaned of noise, then rendered as the
summary's text."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from ..model.records import ActionItem
from .text_rules import SENTENCE_END

Point = Annotated[str, Field(max_length=120)]

# In the schema sent (the grammar, OpenAI's strict mode), no key beyond the fields: llama.cpp's grammar otherwise lets
# a model add keys of any depth and length after them ("narrative": "...", "output": [{...}]), so the JSON need not
# close within the output budget. A reply read back may still have other keys (a server that ignores the schema).
CLOSED = ConfigDict(json_schema_extra={"additionalProperties": False})


class LLMActionItem(BaseModel):
    model_config = CLOSED

    owner: str = Field("", max_length=30)
    task: str = Field(max_length=120)
    due: str = Field("", max_length=30)


class LLMSummaryOut(BaseModel):
    """The strict JSON a model must return; mirrors the narrative part of a SummaryRecord.

    Every string and list is bounded: a grammar built from this schema then guarantees the JSON closes within
    the output budget, even when a small model starts to repeat itself (no key beyond these: CLOSED).
    """

    model_config = CLOSED

    narrative: str = Field(min_length=1, max_length=600)
    key_points: list[Point] = Field(default_factory=list, max_length=6)
    decisions: list[Point] = Field(default_factory=list, max_length=4)
    action_items: list[LLMActionItem] = Field(default_factory=list, max_length=2)
    unresolved_questions: list[Point] = Field(default_factory=list, max_length=2)
    entities: list[Annotated[str, Field(max_length=40)]] = Field(default_factory=list, max_length=8)


SUMMARY_SCHEMA = LLMSummaryOut.model_json_schema()


def action_items(out: LLMSummaryOut) -> list[ActionItem]:
    return [ActionItem(**item.model_dump()) for item in out.action_items]


# Tokens specific enough that a model cannot have them unless the transcript does: URLs, paths, backticked code,
# words with digits, camelCase / CamelCase names.
SPECIFIC_TOKEN = re.compile(
    r"https?://[^\s)\]]+|`[^`\n]+`|[\w.~-]*/[\w./~-]+|\b\w*\d\w*\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z]+[A-Z]\w*\b")
# A capitalized word after a sentence's first: a name (Melissa, Redis), which a small model invents for people and
# things the transcript never mentions. The first word is capitalized anyway, so it is not read as a name.
NAME = re.compile(r"(?<=[\s(\"'“])[A-Z][a-z]{2,}\b")
# Pieces of the request itself that a small model may echo back.
SCAFFOLDING = ("older messages cut", "assistant:", "user:", "system:", "tool result", "transcript to summarize")


def is_grounded(text: str, source: str) -> bool:
    """No specific token or name of `text` is missing from `source` (both compared in lower case), and no
    scaffolding."""
    lowered = text.lower()
    if any(marker in lowered for marker in SCAFFOLDING):
        return False
    for token in SPECIFIC_TOKEN.findall(text):
        token = token.strip("`.,:;()[]{}\"'").lower()
        if len(token) >= 3 and token not in source:
            return False
    first = text.split(maxsplit=1)
    return not any(name.lower() not in source for name in NAME.findall(first[1] if len(first) > 1 else ""))


def ground(out: LLMSummaryOut, source: str) -> tuple[LLMSummaryOut, int]:
    """Drop every sentence and item naming something the transcript does not: the prompt forbids invented
    content, and this enforces it. Returns the grounded output and how many pieces were dropped."""
    dropped = 0

    def keep(items: list[str]) -> list[str]:
        nonlocal dropped
        kept = [item for item in items if is_grounded(item, source)]
        dropped += len(items) - len(kept)
        return kept

    narrative = " ".join(keep([p.strip() for p in SENTENCE_END.split(out.narrative) if p.strip()]))
    actions = [a for a in out.action_items if is_grounded(f"{a.owner} {a.task} {a.due}", source)]
    dropped += len(out.action_items) - len(actions)
    grounded = out.model_copy(update={
        "narrative": narrative, "key_points": keep(out.key_points), "decisions": keep(out.decisions),
        "action_items": actions, "unresolved_questions": keep(out.unresolved_questions),
        "entities": keep(out.entities)})
    return grounded, dropped


MIN_LETTERS = 5
HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
MARKUP = re.compile(r"<[^>]*>|[\[\]{}#*_`|]+|^\W*\d+\W*$")


def says_something(text: str) -> bool:
    """False for punctuation, numbering, markup fragments or a couple of letters: "#1", "<br>", "][, due"."""
    if HTML_TAG.search(text):  # a fragment of the model's markup, not a point
        return False
    plain = MARKUP.sub(" ", text)
    return sum(c.isalpha() for c in plain) >= MIN_LETTERS and len(re.findall(r"[A-Za-z]{2,}", plain)) >= 2


# Stray punctuation a small model starts a sentence or item with (", The server responded ...").
LEADING_PUNCTUATION = re.compile(r"^[\s,;:.)\]}>|•·–—-]+")


def whole_sentences(text: str) -> str:
    """Text up to its last full sentence: a reply stopped by its token or length cap ends mid-sentence."""
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s|$)", text)]
    return text[:ends[-1]] if ends else text


def without_noise(out: LLMSummaryOut) -> LLMSummaryOut:
    """The model's narrative and lists without the sentences and items that say nothing ("1.", "<br>", "**"), without
    stray punctuation in front, and the narrative without a last sentence cut off."""

    def clean(items: list[str]) -> list[str]:
        return [item for item in (LEADING_PUNCTUATION.sub("", i) for i in items) if says_something(item)]

    sentences = [p.strip() for p in SENTENCE_END.split(whole_sentences(out.narrative.strip()))]
    actions = [a.model_copy(update={"task": LEADING_PUNCTUATION.sub("", a.task)}) for a in out.action_items]
    return out.model_copy(update={
        "narrative": " ".join(clean(sentences)),
        "key_points": clean(out.key_points),
        "decisions": clean(out.decisions),
        "unresolved_questions": clean(out.unresolved_questions),
        "action_items": [a for a in actions if says_something(a.task)],
    })


def render_llm_text(out: LLMSummaryOut) -> str:
    parts = [out.narrative.strip()]
    if out.key_points:
        parts.append("Key points:\n" + "\n".join(f"- {p}" for p in out.key_points))
    if out.decisions:
        parts.append("Decisions:\n" + "\n".join(f"- {d}" for d in out.decisions))
    if out.action_items:
        parts.append("Action items:\n" + "\n".join(
            f"- {a.task}" + (f" ({a.owner})" if a.owner else "") + (f", due {a.due}" if a.due else "")
            for a in out.action_items))
    if out.unresolved_questions:
        parts.append("Open questions:\n" + "\n".join(f"- {q}" for q in out.unresolved_questions))
    return "\n\n".join(parts)
