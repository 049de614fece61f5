"""A long prompt takes the local model seconds to read: the reply's row says so, how far it has read and for how
long, instead of a bare "…" (issue 22: 18 s of "…" for a 3,400-token prompt). The embedded model, the real window."""

from __future__ import annotations

import re

import pytest
from precis.core.model.messages import Message
from PySide6.QtCore import Qt

from tests.gui.test_window import open_imported_chat

# About 3,000 tokens: read in several batches, each reported.
NOTES = " ".join(f"Line {n}: the nightly import on the staging box copies table_{n} and checks its row count."
                 for n in range(160))


@pytest.mark.model
def test_the_reply_shows_how_far_the_model_has_read_a_long_prompt(qtbot, make_window, store, local_provider):
    window = make_window(provider=local_provider)
    open_imported_chat(qtbot, window, store, [Message(role="user", content=NOTES),
                                              Message(role="assistant", content="Noted.")])
    model = window.conversation.rows_model
    shown: list[str] = []
    model.row_streamed.connect(lambda number: shown.append(model.rows()[number].waiting))
    qtbot.keyClicks(window.composer.edit, "Which table comes last?")
    with qtbot.waitSignal(window.reply_finished, timeout=180_000):
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    reading = [text for text in shown if text.startswith("Reading the prompt")]
    assert reading, shown
    read, total = (int(n.replace(",", "")) for n in re.match(r"Reading the prompt: ([\d,]+) of ([\d,]+) tokens… \d+ s$",
                                                               reading[-1]).groups())
    assert 0 < read < total and total > 2000
    assert model.rows()[-1].message.content  # and then the reply itself
