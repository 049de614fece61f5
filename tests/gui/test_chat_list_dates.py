"""The chat list's narrow rows wrap between words, never inside a chat's date or its message count (a walk-through
saw "28 / Nov 16:46" split over two lines)."""

from __future__ import annotations

import time

from precis.core.model.messages import Message
from PySide6.QtGui import QTextLayout, QTextOption

from tests.gui.test_window import idle
from tests.timing import WAIT_MS


def wrapped(text: str, font, width: int) -> list[str]:
    """The lines `text` takes at `width` pixels, wrapped at word boundaries as the list's items are."""
    lines = []
    for paragraph in text.split("\n"):
        layout = QTextLayout(paragraph, font)
        option = QTextOption()
        option.setWrapMode(QTextOption.WrapMode.WordWrap)
        layout.setTextOption(option)
        layout.beginLayout()
        while (line := layout.createLine()).isValid():
            line.setLineWidth(width)
        layout.endLayout()
        lines += [paragraph[layout.lineAt(n).textStart():][:layout.lineAt(n).textLength()].strip()
                  for n in range(layout.lineCount())]
    return lines


def test_a_chats_date_and_count_are_never_split_over_two_lines(qtbot, make_window, store):
    chat_id = store.import_chat("Kickboxing timetable", [Message(role="user", content=f"note {n}") for n in range(438)])
    window = make_window()
    qtbot.waitUntil(lambda: idle(window) and window.chat_list.list.count() == 1, timeout=WAIT_MS)
    chat_list = window.chat_list.list
    text = chat_list.item(0).text()
    updated = store.get_chat(chat_id).updated_at
    date = time.strftime("%d %b %H:%M", time.localtime(updated)).split()
    for width in range(40, 400, 2):  # every width the list can be dragged to, and narrower
        lines = [line.split() for line in wrapped(text, chat_list.font(), width)]
        # Each piece of the date (and of "438 messages") sits on the line its first piece does.
        for whole in (date, ["438", "messages"]):
            first = next(n for n, words in enumerate(lines) if any(word.startswith(whole[0]) for word in words))
            assert all(piece in " ".join(lines[first]) for piece in whole), (width, lines)
