"""Summarization policy: when to summarize, what to keep. Validated so bad settings are refused with a reason."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..model.records import SummaryMode
from ..model.schema import setting_errors, setting_fields
from ..providers.registry import KINDS
from ..summary.summarize import DEADLINE_SECONDS

# Who writes llm and hybrid summaries: the chat's own model, the embedded local model, or the provider and model
# named in the policy (the documents' lighter summarizer model).
SummarizerChoice = Literal["chat", "local", "other"]

# A fraction of the context budget, shown and typed as a percentage (0.8 is "80 %").
PERCENT = {"unit": "% of the budget"}


class SummarizationPolicy(BaseModel):
    """When to summarize and what to keep. Each field's title, unit and range are the settings dialog's and the
    README's (core.model.schema): a new setting is one field here."""

    model_config = ConfigDict(validate_assignment=True, extra="forbid")

    enabled: bool = Field(True, title="Summarize automatically",
                          description="Summarize old messages on its own when the chat nears the budget")
    # Hybrid by default: the rules keep files, commands and errors; the model (local by default) writes the story.
    mode: SummaryMode = Field("hybrid", title="Mode", description=(
        "rule: files, commands and errors kept by rules; llm: the model writes the summary; hybrid: both"))
    summarizer: SummarizerChoice = Field("chat", title="Summaries written by", description=(
        "chat: the chat's own model; local: the embedded model; other: the provider and model below"))
    summarizer_provider: str = Field("", max_length=20, json_schema_extra={"line": True}, title="…other provider",
                                     description=f"With “other”: one of {', '.join(KINDS)}")
    summarizer_model: str = Field("", max_length=200, json_schema_extra={"line": True}, title="…other model",
                                  description="With “other”: the model's name (empty: the provider's default)")
    summarizer_base_url: str = Field("", max_length=2000, json_schema_extra={"line": True}, title="…other server address",
                                     description="With “other”: the server's address (empty: the provider's own)")
    summary_seconds: float = Field(DEADLINE_SECONDS, ge=1.0, le=600.0, title="Summary time limit", json_schema_extra={"unit": "s"},
                                   description="A model that has not finished its summary by then is stopped and the "
                                               "rules write it (the record says so); the documents' target is 10 s")
    trigger_ratio: float = Field(0.80, gt=0.0, le=1.0, title="Summarize at", json_schema_extra=PERCENT,
                                 description="Summarize when the context reaches this share of the budget")
    reset_ratio: float = Field(0.70, gt=0.0, lt=1.0, title="Re-arm below", json_schema_extra=PERCENT,
                               description="Summarize again only once usage has fallen below this share...")
    rearm_messages: int = Field(12, ge=1, le=10_000, title="Re-arm after", json_schema_extra={"unit": "messages"},
                                description="...or after this many new messages")
    target_ratio: float = Field(0.50, gt=0.0, lt=1.0, title="Summarize down to", json_schema_extra=PERCENT,
                                description="A summary takes the oldest messages needed to bring usage to this share")
    min_messages: int = Field(12, ge=2, le=10_000, title="Minimum messages", json_schema_extra={"unit": "messages"},
                              description="Messages in the window before an automatic summary")
    cooldown_messages: int = Field(4, ge=0, le=10_000, title="Cooldown", json_schema_extra={"unit": "messages"},
                                   description="New messages needed since the last summary")
    keep_recent: int = Field(6, ge=1, le=1_000, title="Recent messages kept verbatim",
                             json_schema_extra={"unit": "messages"},
                             description="The newest messages are never summarized")
    min_recent: int = Field(2, ge=1, le=1_000, title="Kept messages may shrink to", json_schema_extra={"unit": "messages"},
                            description="The kept messages may shrink to this many when still over budget")
    max_depth: int = Field(3, ge=1, le=20, title="Maximum chain depth", json_schema_extra={"unit": "summaries"},
                           description="Summaries in the chain before the oldest are merged")
    max_summary_tokens: int = Field(4000, ge=50, le=100_000, title="Maximum summary size",
                                    json_schema_extra={"unit": "tokens"}, description="Cap on one summary's tokens")
    chain_share: float = Field(0.30, gt=0.0, lt=1.0, title="Summaries may take", json_schema_extra=PERCENT,
                               description="Share of the budget all summaries may take together")
    # In talk, what was said long ago is what is asked about later, and a digest's facts are the sentences it keeps:
    # with 30% the summaries of a 700-message conversation at 8k were a tenth of what they replaced (benchmarks/
    # fidelity), with half about 0.16, with 60% about 0.18 (LoCoMo's held-out 4-10 at 8k: 66% -> 67% of the short
    # answers kept, locomo_3 56% -> 60%); the verbatim tail keeps the fifth of the budget up to the trigger.
    conversation_chain_share: float = Field(0.60, gt=0.0, lt=1.0, title="Conversation summaries may take",
                                            json_schema_extra=PERCENT,
                                            description="The same share where the summaries are conversation "
                                                        "digests (people talking, not tool traffic)")
    recall_enabled: bool = Field(True, title="Recall archived messages",
                                 description="Put archived messages matching the user's message into the prompt")
    recall_ratio: float = Field(0.10, ge=0.0, le=0.5, title="Recalled messages may take", json_schema_extra=PERCENT,
                                description="Share of the budget recalled messages may take")
    preserve_error_details: bool = Field(True, title="Keep full error text",
                                         description="Error messages go into summaries whole, not shortened")
    abort_on_failure: bool = Field(False, title="Stop if the model's summary fails",
                                   description="Off: a failed model summary falls back to the rules")
    extra_instructions: str = Field("", max_length=4000, title="Extra instructions",
                                    description="Added to the summarizer model's instructions")

    @model_validator(mode="after")
    def _check_relations(self) -> SummarizationPolicy:
        if self.reset_ratio >= self.trigger_ratio:
            raise ValueError(_compare("reset_ratio", self.reset_ratio, "must be below",
                                      "trigger_ratio", self.trigger_ratio))
        if self.target_ratio >= self.trigger_ratio:
            raise ValueError(_compare("target_ratio", self.target_ratio, "must be below",
                                      "trigger_ratio", self.trigger_ratio))
        if self.summarizer == "other" and self.summarizer_provider not in KINDS:
            raise ValueError(f"summarizer_provider ({self.summarizer_provider!r}) must be one of {', '.join(KINDS)} "
                             "when summarizer is 'other'")
        if self.min_recent > self.keep_recent:
            raise ValueError(_compare("min_recent", self.min_recent, "must not exceed",
                                      "keep_recent", self.keep_recent))
        return self


def _compare(name: str, value: Any, relation: str, other: str, other_value: Any) -> str:
    """A rule across two fields in the window's words: '“Re-arm below” (80 %) must be below “Summarize at” (80 %)'."""
    fields = {field.name: field for field in setting_fields(SummarizationPolicy)}
    return (f"“{fields[name].title}” ({fields[name].with_unit(value)}) {relation} "
            f"“{fields[other].title}” ({fields[other].with_unit(other_value)})")


def policy_errors(values: dict) -> dict[str, str]:
    """Validate a settings dict; return {field: reason} (field '' for cross-field rules), empty if valid."""
    return setting_errors(SummarizationPolicy, values)
