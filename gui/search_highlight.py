"""A search's words highlighted in the conversation's rendered messages."""

from __future__ import annotations

import re

from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor, QTextDocument

from ..core.storage.message_table import search_words
from . import theme


def search_pattern(text: str) -> re.Pattern[str] | None:
    """What a search highlights: every word that starts with one of the words the store searched for."""
    words = search_words(text)
    if not words:
        return None
    return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\w*", re.IGNORECASE)


def highlight_matches(doc: QTextDocument, pattern: re.Pattern[str]) -> None:
    """Give every match of `pattern` in the document's text the search-hit background."""
    marked = QTextCharFormat()
    marked.setBackground(QColor(theme.current.search_hit))
    marked.setForeground(QColor(theme.current.text))
    cursor = QTextCursor(doc)
    block = doc.begin()
    while block.isValid():
        for match in pattern.finditer(block.text()):
            cursor.setPosition(block.position() + match.start())
            cursor.setPosition(block.position() + match.end(), QTextCursor.MoveMode.KeepAnchor)
            cursor.mergeCharFormat(marked)
        block = block.next()
