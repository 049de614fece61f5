"""When the window suggests a model from the catalogue to someone chatting with the built-in one, and what it says.

The built-in SmolLM2-135M is right for an offline first start, but it rarely answers from what Precis puts in its
prompt (docs/fidelity.md, Answers). So after a few of its replies, or at once when a reply's prompt held recalled
text (an answer that needed what Precis kept), the window suggests a larger model, once, naming what was measured.
"""

from __future__ import annotations

from typing import Literal

from .catalogue import CatalogueEntry, EmbeddedMeasure

SUGGEST_AFTER_REPLIES = 3
Reason = Literal["replies", "recall"]


class SuggestionRule:
    """Counts the built-in model's replies in one window and says, once, why to suggest another model; never once the
    suggestion was dismissed (a setting the window reads as it opens)."""

    def __init__(self, dismissed: bool) -> None:
        self.replies = 0
        self.made = dismissed

    def after_reply(self, recalled: bool) -> Reason | None:
        """A reply of the built-in model has ended (`recalled`: its prompt held recalled snippets): the reason to
        suggest another model now, or None (too early, or already suggested)."""
        if self.made:
            return None
        self.replies += 1
        if recalled or self.replies >= SUGGEST_AFTER_REPLIES:
            self.made = True
            return "recall" if recalled else "replies"
        return None


def suggestion_text(reason: Reason, embedded: EmbeddedMeasure, entries: list[CatalogueEntry]) -> str:
    """What the suggestion says: why now, and the measured difference (the best measured catalogue model against the
    built-in one), or, while the catalogue's models are not measured, what the built-in model's answers measured."""
    why = "This answer needed earlier messages Precis recalled into the prompt. " if reason == "recall" else ""
    measured = [entry for entry in entries if entry.answer_rate is not None]
    if measured:
        best = max(measured, key=lambda entry: entry.answer_rate or 0.0)
        return (f"{why}On Precis's answer test {best.title} answered {best.answer_rate:.0%} of the questions right, "
                f"the built-in {embedded.title} {embedded.answer_rate:.0%}. It runs on this computer, offline once "
                "downloaded.")
    return (f"{why}On Precis's answer test the built-in {embedded.title} answered {embedded.answered} of "
            f"{embedded.asked} questions right, though the answer was in its prompt for {embedded.answer_in_prompt}. "
            "The catalogue's larger models (not measured here yet) run on this computer, offline once downloaded.")
