"""Summarize now, Undo and what the inspector says of them, as someone tuning summarization uses them: one click is
one summary, and the notice beside an Undo speaks of what that Undo undoes."""

from __future__ import annotations

from precis.core.settings import SUMMARIZATION_KEY
from PySide6.QtCore import Qt

from tests.gui.test_window import idle, long_dialogue, open_imported_chat
from tests.timing import WAIT_MS


def test_summarize_now_waits_for_the_summary_being_made_so_a_second_click_makes_no_second_one(
        qtbot, make_window, store):
    """A summary takes seconds with a model (up to its time limit), and the button stayed enabled meanwhile: a second
    click queued a second Summarize now, which summarized what the first left, or was refused as saving nothing
    ("not summarized: a summary of 1 messages would leave ...") though the user had asked for one summary."""
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "enabled": False})
    window = make_window()
    open_imported_chat(qtbot, window, store, long_dialogue(60, "walk"))
    inspector = window.inspector
    assert inspector.summarize_button.isEnabled()

    qtbot.mouseClick(inspector.summarize_button, Qt.MouseButton.LeftButton)
    for button in (inspector.summarize_button, inspector.undo_button):
        assert not button.isEnabled()
        assert button.toolTip() == "Wait for the summary to finish"
    qtbot.mouseClick(inspector.summarize_button, Qt.MouseButton.LeftButton)  # the impatient second click
    qtbot.waitUntil(lambda: idle(window) and inspector.undo_button.isEnabled(), timeout=WAIT_MS)
    assert len(window.chat.snapshot.chain) == 1
    assert window.composer.hint.text() == ""  # no refusal of a second summary

    qtbot.mouseClick(inspector.undo_button, Qt.MouseButton.LeftButton)
    assert not inspector.undo_button.isEnabled() and not inspector.summarize_button.isEnabled()
    qtbot.mouseClick(inspector.undo_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: idle(window) and inspector.summarize_button.isEnabled(), timeout=WAIT_MS)
    assert window.chat.snapshot.chain == []
    assert window.composer.hint.text() == ""  # no "No summary to undo" for the second click
