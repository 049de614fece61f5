"""Settings: the provider (API key kept in the OS keyring), summarization, and this chat's own settings.

The summarization and chat fields are generated from the settings schema (core.model.schema over
SummarizationPolicy and ChatSettings): a new field there appears here, in the per-chat overrides and in the README.
Values are checked as they are typed with the same rules core uses; a bad value is refused with its reason next to
the field in the window's words, and OK stays disabled until all are valid.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QItemSelectionModel, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ..core.model.schema import SettingField, setting_errors, setting_fields
from ..core.providers.cancellable import cancellable
from ..core.providers.discovery import FoundModel
from ..core.providers.registry import check_connection, provider_for
from ..core.settings import DEFAULT_MODELS, SERVER_FIELDS, ChatSettings, ProviderChoice, SummarizationPolicy
from ..core.tools.workspace import workspace_problem
from . import theme
from .allowed_tools import AllowedTools
from .model_picker import BUILT_IN, ModelPicker
from .tools_page import ToolsPage
from .wording import failure_text
from .workers import Runner

LOCAL_PAGE = "Local model"
# When summarization settings (and a chat's window) take effect: the window reopens the open chat on them at OK.
WHEN_APPLIED = ("Applied at OK. Messages already summarized stay so (Undo last brings them back); the next summary "
                "follows the new values, and a chat over the new “Summarize at” is summarized at once: the open chat "
                "at OK, the others when next opened.")


class _FieldSet:
    """An editor per setting (from the schema: title as label, help as tooltip, unit after the value) with an error
    label under each; `values()` parses, `show_errors` says what is wrong and where. `lines` holds each editor's
    row, for a button beside it.

    With `overrides`, each field has an Override box: only ticked fields are values (the rest are inherited), and an
    unticked field's editor shows the inherited value, disabled.
    """

    def __init__(self, fields: list[SettingField], initial: dict[str, Any], form: QFormLayout, on_change,
                 overrides: set[str] | None = None) -> None:
        self.fields = fields
        self.editors: dict[str, QWidget] = {}
        self.error_labels: dict[str, QLabel] = {}
        self.override_boxes: dict[str, QCheckBox] = {}
        self.lines: dict[str, QHBoxLayout] = {}
        for field in fields:
            editor = _editor(field, initial.get(field.name))
            editor.setToolTip(field.help)
            # The row's label stands beside the box holding the editor, so a screen reader would not read it as the
            # editor's name.
            editor.setAccessibleName(field.title)
            editor.setAccessibleDescription(field.help)
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
            self.lines[field.name] = line
            if overrides is not None:
                tick = QCheckBox("Override")
                tick.setToolTip("Use a value of this chat's own instead of the global setting")
                tick.setAccessibleName(f"Override {field.title}")  # a reader hears one of many "Override"s otherwise
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
            elif field.kind == "line":
                values[field.name] = editor.text().strip()
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
        editor.setFixedHeight(96)
        # Its own height only: left Expanding, its row took the page's spare height with the box floating in it.
        editor.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
    else:
        editor = QLineEdit(field.shown(value))
        if field.kind == "optional_int":
            editor.setPlaceholderText(field.help)
    return editor


# As large as a 1000×700 screen allows: wide enough for the catalogue's columns and its Download buttons, the long
# pages scrolling. Smaller on a smaller screen.
DIALOG_SIZE = (960, 620)


def _scrolled(page: QWidget) -> QScrollArea:
    """A page of many fields that scrolls, so the dialog fits a short screen (1000×700) with OK in reach."""
    scroll = QScrollArea()
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setWidget(page)
    return scroll


def _refusal() -> QLabel:
    """A reason OK is off, shown only while there is one."""
    label = QLabel("")
    label.setObjectName("error")
    label.setWordWrap(True)
    label.hide()
    return label


def _tell(label: QLabel, reason: str) -> None:
    label.setText(reason)
    label.setVisible(bool(reason))


def _connect(editor: QWidget, slot) -> None:
    if isinstance(editor, QCheckBox):
        editor.toggled.connect(slot)
    elif isinstance(editor, QComboBox):
        editor.currentTextChanged.connect(slot)
    else:
        editor.textChanged.connect(slot)


class SettingsDialog(QDialog):
    """Edits the global provider and summarization settings, the tools (`tools_page`, which saves as it goes) and,
    when a chat is open, that chat's settings."""

    tested = Signal(bool)  # Test connection has its answer (True: the server answered)

    # The schemas the pages are generated from.
    provider_model = ProviderChoice
    policy_model = SummarizationPolicy
    chat_model = ChatSettings

    def __init__(self, provider: ProviderChoice, policy: dict[str, Any], chat: ChatSettings | None,
                 key_saved: bool, model_window: int | None = None, parent=None, tools_page: ToolsPage | None = None,
                 models_dir: Path | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setMinimumWidth(520)
        self._chat_base = chat
        self._testing = False
        self.tabs = tabs = QTabWidget()

        # Provider and Local model: one schema (ProviderChoice), its fields on the page they name
        self._runner = Runner(parent=self)
        self.finished.connect(self._runner.cancel_all)  # closing the dialog stops a Test connection under way
        provider_fields = [f for f in setting_fields(self.provider_model) if f.page != LOCAL_PAGE]
        local_fields = [f for f in setting_fields(self.provider_model) if f.page == LOCAL_PAGE]
        initial = provider.model_dump()
        provider_page = QWidget()
        provider_form = QFormLayout(provider_page)
        self.provider_fields = _FieldSet(provider_fields, initial, provider_form, self.validate)
        self.kind = self.provider_fields.editors["kind"]
        self.base_url = self.provider_fields.editors["base_url"]
        self.base_url.setPlaceholderText("the provider's own endpoint (e.g. http://localhost:11434/v1 for Ollama)")
        self.model = self.provider_fields.editors["model"]
        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setPlaceholderText("stored in the OS keyring" + (" (a key is saved)" if key_saved else ""))
        provider_form.addRow("API key", self.api_key)
        self.test_button = QPushButton("Test connection")
        self.test_button.setToolTip("Ask the server for its models with these settings (nothing is saved)")
        self.test_button.clicked.connect(self.test_connection)
        self.test_result = QLabel("")
        self.test_result.setWordWrap(True)
        test_line = QHBoxLayout()
        test_line.addWidget(self.test_button)
        test_line.addWidget(self.test_result, 1)
        provider_form.addRow("", test_line)
        self.provider_error = QLabel("")
        self.provider_error.setObjectName("error")
        self.provider_error.setWordWrap(True)
        provider_form.addRow("", self.provider_error)
        note = QLabel("The local model (SmolLM2, offline) is the default. Keys are kept in the OS keyring, "
                      "never in the chat database.")
        note.setObjectName("muted")
        note.setWordWrap(True)
        provider_form.addRow(note)
        tabs.addTab(provider_page, "Provider")

        # Local model: the picker, and how llama.cpp loads it
        self._model_path = provider.model_path
        served = (provider.base_url, provider.model) if provider.kind == "openai" and provider.base_url else None
        self.model_picker = ModelPicker(provider.kind == "local", provider.model_path, served, models_dir=models_dir)
        # Closing the dialog pauses any download (kept, resumed from where it stopped next time).
        self.finished.connect(self.model_picker.catalogue.pause_all)
        self.model_picker.chosen.connect(self._model_picked)
        local_page = QWidget()
        local_layout = QVBoxLayout(local_page)
        local_note = QLabel("Pick the model replies come from: the built-in one, a GGUF file found on this computer "
                            "or chosen with Choose file…, or a model of a running Ollama server; or download a recommended one "
                            "below (nothing is fetched unless you click Download).")
        local_note.setObjectName("muted")
        local_note.setWordWrap(True)
        local_layout.addWidget(local_note)
        local_layout.addWidget(self.model_picker, 1)
        local_form = QFormLayout()
        self.local_fields = _FieldSet(local_fields, initial, local_form, self.validate)
        local_layout.addLayout(local_form)
        self.local_page = local_page
        tabs.addTab(local_page, LOCAL_PAGE)

        # Summarization
        policy_page = QWidget()
        policy_form = QFormLayout(policy_page)
        self.policy_note = QLabel("For every chat, but where a chat has its own value (This chat: summarization). "
                                  + WHEN_APPLIED)
        self.policy_note.setObjectName("muted")
        self.policy_note.setWordWrap(True)
        policy_form.addRow(self.policy_note)
        defaults = self.policy_model().model_dump()
        self.policy_fields = _FieldSet(setting_fields(self.policy_model), {**defaults, **policy}, policy_form, self.validate)
        # A rule across fields ("Re-arm below" under "Summarize at") is told at the dialog's foot, beside OK: at
        # the foot of its page it was out of view while the fields it names were being edited.
        self.cross_error = _refusal()
        tabs.addTab(_scrolled(policy_page), "Summarization")

        # Tools: mcp.json, the servers and a switch per tool
        self.tools_page = tools_page
        if tools_page is not None:
            self.tools_tab = _scrolled(tools_page)
            tabs.addTab(self.tools_tab, "Tools")

        # This chat: its own settings, and summarization fields it overrides
        self.chat_fields = None
        self.chat_policy_fields = None
        if chat is not None:
            chat_page = QWidget()
            chat_form = QFormLayout(chat_page)
            self.chat_fields = _FieldSet(setting_fields(self.chat_model), chat.model_dump(), chat_form, self.validate)
            if model_window is not None:  # what an empty Context window means, to know what a value overrides
                window_editor = self.chat_fields.editors["context_window"]
                window_editor.setPlaceholderText(f"Automatic ({model_window:,}, the model's own)")
                window_editor.setToolTip(f"The budget; empty: the model's own window ({model_window:,} tokens)")
            self.workspace = self.chat_fields.editors["workspace"]
            self.workspace.setPlaceholderText("none: the model gets no file or command tools")
            self.browse_button = QPushButton("Browse…")
            self.browse_button.setToolTip("Pick the folder in a folder picker")
            self.browse_button.clicked.connect(self.open_folder_picker)
            self.chat_fields.lines["workspace"].addWidget(self.browse_button)
            self.allowed_tools = AllowedTools(chat.allowed_tools)
            self.allowed_tools.setToolTip("Tools that run without asking in this chat (\"Allow in this chat\" on a "
                                          "tool's card)")
            chat_form.addRow("Allowed without asking", self.allowed_tools)
            tabs.addTab(chat_page, "This chat")
            overrides_page = QWidget()
            overrides_form = QFormLayout(overrides_page)
            note = QLabel("Tick Override to give this chat its own value; the others follow the Summarization tab. "
                          + WHEN_APPLIED)
            note.setObjectName("muted")
            note.setWordWrap(True)
            overrides_form.addRow(note)
            self.chat_policy_fields = _FieldSet(
                setting_fields(self.policy_model), {**defaults, **policy, **chat.summarization}, overrides_form, self.validate,
                overrides=set(chat.summarization))
            self.chat_cross_error = _refusal()
            tabs.addTab(_scrolled(overrides_page), "This chat: summarization")

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(tabs)
        layout.addWidget(self.cross_error)
        if chat is not None:
            layout.addWidget(self.chat_cross_error)
        layout.addWidget(self.buttons)
        room = (parent.screen() if parent is not None else self.screen()).availableGeometry()
        self.resize(min(max(self.sizeHint().width(), DIALOG_SIZE[0]), room.width() - 40),
                    min(DIALOG_SIZE[1], room.height() - 60))
        self.validate()

    def show_catalogue(self) -> None:
        """Local model's page, the focus in the catalogue of recommended models: its first one current, not
        selected (a highlighted row there read as a model picked, beside the one in use in the list above)."""
        self.tabs.setCurrentWidget(self.local_page)
        tree = self.model_picker.catalogue.tree
        tree.setCurrentItem(tree.topLevelItem(0), 0, QItemSelectionModel.SelectionFlag.NoUpdate)
        tree.setFocus()

    # ---- reading the form -----------------------------------------------------------------------------------
    def _provider_values(self) -> tuple[dict[str, Any], dict[str, str]]:
        """The provider's values as its kind uses them (a server's address left in its box does not keep the local
        model from being chosen), with the reasons any is refused."""
        values, errors = self.provider_fields.values()
        local_values, local_errors = self.local_fields.values()
        values = self.provider_model.as_used({**values, **local_values, "model_path": self._model_path})
        errors = {name: reason for name, reason in {**errors, **local_errors}.items()
                  if name not in SERVER_FIELDS or values["kind"] != "local"}
        return values, errors

    def provider_choice(self) -> ProviderChoice:
        """The provider settings as they stand (only called once they are valid: OK is disabled until then)."""
        return self.provider_model.model_validate(self._provider_values()[0])

    def test_connection(self) -> None:
        """Ask the server these settings name for its models, off the GUI thread; say what it answered."""
        choice = self.provider_choice()  # the button is enabled only while the values are valid
        key = self.entered_key() or None
        self._testing = True
        self.validate()
        self.test_result.setText(f"Asking {choice.base_url or 'the ' + choice.kind + ' API'} for its models…")
        theme.style_as(self.test_result, "muted")

        def ask(job) -> str:
            provider = provider_for(choice, api_key=key)
            try:
                with cancellable(job.cancel_token):
                    return check_connection(provider)
            finally:
                provider.close()

        job = self._runner.submit("test the connection", ask)
        job.succeeded.connect(lambda text: self._tested(text, ok=True))
        job.failed.connect(lambda error: self._tested(failure_text(error), ok=False))

    def _tested(self, text: str, ok: bool) -> None:
        self._testing = False
        self.test_result.setText(text if ok else f"Failed: {text}")
        theme.style_as(self.test_result, "" if ok else "error")
        self.validate()
        self.tested.emit(ok)

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

    def open_folder_picker(self) -> QFileDialog:
        """Browse…: a folder picker, shown without blocking, starting at the folder entered (or home)."""
        entered = self.workspace.text().strip()
        start = entered if entered and not workspace_problem(entered) else str(Path.home())
        picker = QFileDialog(self, "Choose the workspace folder", start)
        picker.setFileMode(QFileDialog.FileMode.Directory)
        picker.setOption(QFileDialog.Option.ShowDirsOnly)
        picker.fileSelected.connect(self.workspace.setText)
        picker.open()
        return picker

    def policy_values(self) -> dict[str, Any]:
        return self.policy_fields.values()[0]

    def chat_settings(self) -> ChatSettings | None:
        if self.chat_fields is None:
            return None
        return self.chat_model.model_validate(self._chat_values())

    def _chat_values(self) -> dict[str, Any]:
        return {**self._chat_base.model_dump(), **self.chat_fields.values()[0],
                "summarization": self.chat_policy_fields.values()[0], "allowed_tools": self.allowed_tools.names()}

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
            folder_problem = workspace_problem(_chat_values.get("workspace", ""))
            if folder_problem:
                chat_errors.setdefault("workspace", folder_problem)
            errors.update({f"chat.{k}": v for k, v in chat_errors.items()})
        values, provider_errors = self._provider_values()
        provider_errors.update({k: v for k, v in setting_errors(self.provider_model, values).items()
                                if k not in provider_errors})
        errors.update({f"provider.{k}": v for k, v in provider_errors.items()})
        return errors

    def validate(self) -> bool:
        errors = self.errors()
        self.policy_fields.show_errors(errors)
        if self.chat_fields is not None:
            self.chat_fields.show_errors({k.removeprefix("chat."): v for k, v in errors.items()
                                          if k.startswith("chat.")})
            self.chat_policy_fields.show_errors({k.removeprefix("chat_policy."): v for k, v in errors.items()
                                                 if k.startswith("chat_policy.")})
            _tell(self.chat_cross_error, errors.get("chat_policy.", ""))
        _tell(self.cross_error, errors.get("", ""))
        provider_errors = {k.removeprefix("provider."): v for k, v in errors.items() if k.startswith("provider.")}
        self.provider_fields.show_errors(provider_errors)
        self.local_fields.show_errors(provider_errors)
        self.provider_error.setText(provider_errors.get("", ""))
        kind = self.kind.currentText()
        for editor in (self.base_url, self.model):  # what they hold is kept for a switch back to a server
            editor.setEnabled(kind != "local")
        self.model.setPlaceholderText(DEFAULT_MODELS.get(kind, "the model picked in Local model"))
        self.test_button.setEnabled(kind != "local" and not provider_errors and not self._testing)
        self.test_button.setToolTip("Ask the server for its models with these settings (nothing is saved)"
                                    if kind != "local" else "The local model runs on this computer: no connection")
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not errors)
        return not errors

    def _accept(self) -> None:
        """OK: valid values are accepted, and mcp.json's unsaved edit is saved; one that is not valid keeps the
        dialog open on the Tools page, its mistake shown."""
        if not self.validate():
            return
        if self.tools_page is not None and not self.tools_page.save_pending():
            self.tabs.setCurrentWidget(self.tools_tab)
            return
        self.accept()
