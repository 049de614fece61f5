"""Usage accounting: what the prompt holds before any trimming, in order, and how much of the budget it takes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..model.messages import Message
from ..model.tokens import REPLY_PRIMING, TokenCounter
from ..settings import SummarizationPolicy
from ..summary.summarizers import Summarizer
from ..summary.trail_coverage import context_text as coverage_context_text
from .archive import Archive, shown_kind

if TYPE_CHECKING:  # recall builds ContextItems from this module
    from .recalling import Recaller

SYSTEM_PROMPT_ID = "system-prompt"

ItemKind = Literal["system", "summary", "recalled", "message", "tool_output", "trimmed"]


@dataclass(frozen=True)
class Budget:
    window: int
    reserve_output: int = 512
    summarizer_reserve: int = 0

    def __post_init__(self) -> None:
        if self.window <= 0:
            raise ValueError(f"context window must be positive, got {self.window}")
        if self.reserve_output < 0 or self.summarizer_reserve < 0:
            raise ValueError("reserved tokens cannot be negative")
        if self.available < 64:
            raise ValueError(
                f"context window {self.window} leaves {self.available} tokens after reserving "
                f"{self.reserve_output} for the reply and {self.summarizer_reserve} for the summarizer; need >= 64")

    @property
    def available(self) -> int:
        return self.window - self.reserve_output - self.summarizer_reserve


@dataclass
class ContextSetup:
    """What every part of the engine reads and its owner may change (a chat's settings): one shared object, so a
    change reaches every part at once."""

    budget: Budget
    policy: SummarizationPolicy
    counter: TokenCounter
    summarizer: Summarizer
    # The chat's system prompt (a setting, not a message): always first, never summarized.
    system_prompt: str = ""
    # The tool definitions sent with each request (ContextEngine.set_tools), as the text a counter reads, and its raw
    # tokens: like the system prompt, a fixed part of every prompt that no summary removes.
    tool_text: str = ""
    tool_tokens: int = 0

    def overhead(self) -> int:
        """Raw tokens every prompt has beside its items: the reply's priming and the tool definitions."""
        return REPLY_PRIMING + self.tool_tokens

    def message_tokens(self, message: Message) -> int:
        """A message's raw tokens by the counter set now."""
        return self.counter.raw_message_tokens(message)


@dataclass(slots=True)  # one per visible message of a long chat: made fast
class ContextItem:
    kind: ItemKind
    message: Message
    source_id: str
    tokens: int
    # Set when the last resort of trimming cut this item's text: its (raw) tokens before the cut.
    tokens_before_cut: int | None = None


@dataclass
class UsageReport:
    by_kind: dict[str, int]
    total: int
    available: int
    window: int
    reserve_output: int
    ratio: float
    exact: bool  # counted with the model's own tokenizer (not while some counts are stand-ins for counts to come)
    # What no summary can remove (system prompt, session and pinned messages, the chain), as a share of the budget.
    floor_ratio: float = 0.0


class UsageMeter:
    def __init__(self, setup: ContextSetup, archive: Archive, recaller: Recaller):
        self.setup = setup
        self.archive = archive
        self.recaller = recaller

    def _system_prompt(self) -> Message | None:
        if not self.setup.system_prompt.strip():
            return None
        return Message(role="system", content=self.setup.system_prompt, id=SYSTEM_PROMPT_ID, created_at=0.0)

    def head(self) -> list[tuple[ItemKind, Message, str]]:
        """(kind, message, source id) of what comes before the conversation: the system prompt, the chat's opening
        system message and the summaries."""
        visible = self.archive.visible()
        out: list[tuple[ItemKind, Message, str]] = []
        prompt = self._system_prompt()
        if prompt is not None:
            out.append(("system", prompt, SYSTEM_PROMPT_ID))
        out += [("system", m, m.id) for m in visible[:1] if self.archive.is_opening(m)]
        out += [("summary", self.archive.summary_message(r), r.id) for r in self.archive.chain]
        return out

    def conversation(self) -> list[Message]:
        """The visible messages after the chat's opening, in order (a later system message, a session or date
        marker, stays where it is: it dates the messages after it), except those that say nothing (an empty reply)."""
        visible = self.archive.visible()
        conversation = visible[1:] if visible and self.archive.is_opening(visible[0]) else visible
        if self.archive.visible_tally().silent:  # a reply begun elsewhere, or stopped before its first word
            return [m for m in conversation if not m.says_nothing]
        return conversation

    def context_messages(self) -> list[tuple[ItemKind, Message, str]]:
        """(kind, message, source id) of everything the prompt holds before trimming, in order."""
        return self.head() + [(shown_kind(m), m, m.id) for m in self.conversation()]

    def items(self, conversation: list[Message] | None = None) -> list[ContextItem]:
        """The prompt's items before trimming, each with its (uncalibrated) token count; `conversation` in place of
        the visible conversation if given."""
        tokens = self.setup.counter.raw_message_tokens
        return [ContextItem(kind, m, source, tokens(m)) for kind, m, source in self.head()] + [
            ContextItem(shown_kind(m), m, m.id, tokens(m)) for m in (
                self.conversation() if conversation is None else conversation)]

    def _system_tokens(self) -> int:
        """Raw tokens of the system prompt and the visible system messages."""
        prompt = self._system_prompt()
        return self.archive.visible_tally().by_kind["system"] + (
            self.setup.counter.raw_message_tokens(prompt) if prompt is not None else 0)

    def _summary_tokens(self) -> int:
        tokens = self.setup.counter.raw_message_tokens
        return sum(tokens(self.archive.summary_message(r)) for r in self.archive.chain)

    def raw_total(self) -> int:
        """Raw tokens of items() with the reply's priming: the prompt before trimming and recall, from the tally."""
        tally = self.archive.visible_tally()
        return (self.setup.overhead() + self._system_tokens() + self._summary_tokens() + tally.by_kind["message"]
                + tally.by_kind["tool_output"])

    def fixed_raw(self) -> int:
        """Raw tokens no summary can remove but the chain itself: the reply's priming, the system prompt and
        messages, and the pinned messages (from the tally: asking costs the same in a chat of any length)."""
        return self.setup.overhead() + self._system_tokens() + self.archive.visible_tally().pinned

    def context_text(self) -> str:
        """Everything the model sees, as one text (for trail-coverage checks)."""
        return coverage_context_text(message for _, message, _ in self.context_messages())

    def usage(self, recall: bool = True) -> UsageReport:
        """Use of the window by kind, before any trimming. The policy acts on it without recall: recalled text
        only fills room that is free, so it never makes a summary due.

        Read from the archive's running tally of visible messages plus the chain and the system prompt (a few
        items), so asking after every appended message costs the same in a chat of any length."""
        counter, budget = self.setup.counter, self.setup.budget
        tally = self.archive.visible_tally()
        system, summaries = self._system_tokens(), self._summary_tokens()
        tools = self.setup.tool_tokens
        raw = REPLY_PRIMING + tools + system + summaries + tally.by_kind["message"] + tally.by_kind["tool_output"]
        recalled = sum(i.tokens for i in self.recaller.recalled(raw)) if recall else 0
        floor = REPLY_PRIMING + tools + system + summaries + tally.pinned
        total = counter.calibrated(raw + recalled)
        # The kinds add up to the total shown above them: the reply's priming (the header the model's answer starts
        # with) counts with the messages, and calibration rounds running sums, not each kind (3 tokens apart before).
        raw_by_kind = {"system": system, "tools": tools, "summaries": summaries, "recalled": recalled,
                       "messages": REPLY_PRIMING + tally.by_kind["message"], "tool_outputs": tally.by_kind["tool_output"]}
        by_kind, running, shown = {}, 0, 0
        for kind, tokens in raw_by_kind.items():
            running += tokens
            by_kind[kind] = counter.calibrated(running) - shown
            shown += by_kind[kind]
        available = budget.available
        return UsageReport(by_kind=by_kind, total=total, available=available, window=budget.window,
                           reserve_output=budget.reserve_output, ratio=total / available,
                           exact=counter.is_exact and not counter.estimating, floor_ratio=counter.calibrated(floor) / available)
