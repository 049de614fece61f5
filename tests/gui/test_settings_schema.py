"""One settings schema: the dialog's fields, the per-chat overrides, the validation messages and the settings
table of docs/settings.md all come from the pydantic models' titles, units and ranges."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from precis.core.model.schema import setting_errors, setting_fields
from precis.core.settings import ChatSettings, ProviderChoice, SummarizationPolicy
from precis.gui.settings_dialog import SettingsDialog
from precis.gui.settings_table import with_table
from pydantic import Field
from PySide6.QtWidgets import QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QTabWidget

SETTINGS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "settings.md"


def labels(form: QFormLayout) -> list[str]:
    found = []
    for row in range(form.rowCount()):
        item = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
        if item is not None and isinstance(item.widget(), QLabel) and item.widget().text():
            found.append(item.widget().text())
    return found


def test_the_documented_settings_table_is_the_one_the_schema_generates():
    text = SETTINGS_PAGE.read_text(encoding="utf-8")
    assert text == with_table(text), (
        "docs/settings.md's table differs from the schema; regenerate it: .venv/bin/python -m precis.gui.settings_table")


def test_every_policy_field_is_a_titled_setting():
    # A field without a title would silently be missing from the dialog, the overrides and docs/settings.md.
    assert [f.name for f in setting_fields(SummarizationPolicy)] == list(SummarizationPolicy.model_fields)


def test_every_field_appears_in_the_dialog_and_the_overrides_under_its_title(qtbot):
    dialog = SettingsDialog(ProviderChoice(), {}, ChatSettings(), key_saved=False)
    qtbot.addWidget(dialog)
    policy = setting_fields(SummarizationPolicy)
    assert set(dialog.policy_fields.editors) == {f.name for f in policy}
    assert set(dialog.chat_policy_fields.override_boxes) == {f.name for f in policy}
    assert set(dialog.chat_fields.editors) == {"system_prompt", "context_window", "reserve_output", "run_timeout",
                                             "run_memory_mb", "run_processes", "workspace", "offer_tools",
                                             "tool_steps"}
    form = dialog.policy_fields.editors["trigger_ratio"].parentWidget().parentWidget().layout()
    assert "Summarize at" in labels(form) and "trigger_ratio" not in labels(form)
    # A share of the budget is shown as a percentage and stored as a fraction.
    assert dialog.policy_fields.editors["trigger_ratio"].text() == "80"
    dialog.policy_fields.editors["trigger_ratio"].setText("85")
    assert dialog.policy_values()["trigger_ratio"] == 0.85


class PolicyWithANewField(SummarizationPolicy):
    digest_lines: int = Field(20, ge=1, le=200, title="Digest length", json_schema_extra={"unit": "lines"},
                              description="Lines in a conversation digest")


def test_a_field_added_to_the_schema_appears_in_the_dialog_the_overrides_and_the_messages(qtbot):
    class Dialog(SettingsDialog):
        policy_model = PolicyWithANewField

    dialog = Dialog(ProviderChoice(), {}, ChatSettings(), key_saved=False)
    qtbot.addWidget(dialog)
    editor = dialog.policy_fields.editors["digest_lines"]
    assert editor.text() == "20" and editor.toolTip() == "Lines in a conversation digest"
    assert "digest_lines" in dialog.chat_policy_fields.override_boxes
    assert "Digest length" in labels(editor.parentWidget().parentWidget().layout())
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    editor.setText("500")
    assert not ok.isEnabled()
    assert dialog.policy_fields.error_labels["digest_lines"].text() == "must be from 1 to 200 lines"
    editor.setText("40")
    assert ok.isEnabled() and dialog.policy_values()["digest_lines"] == 40


def test_validation_messages_are_in_the_windows_words():
    assert setting_errors(SummarizationPolicy, {"trigger_ratio": 1.5}) == {
        "trigger_ratio": "must be above 0 and at most 100 % of the budget"}
    assert setting_errors(SummarizationPolicy, {"mode": "poetry"}) == {"mode": "must be one of rule, llm, hybrid"}
    assert setting_errors(SummarizationPolicy, {"keep_recent": "six"}) == {"keep_recent": "must be a whole number"}
    assert setting_errors(ChatSettings, {"reserve_output": -1}) == {
        "reserve_output": "must be from 0 to 1000000 tokens"}
    for reason in setting_errors(SummarizationPolicy, {"extra_instructions": "x" * 5000, "max_depth": 0}).values():
        assert "Input should" not in reason


@given(st.integers(min_value=1, max_value=100))
def test_a_percentage_typed_is_the_fraction_stored_and_shown_back(percent):
    field = next(f for f in setting_fields(SummarizationPolicy) if f.name == "trigger_ratio")
    stored = field.parse(str(percent))
    assert abs(stored - percent / 100) < 1e-12
    assert field.shown(stored) == str(percent)
    assert field.parse(f"{percent} %") == stored


def test_the_dialog_fits_a_1000_by_700_screen_and_short_texts_are_one_line(qtbot):
    dialog = SettingsDialog(ProviderChoice(), {}, ChatSettings(), key_saved=False)
    qtbot.addWidget(dialog)
    dialog.show()
    # Every page's fields are reachable (the long ones scroll) with OK on screen; the tab names are not cut.
    assert dialog.height() <= 660 and dialog.minimumSizeHint().height() <= 660
    tabs = dialog.findChild(QTabWidget)
    assert sum(tabs.tabBar().tabRect(i).width() for i in range(tabs.count())) <= tabs.width()
    for name in ("summarizer_provider", "summarizer_model", "summarizer_base_url"):
        assert isinstance(dialog.policy_fields.editors[name], QLineEdit), name


def test_why_ok_is_off_is_in_view_wherever_the_page_is_scrolled(qtbot):
    """“Summarize at” 60 % under “Re-arm below” 70 % turned OK off, and the reason was written at the foot of the
    Summarization page, below its last field: out of view unless scrolled to. The same for a chat's overrides."""
    dialog = SettingsDialog(ProviderChoice(), {}, ChatSettings(), key_saved=False)
    qtbot.addWidget(dialog)
    dialog.show()
    tabs = dialog.findChild(QTabWidget)
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)

    tabs.setCurrentIndex(2)  # Summarization, scrolled to its top where “Summarize at” is
    dialog.policy_fields.editors["trigger_ratio"].setText("60")
    assert not ok.isEnabled()
    qtbot.waitUntil(lambda: not dialog.cross_error.visibleRegion().isEmpty())
    assert "must be below “Summarize at” (60 % of the budget)" in dialog.cross_error.text()
    dialog.policy_fields.editors["trigger_ratio"].setText("80")
    assert ok.isEnabled() and dialog.cross_error.isHidden()

    tabs.setCurrentIndex(4)  # This chat: summarization
    overrides = dialog.chat_policy_fields
    overrides.override_boxes["trigger_ratio"].setChecked(True)
    overrides.editors["trigger_ratio"].setText("60")
    assert not ok.isEnabled()
    qtbot.waitUntil(lambda: not dialog.chat_cross_error.visibleRegion().isEmpty())


def test_the_system_prompt_box_is_beside_its_label(qtbot):
    """On This chat the system prompt's box floated in the middle of the page, 170 px below its label, the other
    fields pushed to the bottom."""
    dialog = SettingsDialog(ProviderChoice(), {}, ChatSettings(), key_saved=False)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.findChild(QTabWidget).setCurrentIndex(3)  # This chat
    editor = dialog.chat_fields.editors["system_prompt"]
    box = editor.parentWidget()
    label = box.parentWidget().layout().labelForField(box)
    qtbot.waitUntil(editor.isVisible)
    assert abs(editor.mapTo(dialog, editor.rect().topLeft()).y() - label.mapTo(dialog, label.rect().topLeft()).y()) < 12
    window_field = dialog.chat_fields.editors["context_window"]
    assert window_field.mapTo(dialog, window_field.rect().topLeft()).y() < editor.mapTo(
        dialog, editor.rect().bottomLeft()).y() + 40  # the next field follows it
