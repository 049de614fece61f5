"""The window for a screen reader: every control it can land on is named, and each conversation row says who wrote
it, as Qt's accessibility interface (what AT-SPI, UI Automation and VoiceOver read) reports them."""

from __future__ import annotations

import pytest
from precis.core.model.messages import Message, ToolCall
from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QHeaderView,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)

from tests.gui.conftest import open_settings
from tests.gui.test_window import dialogue

# What a reader lands on and must be told the name of: a control that takes input or holds a list.
CONTROLS = (QAbstractButton, QLineEdit, QAbstractItemView, QComboBox, QAbstractSpinBox, QTextEdit, QPlainTextEdit)


def accessible_name(widget: QWidget) -> str:
    interface = QAccessible.queryAccessibleInterface(widget)
    return interface.text(QAccessible.Text.Name) if interface is not None else ""


def unnamed_controls(root: QWidget) -> list[str]:
    """Every control under `root`, shown or not (a folded section, another settings page), with no name. Qt's own
    parts are left out: a header, a combo box's pop-up list, a line edit's clear button, the menu bar's overflow."""
    unnamed = []
    for widget in root.findChildren(QWidget):
        if not isinstance(widget, CONTROLS) or isinstance(widget, QHeaderView):
            continue
        parent = widget.parentWidget()
        if parent.metaObject().className() == "QComboBoxPrivateContainer" or isinstance(parent, QLineEdit) \
                or widget.objectName().startswith("qt_"):
            continue
        if not accessible_name(widget).strip():
            unnamed.append(f"{type(widget).__name__} under {type(parent).__name__} {parent.objectName()!r}")
    return unnamed


def test_every_control_of_the_window_and_the_settings_has_a_name(qtbot, make_window, store):
    store.import_chat("Tides", dialogue(6, "Tide tables, part"))
    window = make_window()
    assert unnamed_controls(window) == []
    assert accessible_name(window.composer.edit) == "Message"  # not the placeholder, which is gone once typing
    dialog = open_settings(qtbot, window)
    try:
        assert unnamed_controls(dialog) == []
        # A field's editor is named by its row's title, so the Override boxes of This chat say which they override.
        names = [accessible_name(box) for box in dialog.findChildren(QAbstractButton) if box.text() == "Override"]
        assert names and all(name.startswith("Override ") and name != "Override " for name in names)
    finally:
        dialog.reject()


def spoken_rows(view) -> list[str]:
    """What a screen reader says of each row of a list view: its cells' accessible names."""
    interface = QAccessible.queryAccessibleInterface(view)
    return [interface.child(number).text(QAccessible.Text.Name) for number in range(interface.childCount())]


def test_each_conversation_row_says_who_wrote_it_and_a_call_says_what_it_runs(qtbot, make_window, store):
    store.import_chat("Disk", [
        Message(role="user", content="How full is the disk?"),
        Message(role="assistant", content="", tool_calls=(ToolCall("c1", "execute_bash", {"command": "df -h /"}),)),
        Message(role="tool", content="Filesystem Size Used\n/dev/sda1 100G 42G", name="execute_bash",
                tool_call_id="c1"),
        Message(role="assistant", content="It is 42% full.", pinned=True),
    ])
    window = make_window()
    spoken = spoken_rows(window.conversation)
    assert len(spoken) == 4
    # Who speaks comes first, as the card's header shows it; the text follows.
    assert spoken[0].startswith("You, ") and spoken[0].endswith(": How full is the disk?")
    # A row of calls has no text of its own: it says the call.
    assert spoken[1].startswith("Tool call, ") and "execute_bash  df -h /" in spoken[1]
    assert spoken[2].startswith("Output of execute_bash, ") and "2 lines" in spoken[2] \
        and spoken[2].endswith(": Filesystem Size Used")
    assert spoken[3].startswith("Assistant, pinned, ") and spoken[3].endswith(": It is 42% full.")


@pytest.fixture
def announced(monkeypatch) -> list[tuple[object, str]]:
    """What the window announces to a screen reader, as (source, message), in order: Qt's announcement events
    recorded on their way out (no screen reader runs here), still sent on."""
    said: list[tuple[object, str]] = []
    send = QAccessible.updateAccessibility

    def record(event) -> None:
        if event.type() == QAccessible.Event.Announcement:
            said.append((event.object(), event.message()))
        send(event)

    monkeypatch.setattr(QAccessible, "updateAccessibility", record)
    return said


def test_what_the_status_bar_says_is_announced_to_a_screen_reader(qtbot, make_window, store, tmp_path, announced):
    """The status bar draws its messages itself, so a screen reader heard none: not that a summary was being made,
    nor that an import failed. Each is announced now. No screen reader runs here: Qt's announcements are recorded
    where they are sent (QAccessible.updateAccessibility), then sent on."""
    from precis.core.settings import SUMMARIZATION_KEY
    from PySide6.QtCore import Qt

    from tests.gui.test_window import idle, long_dialogue, open_imported_chat
    from tests.timing import WAIT_MS

    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "enabled": False})
    window = make_window()
    open_imported_chat(qtbot, window, store, long_dialogue(60, "walk"))
    bar = window.statusBar()

    qtbot.mouseClick(window.inspector.summarize_button, Qt.MouseButton.LeftButton)
    assert (bar, "Summarizing older messages…") in announced
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert "" not in [text for _bar, text in announced]  # the bar cleared: nothing to say

    broken = tmp_path / "notes.json"
    broken.write_text("{ not a transcript")
    announced.clear()
    window.import_transcript(str(broken))
    qtbot.waitUntil(lambda: idle(window) and bar.currentMessage() not in ("", f"Importing {broken}…"),
                    timeout=WAIT_MS)
    assert [text for _bar, text in announced] == [f"Importing {broken}…", bar.currentMessage()]
    assert "line 1: not valid JSON" in announced[-1][1]  # the error, as the bar shows it
    assert all(source is bar for source, _text in announced)


def test_a_finished_reply_is_announced_with_its_length_and_the_focus_stays(qtbot, make_window, store, server,
                                                                           monkeypatch, announced):
    """A reply ending was said to no one: a screen reader user heard the status bar's notices, never that the reply
    they waited for had come. A scripted server on loopback answers (its words known in advance)."""
    import json

    from precis.core.providers.openai_compat import OpenAICompatProvider

    from tests.gui.test_window import idle, open_new_chat
    from tests.providers.scripted_server import FINISH, delta, reply, stream
    from tests.timing import WAIT_MS

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.steps = [reply(200, json.dumps({"data": [{"id": "m"}]})),
                    stream([delta("The 7:10 to Vashon "), delta("leaves first."), FINISH, "data: [DONE]"])]
    window = make_window(OpenAICompatProvider(base_url=server.base_url, model="m"))
    open_new_chat(qtbot, window, store)
    window.activateWindow()
    window.composer.edit.setFocus()
    qtbot.waitUntil(window.composer.edit.hasFocus, timeout=WAIT_MS)
    announced.clear()
    with qtbot.waitSignal(window.reply_finished, timeout=WAIT_MS):
        window.submit("Which ferry leaves first?")
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert (window.statusBar(), "Reply finished, 6 words") in announced
    assert window.composer.edit.hasFocus()  # told, not moved to: the user goes on typing

    server.steps = [reply(400, '{"error": {"message": "the model m is not loaded"}}')]
    announced.clear()
    with qtbot.waitSignal(window.reply_finished, timeout=WAIT_MS):
        window.submit("And the last?")
    said = [text for _source, text in announced]
    assert not any(text.startswith("Reply finished") for text in said)
    assert any("the model m is not loaded" in text for text in said)  # the failure, as the status bar says it
