"""The context engine: what the model sees, when to summarize, and how to undo it.

A facade over its parts, each in its own module: the archive (originals, records, the chain), usage accounting,
recall in the prompt, prompt assembly (trimming to the budget) and summarization (when, how much, merges, undo).
State is the full history of original messages plus the summary records; nothing is ever deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar, overload

from ..model.bulk import collector_paused
from ..model.messages import Message
from ..model.records import SummaryRecord
from ..model.tokens import TokenCounter
from ..model.tools import ToolSpec, specs_json
from ..settings import SummarizationPolicy
from ..summary.summarizers import RuleSummarizer, Summarizer
from .archive import Archive
from .events import EngineEvent, IntegrityError, NothingToSummarize, NothingToUndo
from .prompt import Prompt, PromptAssembler
from .recall_index import RecallIndex, RecallSearch
from .recalling import Recaller, recalled_parts
from .summarizing import Summarization
from .usage import Budget, ContextItem, ContextSetup, UsageMeter, UsageReport

# What callers import from here (the parts' modules are the engine's own business).
__all__ = ["Budget", "ContextEngine", "ContextItem", "EngineEvent", "IntegrityError", "NothingToSummarize",
           "NothingToUndo", "Prompt", "ToolsTooLarge", "UsageReport", "recalled_parts"]


T = TypeVar("T")


class _Shared(Generic[T]):
    """An engine attribute of type T that lives on one of its parts (`part`), so the engine and every part see one
    value."""

    def __init__(self, part: str):
        self.part = part

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, engine: None, owner: type | None = None) -> _Shared[T]: ...

    @overload
    def __get__(self, engine: ContextEngine, owner: type | None = None) -> T: ...

    def __get__(self, engine: ContextEngine | None, owner: type | None = None) -> _Shared[T] | T:
        if engine is None:
            return self
        value: T = getattr(getattr(engine, self.part), self.name)
        return value

    def __set__(self, engine: ContextEngine, value: T) -> None:
        setattr(getattr(engine, self.part), self.name, value)


# The most of the budget the tool definitions sent with each request may take.
MAX_TOOLS_SHARE = 0.5


class ToolsTooLarge(ValueError):
    """The tools' definitions would leave the conversation too little of the budget: none are sent."""


class ContextEngine:
    # The chat's settings, shared by every part (a new policy or system prompt takes effect at once).
    budget = _Shared[Budget]("setup")
    policy = _Shared[SummarizationPolicy]("setup")
    counter = _Shared[TokenCounter]("setup")
    summarizer = _Shared[Summarizer]("setup")
    system_prompt = _Shared[str]("setup")
    # Every original message, in order, and every summary record, in creation order.
    messages = _Shared[list[Message]]("archive")
    records = _Shared[list[SummaryRecord]]("archive")

    def __init__(self, budget: Budget, policy: SummarizationPolicy | None = None,
                 counter: TokenCounter | None = None, summarizer: Summarizer | None = None,
                 system_prompt: str = "", recall_search: RecallSearch | None = None):
        self.setup = ContextSetup(budget, policy or SummarizationPolicy(), counter or TokenCounter(),
                                  summarizer or RuleSummarizer(), system_prompt)
        # Recall searches the store's index when there is one, else an in-memory index of the archived originals.
        # The parts refer to the setup, never back to the engine: no reference cycle keeps a closed chat's engine.
        index = None
        if recall_search is None:
            index = RecallIndex()
            recall_search = index.search
        self.archive = Archive(self.setup.message_tokens, index)
        self.recaller = Recaller(self.setup, self.archive, recall_search)
        self.meter = UsageMeter(self.setup, self.archive, self.recaller)
        self.assembler = PromptAssembler(self.setup, self.meter, self.recaller)
        self.summarization = Summarization(self.setup, self.archive, self.meter, self.assembler)

    @classmethod
    def restore(cls, messages: list[Message], records: list[SummaryRecord], budget: Budget,
                policy: SummarizationPolicy | None = None, counter: TokenCounter | None = None,
                summarizer: Summarizer | None = None, system_prompt: str = "",
                recall_search: RecallSearch | None = None) -> ContextEngine:
        """Rebuild from persisted originals and records (in creation order); statuses say which are active."""
        engine = cls(budget, policy, counter, summarizer, system_prompt, recall_search)
        with collector_paused():
            engine.archive.load(messages, records)
            engine.summarization.restored()
        return engine

    # ----- reading ------------------------------------------------------------------------------------------

    def chain(self) -> list[SummaryRecord]:
        return list(self.archive.chain)

    def archived_by(self, message_id: str) -> str | None:
        return self.archive.holder(message_id)

    def archived_messages(self, record_id: str) -> list[Message]:
        return self.archive.archived_messages(record_id)

    def is_archived(self, message_id: str) -> bool:
        """True if the message is replaced by a summary in the prompt (pinned and system messages never are)."""
        return self.archive.is_archived(message_id)

    def usage(self, recall: bool = True) -> UsageReport:
        return self.meter.usage(recall)

    def assemble(self, recall: bool = True) -> Prompt:
        return self.assembler.assemble(recall)

    def recalled(self) -> list[ContextItem]:
        """What recall puts into the prompt for the pending user message (for the inspector)."""
        return [i for i in self.assemble().items if i.kind == "recalled"]

    def context_text(self) -> str:
        return self.meter.context_text()

    # ----- changing the conversation ------------------------------------------------------------------------

    def append(self, message: Message, *, auto: bool = True) -> SummaryRecord | None:
        """Add a message; with `auto`, summarize if the policy says so and return the new record. A message with
        tool calls added with `auto` is a call being run: no summary is made until its results come (or another
        message does); added without, it is history (a version shown again, a probe), awaiting nothing."""
        self.archive.append(message)
        self.summarization.since_summary += 1
        self.summarization.running_calls = message.id if auto and message.tool_calls else None
        return self.summarization.maybe_summarize() if auto else None

    def set_tools(self, specs: Sequence[ToolSpec]) -> None:
        """The tools sent with each request from now on: their definitions count in every prompt (the gauge's
        "tools"), as the system prompt does. ToolsTooLarge (and none are sent) when they would take more than
        MAX_TOOLS_SHARE of the budget: the conversation would have no room left."""
        text = specs_json(specs)
        tokens = self.counter.count_text(text) if text else 0
        if self.counter.calibrated(tokens) > self.budget.available * MAX_TOOLS_SHARE:
            self.setup.tool_text, self.setup.tool_tokens = "", 0
            raise ToolsTooLarge(f"the definitions of {len(specs)} tools take {tokens:,} tokens, more than half of the "
                                f"{self.budget.available:,} this chat has: switch some tools off, or choose a larger "
                                f"context window")
        self.setup.tool_text, self.setup.tool_tokens = text, tokens

    def count_exactly(self, messages: list[Message]) -> None:
        """Count these messages (those the counter has stand-ins for, TokenCounter.estimate_missing): usage and
        every decision from now on rest on their counts."""
        self.counter.count_messages(messages)
        self.archive.recount()

    def set_pinned(self, message_id: str, pinned: bool) -> None:
        self.archive.set_pinned(message_id, pinned)

    def remove_last(self, message_id: str) -> Message:
        """Remove the newest message (edit-and-resend, regenerate). Older ones are never deleted."""
        message = self.archive.remove_last(message_id)
        self.counter.forget(message_id)
        self.summarization.running_calls = None
        self.summarization.since_summary = max(self.summarization.since_summary - 1, 0)
        return message

    # ----- summaries ----------------------------------------------------------------------------------------

    def summary_due(self, next_message: bool = False) -> str | None:
        return self.summarization.summary_due(next_message)

    def maybe_summarize(self) -> SummaryRecord | None:
        return self.summarization.maybe_summarize()

    def can_summarize(self) -> bool:
        return self.summarization.can_summarize()

    def summarize_now(self, instructions: str | None = None, up_to: str | None = None) -> SummaryRecord:
        return self.summarization.summarize_now(instructions, up_to)

    def undo_last(self) -> SummaryRecord:
        return self.summarization.undo_last()

    def subscribe(self, callback: Callable[[EngineEvent], None]) -> Callable[[], None]:
        return self.summarization.subscribe(callback)
