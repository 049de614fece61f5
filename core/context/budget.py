"""Over the budget, in words: what is sent, what is cut, what the next message will do and what to do about it.

One wording for every front end (`precis context`, the window's inspector).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.counted import counted
from .engine import ContextEngine, Prompt, UsageReport


@dataclass(frozen=True)
class OverBudget:
    """Each line is one thing, "" when there is nothing to say of it (old tool outputs shrunk to one line make the
    chat fit: nothing is cut, nothing is to be done)."""

    sent_tokens: int  # what the prompt sent holds: the headline's figure, never the chat's full text
    sent: str  # what the model receives
    cut: str  # what is left out or shortened to make it fit
    next_message: str  # what sending the next message does
    action: str  # what the user can do about it

    def lines(self) -> list[str]:
        return [line for line in (self.sent, self.cut, self.next_message, self.action) if line]


@dataclass(frozen=True)
class CutMessage:
    """A message of the chat whose text was cut so the prompt fits (it alone is larger than what is left)."""

    index: int  # its position in the chat, from 0
    role: str
    tokens_before: int
    tokens_after: int

    def describe(self) -> str:
        return f"message {self.index} ({self.role}) cut from {self.tokens_before:,} to {self.tokens_after:,} tokens"

    def as_json(self) -> dict:
        return {"index": self.index, "role": self.role, "tokens_before": self.tokens_before,
                "tokens_after": self.tokens_after}


def cut_messages(engine: ContextEngine, prompt: Prompt) -> list[CutMessage]:
    """The chat's messages whose text the prompt carries cut short (tokens calibrated as usage reports them)."""
    calibrated = engine.counter.calibrated
    cut = []
    for item in prompt.items:
        position = engine.archive.position.get(item.source_id)
        if item.tokens_before_cut is not None and position is not None:
            cut.append(CutMessage(position, engine.messages[position].role, calibrated(item.tokens_before_cut),
                                  calibrated(item.tokens)))
    return cut


# The messages cut short that the note names; the rest are counted. (A chat of many session markers, each cut to
# fit a small window, once made the note 70 kB: one line of `precis context`, the inspector's label.)
CUTS_NAMED = 3


def over_budget(engine: ContextEngine, usage: UsageReport) -> OverBudget | None:
    """None while the context fits; otherwise what happens to it, from the prompt the engine would send now. `usage`
    is engine.usage(), made once by the caller (with recall it is a search of the archive)."""
    if usage.ratio <= 1:
        return None
    prompt = engine.assemble()
    # By source: a tool output shrunk to its line is sent as a message of its own id, and was also counted here as
    # left out ("2 oldest messages left out; 2 old tool outputs shrunk to one line" of the same two).
    sent_ids = {item.source_id for item in prompt.items}
    left_out = [m for m in engine.archive.visible() if m.id not in sent_ids]
    cut_short = cut_messages(engine, prompt)
    # Tool outputs down to their one line (not the marker for left-out messages, not texts cut short).
    shrunk = sum(item.kind == "trimmed" and item.tokens_before_cut is None and item.source_id in engine.archive.position
                 for item in prompt.items)
    due = engine.summary_due(next_message=True)  # not held back by a call still awaiting its result
    summarizes = "The next message first summarizes older messages to make room (this can take a while)."
    if shrunk and not left_out and not cut_short:
        # The full texts are over, what is sent fits: one thing to say, and nothing to do (it once also said "Start
        # a new chat" under a red 129% while 2,220 of 7,680 tokens were sent).
        outputs = f"{shrunk} old tool output{'s go' if shrunk != 1 else ' goes'}"
        return OverBudget(prompt.tokens, f"{prompt.tokens:,} of {usage.available:,} tokens are sent: the chat's full "
                          f"text is {usage.total:,}, and {outputs} shrunk to one line to fit (the full text stays "
                          f"in the chat).", "", summarizes if due is not None else "", "")
    sent = (f"Over the budget: {usage.total:,} tokens for {usage.available:,}. Only what fits is sent "
            f"({prompt.tokens:,} tokens).")
    unnamed = len(cut_short) - CUTS_NAMED
    cuts = [f"{counted(len(left_out), 'oldest message')} left out" if left_out else "",
            f"{counted(shrunk, 'old tool output')} shrunk to one line" if shrunk else "",
            *(c.describe() for c in cut_short[:CUTS_NAMED]),
            f"{counted(unnamed, 'more message')} cut short" if unnamed > 0 else ""]
    cut = "Cut: " + ("; ".join(c for c in cuts if c) or "the longest texts shortened") + "."
    if due is not None:
        next_message = summarizes
    elif not engine.policy.enabled:
        next_message = "Automatic summaries are off: the next message is sent cut like this."
    else:
        next_message = "No summary can make room: the next message is sent cut like this."
    if engine.can_summarize():
        action = "Summarize now to make room yourself (optionally with instructions)."
    elif usage.floor_ratio >= 1:
        action = ("What no summary can remove (system prompt, pinned messages, summaries) fills the budget: "
                  "unpin messages, shorten the system prompt, or choose a larger context window in Settings.")
    else:
        action = "Start a new chat, or choose a larger context window in Settings."
    return OverBudget(prompt.tokens, sent, cut, next_message, action)


@dataclass(frozen=True)
class DraftRoom:
    """What a message not yet sent is measured against, read off the engine when a snapshot is made: the prompt as
    it is sent (the inspector's headline), not the chat's full text. (The composer once said "31,352 over the
    window" of a chat whose old tool output, shrunk to its line, left 252 tokens sent.)"""

    available: int
    sent: int  # calibrated tokens of the next prompt as sent, recall left out (it gives its room to a new message)
    used: int  # calibrated tokens the summary policy acts on: the full text, without recall
    trigger: int | None  # `used` at which the policy summarizes; None while automatic summaries are off
    summary_due: bool  # the next message, whatever its size, is preceded by a summary (the engine's rule)


def draft_room(engine: ContextEngine, usage: UsageReport, note: OverBudget | None) -> DraftRoom:
    """The room for the next message; `usage` is engine.usage(), and `note` over_budget(engine, usage), whose prompt
    gives what is sent."""
    policy = engine.policy
    # Over the budget nothing is recalled (recall only fills free room), so the note's prompt holds no recall.
    sent = note.sent_tokens if note is not None else usage.total - usage.by_kind.get("recalled", 0)
    used = engine.usage(recall=False).total
    return DraftRoom(usage.available, sent, used,
                     int(policy.trigger_ratio * usage.available) if policy.enabled else None,
                     engine.summary_due(next_message=True) is not None)


@dataclass(frozen=True)
class DraftFit:
    """A message not yet sent against the window: its tokens and what sending it would do."""

    tokens: int
    left: int  # of the budget once it is sent; negative when it would not fit
    summarizes: bool  # older messages are summarized first (the policy's trigger, or a summary due anyway)
    overflows: bool  # the prompt would exceed the budget: more of it is shrunk, left out or cut


def draft_fit(room: DraftRoom, tokens: int) -> DraftFit:
    """The draft of `tokens` (TokenCounter.draft_tokens) added to the prompt as it is sent now."""
    after = room.sent + tokens
    crosses = room.trigger is not None and room.used < room.trigger <= room.used + tokens
    return DraftFit(tokens, room.available - after, summarizes=room.summary_due or crosses,
                    overflows=after > room.available)
