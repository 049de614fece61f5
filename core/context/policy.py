"""Summarization policy: when to summarize, what to keep. Validated so bad settings are refused with a reason."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..model.records import SummaryMode


class SummarizationPolicy(BaseModel):
    model_config = ConfigDict(validate_assignment=True, extra="forbid")

    enabled: bool = True
    # Hybrid by default: the rules keep files, commands and errors; the model (local by default) writes the story.
    mode: SummaryMode = "hybrid"
    trigger_ratio: float = Field(0.80, gt=0.0, le=1.0, description="summarize when the context reaches this share of the budget")
    reset_ratio: float = Field(0.70, gt=0.0, lt=1.0, description="re-arm once usage falls below this share...")
    rearm_messages: int = Field(12, ge=1, le=10_000, description="...or after this many new messages")
    target_ratio: float = Field(0.50, gt=0.0, lt=1.0,
                                description="a summary takes the oldest messages needed to bring usage to this share")
    min_messages: int = Field(12, ge=2, le=10_000, description="messages in the window before an automatic summary")
    cooldown_messages: int = Field(4, ge=0, le=10_000, description="new messages needed since the last summary")
    keep_recent: int = Field(6, ge=1, le=1_000, description="recent messages kept verbatim")
    min_recent: int = Field(2, ge=1, le=1_000, description="the tail may shrink to this many when still over budget")
    max_depth: int = Field(3, ge=1, le=20, description="summaries in the chain before the oldest are merged")
    max_summary_tokens: int = Field(4000, ge=50, le=100_000, description="cap on one summary's tokens")
    chain_share: float = Field(0.30, gt=0.0, lt=1.0, description="share of the budget all summaries may take together")
    recall_enabled: bool = Field(True, description="put archived messages matching the user's message into the prompt")
    recall_ratio: float = Field(0.10, ge=0.0, le=0.5, description="share of the budget recalled messages may take")
    preserve_error_details: bool = True
    abort_on_failure: bool = False
    extra_instructions: str = Field("", max_length=4000)

    @model_validator(mode="after")
    def _check_relations(self) -> SummarizationPolicy:
        if self.reset_ratio >= self.trigger_ratio:
            raise ValueError(
                f"reset_ratio ({self.reset_ratio}) must be below trigger_ratio ({self.trigger_ratio})")
        if self.target_ratio >= self.trigger_ratio:
            raise ValueError(
                f"target_ratio ({self.target_ratio}) must be below trigger_ratio ({self.trigger_ratio})")
        if self.min_recent > self.keep_recent:
            raise ValueError(f"min_recent ({self.min_recent}) must not exceed keep_recent ({self.keep_recent})")
        return self


def policy_errors(values: dict) -> dict[str, str]:
    """Validate a settings dict; return {field: reason} (field '' for cross-field rules), empty if valid."""
    try:
        SummarizationPolicy(**values)
    except ValidationError as exc:
        errors: dict[str, str] = {}
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or ""
            errors[field] = err["msg"].removeprefix("Value error, ")
        return errors
    return {}
