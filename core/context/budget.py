"""Over the budget, in words: what is sent, what is cut, what the next message will do and what to do about it.

One wording for every front end (`precis context`, the window's inspector).
"""

from __future__ import annotations

from dataclasses import dataclass

from .engine import ContextEngine


@dataclass(frozen=True)
class OverBudget:
    sent: str  # what the model receives
    cut: str  # what is left out or shortened to make it fit
    next_message: str  # what sending the next message does
    action: str  # what the user can do about it

    def lines(self) -> list[str]:
        return [self.sent, self.cut, self.next_message, self.action]


def over_budget(engine: ContextEngine) -> OverBudget | None:
    """None while the context fits; otherwise what happens to it, from the prompt the engine would send now."""
    usage = engine.usage()
    if usage.ratio <= 1:
        return None
    prompt = engine.assemble()
    sent_ids = {message.id for message in prompt.messages}
    left_out = [m for m in engine.messages if not engine.is_archived(m.id) and m.id not in sent_ids]
    shrunk = sum(item.kind == "trimmed" for item in prompt.items)
    sent = (f"Over the budget: {usage.total:,} tokens for {usage.available:,}. Only what fits is sent "
            f"({prompt.tokens:,} tokens).")
    cuts = [f"{len(left_out)} oldest messages left out" if left_out else "",
            f"{shrunk} old tool outputs shrunk to one line" if shrunk else ""]
    cut = "Cut: " + ("; ".join(c for c in cuts if c) or "the longest texts shortened") + "."
    due = engine.summary_due()
    if due is not None:
        next_message = "The next message first summarizes older messages to make room (this can take a while)."
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
    return OverBudget(sent, cut, next_message, action)
