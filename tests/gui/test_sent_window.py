"""A reply's "What was sent" in the window (issue 26): from its context menu action, the prompt it was written from,
part by part; a reply from before records were kept says so. The embedded model, the real window."""

from __future__ import annotations

import pytest
from precis.core.context.prompt_parts import MESSAGE, PRIMING, SYSTEM_PROMPT
from precis.core.model.messages import Message
from precis.gui.sent_window import SentWindow
from PySide6.QtCore import Qt

from tests.gui.test_window import open_imported_chat
from tests.timing import WAIT_MS


def opened_sent_window(qtbot, window, row: int) -> SentWindow:
    before = set(window.findChildren(SentWindow))
    assert "sent" in window.conversation.row_actions(row)
    window.conversation.trigger("sent", row)
    shown = next(w for w in window.findChildren(SentWindow) if w not in before)
    qtbot.waitUntil(lambda: shown.split.isVisible() or "cannot be shown" in shown.note.text(), timeout=WAIT_MS)
    return shown


@pytest.mark.model
def test_what_was_sent_shows_the_prompt_a_reply_was_written_from(qtbot, make_window, store, local_provider):
    window = make_window(provider=local_provider)
    open_imported_chat(qtbot, window, store, [Message(role="user", content="The staging box is called heron."),
                                              Message(role="assistant", content="Noted.")])
    qtbot.keyClicks(window.composer.edit, "What is the staging box called?")
    with qtbot.waitSignal(window.reply_finished, timeout=180_000):
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    model = window.conversation.rows_model
    last = model.rowCount() - 1

    sent = opened_sent_window(qtbot, window, last)
    parts = sent.view.parts
    assert [(p.kind, p.text) for p in parts if p.kind == MESSAGE] == [
        (MESSAGE, "The staging box is called heron."), (MESSAGE, "Noted."), (MESSAGE, "What is the staging box called?")]
    assert parts[-1].kind == PRIMING and all(p.kind != SYSTEM_PROMPT or p.text for p in parts)
    assert sent.view.total_label.text().startswith(f"{sum(p.tokens for p in parts):,} tokens")
    assert sent.part_text.toPlainText() == "What is the staging box called?"  # the message replied to, chosen first
    sent.view.list.setCurrentRow(next(n for n, p in enumerate(parts) if p.text.startswith("The staging")))
    assert sent.part_text.toPlainText() == "The staging box is called heron."

    imported = opened_sent_window(qtbot, window, last - 2)  # "Noted.": imported, written elsewhere
    assert "written before Precis kept" in imported.note.text() and not imported.split.isVisible()
