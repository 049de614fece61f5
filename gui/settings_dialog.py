"""Settings: the provider (API key kept in the OS keyring), summarization, and this chat's own settings.

The summarization and chat fields are generated from the settings schema (core.model.schema over
SummarizationPolicy and ChatSettings): a new field there appears here, in the per-chat overrides and in the README.
Values are checked as they are typed with the same rules core uses; a bad value is refused with its reason next to
the field in the window's words, and OK stays disabled until all are valid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ..core.context.policy import SummarizationPolicy
from ..core.model.schema import SettingField, setting_errors, setting_fields
from ..core.providers.discovery import FoundModel
from ..core.providers.registry import DEFAULT_MODELS, KINDS
from ..core.storage.store import ChatSettings
from .model_picker import BUILT_IN, ModelPicker

PROVIDER_KEY = "provider"

@dataclass
class ProviderChoice:
    kind: str = "local"
    base_url: str = ""
    model: str = ""
    # The local model's weights repacked for CPU-specific kernels (llama.cpp's use_extra_bufts); off by default
    # because the AMX path crashes on SmolLM2.
    extra_buffer_types: bool = False
    # The local model's GGUF file ('' : the built-in SmolLM2).
    model_path: str = ""

    @classmethod
    def from_setting(cls, value: Any) -> ProviderChoice:
        value = value if isinstance(value, dict) else {}
        return cls(kind=value.get("kind", "local") if value.get("kind") in KINDS else "local",
                   base_url=value.get("base_url", "") or "", model=value.get("model", "") or "",
                   extra_buffer_types=value.get("extra_buffer_types") is True,
                   model_path=value.get("model_path", "") if isinstance(value.get("model_path"), str) else "")

    def to_setting(self) -> dict[str, Any]:
        return {"kind": self.kind, "base_url": self.base_url, "model": self.model,
                "extra_buffer_types": self.extra_buffer_types, "model_path": self.model_path}


class _FieldSet:
    """An editor per setting (from the schema: title as label, help as tooltip, unit after the value) with an error
    label under each; `values()` parses, `show_errors` says what is wrong and where.

    With `overrides`, each field has an Override box: only ticked fields are values (the rest are inherited), and an
    unticked field's editor shows the inherited value, disabled.
    """

    def __init__(self, fields: list[SettingField], initial: dict[str, Any], form: QFormLayout, on_change,
                 overrides: set[str] | None = None) -> None:
        self.fields = fields
        self.editors: dict[str, QWidget] = {}
        self.error_labels: dict[str, QLabel] = {}
        self.override_boxes: dict[str, QCheckBox] = {}
        for field in fields:
            editor = _editor(field, initial.get(field.name))
            editor.setToolTip(field.help)
            self.editors[field.name] = editor
            error = QLabel("")
            error.setObjectName("error")
            error.setWordWrap(True)
            error.hide()
            self.error_labels[field.name] = error
            box = QWidget()
            column = QVBoxLayout(box)
            column.setContentsMargins(0, 0, 0, 0)
            column.setSpacing(2)
            line = QHBoxLayout()
            line.setContentsMargins(0, 0, 0, 0)
            if overrides is not None:
                tick = QCheckBox("Override")
                tick.setToolTip("Use a value of this chat's own instead of the global setting")
                tick.setChecked(field.name in overrides)
                editor.setEnabled(field.name in overrides)
                tick.toggled.connect(editor.setEnabled)
                tick.toggled.connect(on_change)
                self.override_boxes[field.name] = tick
                line.addWidget(tick)
            line.addWidget(editor, 1)
            if field.unit and field.kind in ("int", "optional_int", "float"):
                unit = QLabel(field.unit)
                unit.setObjectName("muted")
                line.addWidget(unit)
            column.addLayout(line)
            column.addWidget(error)
            form.addRow(field.title, box)
            _connect(editor, on_change)

    def values(self) -> tuple[dict[str, Any], dict[str, str]]:
        """(parsed values, {field: reason} for values that are not even numbers)."""
        values: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for field in self.fields:
            if self.override_boxes and not self.override_boxes[field.name].isChecked():
                continue
            editor = self.editors[field.name]
            if field.kind == "bool":
                values[field.name] = editor.isChecked()
            elif field.kind == "choice":
                values[field.name] = editor.currentText()
            elif field.kind == "text":
                values[field.name] = editor.toPlainText()
            else:
                try:
                    values[field.name] = field.parse(editor.text())
                except ValueError as exc:
                    errors[field.name] = str(exc)
        return values, errors

    def show_errors(self, errors: dict[str, str]) -> None:
        for name, label in self.error_labels.items():
            reason = errors.get(name)
            label.setText(reason or "")
            label.setVisible(bool(reason))


def _editor(field: SettingField, value: Any) -> QWidget:
    if field.kind == "bool":
        editor = QCheckBox()
        editor.setChecked(bool(value))
    elif field.kind == "choice":
        editor = QComboBox()
        editor.addItems(list(field.choices))
        editor.setCurrentText(value or field.default)
    elif field.kind == "text":
        editor = QPlainTextEdit(value or "")
        editor.setFixedHeight(64)
    else:
        editor = QLineEdit(field.shown(value))
        if field.kind == "optional_int":
            editor.setPlaceholderText(field.help)
    return editor


def _connect(editor: QWidget, slot) -> None:
    if isinstance(editor, QCheckBox):
        editor.toggled.connect(slot)
    elif isinstance(editor, QComboBox):
        editor.currentTextChanged.connect(slot)
    else:
        editor.textChanged.connect(slot)


class SettingsDialog(QDialog):
    """Edits the global provider and summarization settings and, when a chat is open, that chat's settings."""

    # The schemas the pages are generated from.
    policy_model = SummarizationPolicy
    chat_model = ChatSettings

    def __init__(self, provider: ProviderChoice, policy: dict[str, Any], chat: ChatSettings | None,
                 key_saved: bool, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setMinimumWidth(520)
        self._chat_base = chat
        self.tabs = tabs = QTabWidget()

        # Provider
        provider_page = QWidget()
        provider_form = QFormLayout(provider_page)
        self.kind = QComboBox()
        self.kind.addItems(list(KINDS))
        self.kind.setCurrentText(provider.kind)
        self.base_url = QLineEdit(provider.base_url)
        self.base_url.setPlaceholderText("default endpoint (e.g. http://localhost:11434/v1 for Ollama)")
        self.model = QLineEdit(provider.model)
        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setPlaceholderText("stored in the OS keyring" + (" (a key is saved)" if key_saved else ""))
        self.provider_error = QLabel("")
        self.provider_error.setObjectName("error")
        self.provider_error.setWordWrap(True)
        note = QLabel("The local model (SmolLM2, offline) is the default. Keys are kept in the OS keyring, "
                      "never in the chat database.")
        note.setObjectName("muted")
        note.setWordWrap(True)
        provider_form.addRow("Provider", self.kind)
        provider_form.addRow("Base URL", self.base_url)
        provider_form.addRow("Model", self.model)
        provider_form.addRow("API key", self.api_key)
        provider_form.addRow("", self.provider_error)
        provider_form.addRow(note)
        tabs.addTab(provider_page, "Provider")

        # Local model: the picker, and how llama.cpp loads it
        self._model_path = provider.model_path
        served = (provider.base_url, provider.model) if provider.kind == "openai" and provider.base_url else None
        self.model_picker = ModelPicker(provider.kind == "local", provider.model_path, served)
        self.model_picker.chosen.connect(self._model_picked)
        self.extra_buffer_types = QCheckBox("Repack weights for this CPU (extra buffer types)")
        self.extra_buffer_types.setToolTip("Faster on some CPUs; on Intel AMX CPUs it crashes the local model")
        self.extra_buffer_types.setChecked(provider.extra_buffer_types)
        local_page = QWidget()
        local_layout = QVBoxLayout(local_page)
        local_note = QLabel("Pick the model replies come from: the built-in one, a GGUF file found on this computer "
                            "or chosen with Choose file…, or a model of a running Ollama server. Nothing is "
                            "downloaded.")
        local_note.setObjectName("muted")
        local_note.setWordWrap(True)
        local_layout.addWidget(local_note)
        local_layout.addWidget(self.model_picker, 1)
        local_layout.addWidget(self.extra_buffer_types)
        self.local_page = local_page
        tabs.addTab(local_page, "Local model")

        # Summarization
        policy_page = QWidget()
        policy_form = QFormLayout(policy_page)
        defaults = self.policy_model().model_dump()
        self.policy_fields = _FieldSet(setting_fields(self.policy_model), {**defaults, **policy}, policy_form, self.validate)
        self.cross_error = QLabel("")
        self.cross_error.setObjectName("error")
        self.cross_error.setWordWrap(True)
        policy_form.addRow("", self.cross_error)
        tabs.addTab(policy_page, "Summarization")

        # This chat: its own settings, and summarization fields it overrides
        self.chat_fields = None
        self.chat_policy_fields = None
        if chat is not None:
            chat_page = QWidget()
            chat_form = QFormLayout(chat_page)
            self.chat_fields = _FieldSet(setting_fields(self.chat_model), chat.model_dump(), chat_form, self.validate)
            tabs.addTab(chat_page, "This chat")
            overrides_page = QWidget()
            overrides_form = QFormLayout(overrides_page)
            note = QLabel("Tick Override to give this chat its own value; the others follow the Summarization tab.")
            note.setObjectName("muted")
            note.setWordWrap(True)
            overrides_form.addRow(note)
            self.chat_policy_fields = _FieldSet(
                setting_fields(self.policy_model), {**defaults, **policy, **chat.summarization}, overrides_form, self.validate,
                overrides=set(chat.summarization))
            self.chat_cross_error = QLabel("")
            self.chat_cross_error.setObjectName("error")
            self.chat_cross_error.setWordWrap(True)
            overrides_form.addRow("", self.chat_cross_error)
            scroll = QScrollArea()
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setWidget(overrides_page)
            tabs.addTab(scroll, "This chat: summarization")

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(tabs)
        layout.addWidget(self.buttons)
        self.kind.currentTextChanged.connect(self.validate)
        self.base_url.textChanged.connect(self.validate)
        self.model.textChanged.connect(self.validate)
        self.validate()

    # ---- reading the form -----------------------------------------------------------------------------------
    def provider_choice(self) -> ProviderChoice:
        return ProviderChoice(self.kind.currentText(), self.base_url.text().strip(), self.model.text().strip(),
                              self.extra_buffer_types.isChecked(), self._model_path)

    def _model_picked(self, model: FoundModel) -> None:
        """A GGUF file is run by the local model; an Ollama model is reached through its OpenAI-compatible API."""
        if model.base_url:
            self.kind.setCurrentText("openai")
            self.base_url.setText(model.base_url)
            self.model.setText(model.name)
        else:
            self._model_path = "" if model.source == BUILT_IN else str(model.path)
            self.kind.setCurrentText("local")
            self.base_url.clear()
            self.model.clear()

    def policy_values(self) -> dict[str, Any]:
        return self.policy_fields.values()[0]

    def chat_settings(self) -> ChatSettings | None:
        if self.chat_fields is None:
            return None
        return self.chat_model.model_validate(self._chat_values())

    def _chat_values(self) -> dict[str, Any]:
        return {**self._chat_base.model_dump(), **self.chat_fields.values()[0],
                "summarization": self.chat_policy_fields.values()[0]}

    def entered_key(self) -> str:
        return self.api_key.text().strip()

    def errors(self) -> dict[str, str]:
        """Every reason a value is refused, by field ('' for rules across fields, 'provider' for the provider)."""
        values, errors = self.policy_fields.values()
        checked = {k: v for k, v in values.items() if k not in errors}
        errors.update({k: v for k, v in setting_errors(self.policy_model, checked).items() if k not in errors})
        if self.chat_fields is not None:
            overrides, override_errors = self.chat_policy_fields.values()
            # An override is checked together with the global values it sits on.
            merged = {**checked, **{k: v for k, v in overrides.items() if k not in override_errors}}
            global_cross = "" in setting_errors(self.policy_model, checked)
            for field, reason in setting_errors(self.policy_model, merged).items():
                if field in overrides or (field == "" and not global_cross):
                    override_errors.setdefault(field, reason)
            errors.update({f"chat_policy.{k}": v for k, v in override_errors.items()})
            _chat_values, chat_errors = self.chat_fields.values()
            if not chat_errors and not override_errors:
                for field, reason in setting_errors(self.chat_model, self._chat_values()).items():
                    if field == "summarization":
                        errors["chat_policy."] = reason
                    else:
                        chat_errors[field] = reason
            errors.update({f"chat.{k}": v for k, v in chat_errors.items()})
        choice = self.provider_choice()
        url = choice.base_url
        if url and not url.startswith(("http://", "https://")):
            errors["provider"] = f"the base URL must start with http:// or https://, not {url[:30]!r}"
        if choice.kind == "local" and (url or choice.model):
            errors["provider"] = "the local model has no base URL or model name to set; choose openai or anthropic"
        return errors

    def validate(self) -> bool:
        errors = self.errors()
        self.policy_fields.show_errors(errors)
        if self.chat_fields is not None:
            self.chat_fields.show_errors({k.removeprefix("chat."): v for k, v in errors.items()
                                          if k.startswith("chat.")})
            self.chat_policy_fields.show_errors({k.removeprefix("chat_policy."): v for k, v in errors.items()
                                                 if k.startswith("chat_policy.")})
            self.chat_cross_error.setText(errors.get("chat_policy.", ""))
        self.cross_error.setText(errors.get("", ""))
        self.provider_error.setText(errors.get("provider", ""))
        kind = self.kind.currentText()
        self.model.setPlaceholderText(DEFAULT_MODELS.get(kind, "SmolLM2-135M-Instruct (built in)"))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not errors)
        return not errors

    def _accept(self) -> None:
        if self.validate():
            self.accept()
