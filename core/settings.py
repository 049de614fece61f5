"""Every setting a person can change, described once: the provider (Settings → Provider, Local model), the
summarization policy (Settings → Summarization; a chat may override any of it), a chat's own settings (Settings →
This chat) and the window's look (View). The settings dialog, the per-chat overrides, the command line's defaults,
the validation messages and docs/settings.md are all built from these models (core.model.schema reads their
titles, units and ranges), and the store keeps each under its key below.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.json_schema import JsonDict

from .model.records import SummaryMode
from .model.schema import setting_errors, setting_fields

# Where replies come from: a model run on this computer, an OpenAI-compatible server, or Anthropic's.
Kind = Literal["local", "openai", "anthropic"]
KINDS: tuple[str, ...] = get_args(Kind)
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}
MODES: tuple[str, ...] = get_args(SummaryMode)
ThemeChoice = Literal["system", "light", "dark"]

# A model summary's time limit; 6 s leaves room for the rules' summary after it (1-3 s on two cores busy with
# other work) within the design documents' 10 s.
SUMMARY_SECONDS = 6.0
# The fewest tokens a reply may be given (its limit, `precis chat --max-tokens`): fewer say nothing.
MIN_REPLY_TOKENS = 16
RUN_TIMEOUT_SECONDS = 60
# Each process of a /run command may allocate this much (RLIMIT_DATA), and this many may run at once.
RUN_MEMORY_MB = 1024
RUN_PROCESSES = 128

# The store's settings keys.
PROVIDER_KEY = "provider"
SUMMARIZATION_KEY = "summarization"
APPEARANCE_KEY = "appearance"
WINDOW_KEY = "window"  # the window's last size (WindowSize): not a setting the dialog shows
TOOLS_KEY = "tools"  # which tools the model may call, and when the user is asked (ToolSettings)
INSPECTOR_KEY = "inspector"  # the inspector's sections the user folded away (InspectorFolds): not in the dialog
OPEN_CHAT_KEY = "open_chat"  # the id of the chat the window showed last: it opens there at the next start
READING_PLACES_KEY = "reading_places"  # where the reader left each chat (core.chat.reading_place): not in the dialog
# Whether the suggestion of a model from the catalogue was dismissed (ModelSuggestion): not in the dialog either.
MODEL_SUGGESTION_KEY = "model_suggestion"
# Each model's token-count correction learned from its replies ({model: [factor, prompts]}): not a setting either.
CALIBRATION_KEY = "count_calibration"

# Setting names that would hold a secret. Keys live in the OS keyring, never in the store.
SECRET_NAME = re.compile(r"api[_-]?key|secret|password|passwd|authorization|bearer|credential", re.IGNORECASE)


def base_url_problem(url: str) -> str | None:
    """Why `url` is no server's address, in the words of the field it is typed in; None when it is one. 'http://'
    alone was 'cannot connect to http://: Request URL is missing an 'http://' or 'https://' protocol'."""
    if not url.startswith(("http://", "https://")):
        return f"must start with http:// or https://, as in http://localhost:11434/v1, not {url[:30]!r}"
    if not urlsplit(url).hostname:
        return f"names no server after {url.split('//')[0]}//, as in http://localhost:11434/v1: {url[:30]!r}"
    return None


def choice_problems(error: ValidationError, model: type[BaseModel]) -> str:
    """A settings model's refusal as one sentence naming each field by its title, not pydantic's dump."""
    said = []
    for err in error.errors():
        field = model.model_fields.get(str(err["loc"][0])) if err["loc"] else None
        reason = err["msg"].removeprefix("Value error, ")
        said.append(f"{field.title or err['loc'][0]} {reason}" if field is not None else reason)
    return "; ".join(said)


# The Provider page's fields only a server has (a local model is refused with them: _local_has_no_server).
SERVER_FIELDS = ("base_url", "model")


class ProviderChoice(BaseModel):
    """Where replies come from: the settings of the Provider and Local model pages, stored under the `provider`
    setting. The API key is not here: it is kept in the OS keyring (or the environment), never in the database."""

    kind: Kind = Field("local", title="Provider",
                       description="local: a model run on this computer (Settings → Local model); openai: any "
                                   "OpenAI-compatible server (OpenAI, Ollama, LM Studio, a llama.cpp server); "
                                   "anthropic: Claude")
    base_url: str = Field("", title="Base URL", json_schema_extra={"line": True},
                          description="The server's address, e.g. http://localhost:11434/v1 for Ollama; empty: "
                                      "the provider's official endpoint")
    model: str = Field("", title="Model", json_schema_extra={"line": True},
                       description=f"The model's name on the server; empty: {DEFAULT_MODELS['openai']} (openai) or "
                                   f"{DEFAULT_MODELS['anthropic']} (anthropic)")
    extra_buffer_types: bool = Field(False, title="Extra buffer types", json_schema_extra={"page": "Local model"},
                                     description="Repack the local model's weights for this CPU's kernels "
                                                 "(llama.cpp's use_extra_bufts): faster on some CPUs, but on Intel "
                                                 "AMX CPUs it crashes the model, so it is off unless turned on")
    # The local model's GGUF file ('' : the built-in SmolLM2); set by the model picker, not typed.
    model_path: str = ""

    @field_validator("base_url")
    @classmethod
    def _web_address(cls, value: str) -> str:
        problem = base_url_problem(value) if value else None
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _local_has_no_server(self) -> ProviderChoice:
        if self.kind == "local" and (self.base_url or self.model):
            raise ValueError("the local model has no base URL or model name to set; choose openai or anthropic, "
                             "or pick a model in Local model")
        return self

    @classmethod
    def as_used(cls, values: dict[str, Any]) -> dict[str, Any]:
        """A form's values as their kind uses them: a local model has no base URL or model name, so what is left
        in those boxes from a server (typed before switching back to local) is not part of the choice."""
        if values.get("kind") == "local":
            return {**values, **{name: "" for name in SERVER_FIELDS}}
        return values

    @classmethod
    def from_setting(cls, value: Any) -> ProviderChoice:
        """The stored setting; a value that no longer validates keeps its valid fields, the rest default."""
        value = value if isinstance(value, dict) else {}
        try:
            return cls.model_validate(value)
        except ValidationError as exc:
            bad = {err["loc"][0] for err in exc.errors() if err["loc"]}
        kept = {name: value[name] for name in cls.model_fields if name in value and name not in bad}
        try:
            return cls.model_validate(kept)
        except ValidationError:  # valid fields that do not go together (a local model with a URL): the model alone
            return cls(**{name: kept[name] for name in ("model_path", "extra_buffer_types") if name in kept})

    def to_setting(self) -> dict[str, Any]:
        return self.model_dump()


# Who writes llm and hybrid summaries: the chat's own model, the embedded local model, or the provider and model
# named in the policy (the documents' lighter summarizer model).
SummarizerChoice = Literal["chat", "local", "other"]
# ChatSettings.offer_tools: auto is yes for every model but the built-in one (core/chat/tool_loop.py, offers_tools).
ToolOffer = Literal["auto", "yes", "no"]

# A fraction of the context budget, shown and typed as a percentage (0.8 is "80 %").
PERCENT: JsonDict = {"unit": "% of the budget"}


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
    summary_seconds: float = Field(SUMMARY_SECONDS, ge=1.0, le=600.0, title="Summary time limit", json_schema_extra={"unit": "s"},
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
                                    json_schema_extra={"unit": "tokens"},
                                    description="Cap on one summary's tokens, and on coding summaries together")
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


class ChatSettings(BaseModel):
    """Per-chat settings. Other keys are allowed (and kept) unless their name looks like a secret."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    system_prompt: str = Field("", title="System prompt",
                                       description="Sent before the conversation as the model's instructions")
    context_window: int | None = Field(None, ge=256, le=10_000_000, title="Context window",
                                               json_schema_extra={"unit": "tokens"},
                                               description="The budget; empty: the model's own window")
    reserve_output: int = Field(512, ge=0, le=1_000_000, title="Tokens reserved for the reply",
                                        json_schema_extra={"unit": "tokens"},
                                        description="Kept free in the window for the model's answer")
    run_timeout: int = Field(RUN_TIMEOUT_SECONDS, ge=1, le=86_400, title="/run time limit",
                                     json_schema_extra={"unit": "seconds"},
                                     description="A command run with /run is stopped after this long; "
                                                 "what it printed is kept")
    run_memory_mb: int = Field(RUN_MEMORY_MB, ge=16, le=1_048_576, title="/run memory limit",
                               json_schema_extra={"unit": "MB"},
                               description="What each process of a /run command may allocate; past it, an allocation "
                                           "fails")
    run_processes: int = Field(RUN_PROCESSES, ge=1, le=100_000, title="/run process limit",
                               json_schema_extra={"unit": "processes"},
                               description="A /run command with more processes running at once is stopped")
    workspace: str = Field("", title="Workspace folder", json_schema_extra={"line": True},
                           description="The folder the model's file and command tools, /run and /grep work in (its "
                                       "whole path); empty: no workspace tools")
    offer_tools: ToolOffer = Field("auto", title="Offer tools with each message",
                                   description="Whether each message offers the model the chat's tools (its workspace "
                                               "folder's, the MCP servers') to call as it sees fit; auto: yes, but "
                                               "not to the built-in 135M model, which calls none unasked and takes "
                                               "twice as long a reply with them. /use TOOL MESSAGE calls one either way")
    tool_steps: int = Field(25, ge=1, le=1000, title="Tool calls per message", json_schema_extra={"unit": "calls"},
                            description="The most tool calls the model makes to answer one message; past it, it "
                                        "answers with what it has")
    # Overrides of SummarizationPolicy fields for this chat.
    summarization: dict[str, Any] = Field(default_factory=dict)
    # Tools that run without asking in this chat: its consent card's "Allow in this chat" (or `a` in the terminal).
    # No title: Settings → This chat lists them, each with a button taking it back.
    allowed_tools: list[str] = Field(default_factory=list)

    @field_validator("summarization")
    @classmethod
    def _valid_policy(cls, value: dict[str, Any]) -> dict[str, Any]:
        errors = policy_errors(value)
        if errors:
            titles = {field.name: field.title for field in setting_fields(SummarizationPolicy)}
            raise ValueError("; ".join(f"{titles.get(field, field) or 'summarization'}: {reason}"
                                       for field, reason in errors.items()))
        return value

    @model_validator(mode="after")
    def _no_secrets(self) -> ChatSettings:
        for name in self.model_extra or {}:
            if SECRET_NAME.search(name):
                raise ValueError(f"setting {name!r} looks like a secret; keys are kept in the OS keyring, not here")
        return self


# A chat's settings that belong to this computer and its user rather than to the chat: the folder its tools work in,
# the tools allowed to run without asking (a chat file from elsewhere must not grant them) and a server's address
# (which may hold a key). An exported chat carries its other settings.
LOCAL_CHAT_SETTINGS = frozenset({"workspace", "allowed_tools", "base_url"})


def portable_chat_settings(settings: ChatSettings) -> dict[str, Any]:
    """The chat's settings an export carries: those set to other than their defaults, less LOCAL_CHAT_SETTINGS."""
    return {name: value for name, value in settings.model_dump(mode="json", exclude_defaults=True).items()
            if name not in LOCAL_CHAT_SETTINGS}


class Appearance(BaseModel):
    """The window's look, saved in the store's settings under APPEARANCE_KEY."""

    theme: ThemeChoice = Field("system", title="Theme",
                               description="system follows the desktop's light or dark setting")
    text_size: float = Field(1.0, ge=0.5, le=3.0, title="Text size", json_schema_extra={"unit": "% of the system's"},
                           description="of the conversation and the message box; View → Zoom in, Zoom out, "
                                       "Actual size (Ctrl+=, Ctrl+-, Ctrl+0)")


class WindowSize(BaseModel):
    """The main window's size when it was last closed, saved under WINDOW_KEY."""

    width: int = Field(1400, ge=1)
    height: int = Field(900, ge=1)
    maximized: bool = False


def chat_at_start(listed: Sequence[str], last_open: object) -> str | None:
    """The chat the window opens at start: the one it showed last (saved under OPEN_CHAT_KEY) while it is still
    listed, else the first listed (the one changed last); None when there are no chats."""
    if isinstance(last_open, str) and last_open in listed:
        return last_open
    return listed[0] if listed else None


class ToolSettings(BaseModel):
    """Settings → Tools, saved under TOOLS_KEY: tools switched off (a workspace tool's name, or "server/tool" for an
    MCP server's; "server/*" for all of a server's), and whether reading tools ask too."""

    disabled: list[str] = []
    ask_before_reading: bool = False

    def is_on(self, name: str) -> bool:
        """Whether `name` (a workspace tool, "server/tool" or "server/*") is switched on by its own switch."""
        return name not in self.disabled

    def switched(self, name: str, on: bool) -> ToolSettings:
        """These settings with `name`'s switch on or off; a tool under a switched-off server keeps its own switch."""
        disabled = [entry for entry in self.disabled if entry != name] + ([] if on else [name])
        return self.model_copy(update={"disabled": disabled})


class InspectorFolds(BaseModel):
    """The context inspector's sections folded away when the window last showed them, saved under INSPECTOR_KEY."""

    folded: list[str] = ["prompt"]  # the next prompt, part by part, is opened when wanted


class ModelSuggestion(BaseModel):
    """The suggestion of a model from the catalogue, saved under MODEL_SUGGESTION_KEY: once dismissed (or its
    Choose a model… clicked) it is not made again."""

    dismissed: bool = False


# The settings pages' sections, in the order docs/settings.md lists them.
SECTIONS = [("Provider", ProviderChoice), ("Summarization", SummarizationPolicy), ("This chat", ChatSettings),
            ("Appearance", Appearance)]
