"""The left panel: chats (new, rename, delete with undo) and search across all chats (Ctrl+K).

The search waits until typing pauses (SEARCH_DELAY_MS) before it asks for hits; Esc clears it, Down goes to the
results and Enter opens the first. Choosing a chat or a hit with a click or Enter hands the keyboard to the message
box; the arrow keys move through the list and open what they reach, the focus staying in the list."""

from __future__ import annotations

import re
import time

from PySide6.QtCore import QEvent, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
)

from ..core.storage.store import ChatInfo, SearchHit

ChatIdRole = Qt.ItemDataRole.UserRole + 1
HitRole = Qt.ItemDataRole.UserRole + 2
SEARCH_DELAY_MS = 200
NO_BREAK = "\u00a0"  # a space the text is never wrapped at
_MARKS = re.compile(r"\*\*|__|`")


def _snippet_line(snippet: str) -> str:
    """A hit's snippet as one line of plain words: Markdown's emphasis and code marks dropped, the [hit] kept."""
    return " ".join(_MARKS.sub("", snippet).split())


def _opens_something(item: QListWidgetItem | None) -> bool:
    """A chat or a search hit; not the "No matches" line."""
    return item is not None and (item.data(HitRole) is not None or bool(item.data(ChatIdRole)))


MIN_WIDTH = 200

# Made with the application: a standard key's sequence is the platform's, asked of it.
RENAME_KEY, DELETE_KEY = Qt.Key.Key_F2, QKeySequence.StandardKey.Delete


class ChatList(QFrame):
    chat_selected = Signal(str)
    new_requested = Signal()
    import_requested = Signal()
    files_dropped = Signal(list)  # chat files dropped on the list: each to import
    rename_requested = Signal(str, str)
    delete_requested = Signal(str)
    search_changed = Signal(str)  # what to search for, once typing paused; "" when the search is cleared
    hit_selected = Signal(object)
    chosen = Signal()  # a chat or hit was clicked or activated (Enter): the user is done with the list

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        # At least 200 px, and as wide as its buttons need in a large font: a fixed minimum cut "New chat" to "ew cha".
        hint = super().minimumSizeHint()
        return QSize(max(MIN_WIDTH, hint.width()), hint.height())

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("sidePanel")
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search all chats  (Ctrl+K)")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search all chats")
        self.new_button = QPushButton("New chat")
        self.new_button.setObjectName("primary")
        self.import_button = QPushButton("Import…")
        self.import_button.setToolTip("Import a transcript: interchange JSONL, OpenAI chat JSON or a Claude Code session")
        self.list = QListWidget()
        self.list.setObjectName("chatList")
        self.list.setAccessibleName("Chats")
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.setWordWrap(True)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setAcceptDrops(True)
        self.import_button.setToolTip(self.import_button.toolTip() + " (or drop the file on the chat list)")
        buttons = QHBoxLayout()
        buttons.addWidget(self.new_button, 1)
        buttons.addWidget(self.import_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 12, 10, 10)
        layout.setSpacing(8)
        layout.addLayout(buttons)
        layout.addWidget(self.search)
        layout.addWidget(self.list, 1)

        self.new_button.clicked.connect(self.new_requested)
        self.import_button.clicked.connect(self.import_requested)
        self._search_delay = QTimer(self)
        self._search_delay.setSingleShot(True)
        self._search_delay.setInterval(SEARCH_DELAY_MS)
        self._search_delay.timeout.connect(lambda: self.search_changed.emit(self.search.text().strip()))
        self.search.textChanged.connect(self._search_edited)
        self.search.installEventFilter(self)  # Esc, Down and Enter in the box
        self.list.currentItemChanged.connect(self._current_changed)
        self.list.itemClicked.connect(self._chosen)
        self.list.itemActivated.connect(self._chosen)
        self.list.customContextMenuRequested.connect(self._menu)
        # The menu's actions from the keyboard too, on the chat the list has current (F2 and Delete, as file lists).
        for key, act in ((QKeySequence(RENAME_KEY), self._rename), (QKeySequence(DELETE_KEY), self._delete)):
            shortcut = QShortcut(key, self.list, context=Qt.ShortcutContext.WidgetShortcut)
            shortcut.activated.connect(lambda act=act: self._on_current(act))
        self.chats: list[ChatInfo] = []
        self.current: str | None = None  # the open chat's id
        self._showing_hits = False
        self._open_first_when_shown = False  # Enter came before the hits (see eventFilter)

    def set_chats(self, chats: list[ChatInfo], current: str | None) -> None:
        """The chats, `current` (the open one) highlighted; while hits are shown, the list waits for the search to
        be cleared."""
        self.chats, self.current = chats, current
        if self._showing_hits:
            return
        self.list.blockSignals(True)
        self.list.clear()
        for chat in chats:
            # Non-breaking spaces: the narrow list wrapped "28 / Nov 16:46"; the line breaks before the date instead.
            when = time.strftime("%d %b %H:%M", time.localtime(chat.updated_at)).replace(" ", NO_BREAK)
            count = f"{chat.message_count}{NO_BREAK}message" + ("" if chat.message_count == 1 else "s")
            item = QListWidgetItem(f"{chat.title}\n{count} · {when}")
            item.setData(ChatIdRole, chat.id)
            item.setToolTip(chat.title)
            self.list.addItem(item)
            if chat.id == current:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)

    def show_hits(self, hits: list[SearchHit] | None) -> None:
        """Search results instead of the chats (None: back to the chats)."""
        self._showing_hits = hits is not None
        if hits is None:
            self.set_chats(self.chats, self.current)
            return
        self.list.blockSignals(True)
        self.list.clear()
        metrics, width = self.list.fontMetrics(), self.list.viewport().width() - 12
        for hit in hits:
            about = hit.role + (" · archived" if hit.archived_by else "")
            # The chat's name on a line of its own (a long one took three or four of the narrow list's), whole in
            # the tooltip; beside the role it had 40 pixels of the list's default width: locomo_1, _2 and _3 were
            # each "loco…".
            name = metrics.elidedText(hit.chat_title, Qt.TextElideMode.ElideRight, width)
            item = QListWidgetItem(f"{name}\n{about}: {_snippet_line(hit.snippet)}")
            item.setToolTip(hit.chat_title)
            item.setData(HitRole, hit)
            self.list.addItem(item)
        if not hits:
            self.list.addItem(QListWidgetItem("No matches"))
        self.list.blockSignals(False)
        if self._open_first_when_shown:
            self._open_first()

    def _search_edited(self, text: str) -> None:
        if text.strip():
            self._search_delay.start()
        else:  # cleared: back to the chats at once
            self._search_delay.stop()
            self.search_changed.emit("")

    def clear_search(self) -> None:
        self.search.clear()

    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        """Chat files dropped on the list are imported, as Import… does (on the message box they are attached)."""
        files = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if files:
            event.acceptProposedAction()
            self.files_dropped.emit(files)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802
        if watched is not self.search or event.type() != QEvent.Type.KeyPress:
            return super().eventFilter(watched, event)
        key = event.key()
        if key == Qt.Key.Key_Escape:
            self.clear_search()
        elif key == Qt.Key.Key_Down and self.list.count():
            self.list.setFocus()
            self.list.setCurrentRow(max(self.list.currentRow(), 0))
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if self._search_delay.isActive():  # typed but not searched yet: search now, open the first hit once shown
                self._search_delay.stop()
                self._open_first_when_shown = True
                self.search_changed.emit(self.search.text().strip())
            else:
                self._open_first()
        else:
            return super().eventFilter(watched, event)
        return True

    def _open_first(self) -> None:
        self._open_first_when_shown = False
        item = self.list.currentItem() or self.list.item(0)
        if not _opens_something(item):
            return
        if item is self.list.currentItem():
            self._current_changed(item, None)  # opened even when it was current already
        else:
            self.list.setCurrentItem(item)
        self.chosen.emit()

    def _chosen(self, item: QListWidgetItem) -> None:
        if _opens_something(item):
            self.chosen.emit()

    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def _current_changed(self, item: QListWidgetItem | None, _previous) -> None:
        if item is None:
            return
        hit = item.data(HitRole)
        if hit is not None:
            self.hit_selected.emit(hit)
        elif item.data(ChatIdRole):
            self.chat_selected.emit(item.data(ChatIdRole))

    def _menu(self, point) -> None:
        item = self.list.itemAt(point)
        if item is None or not item.data(ChatIdRole):
            return
        chat_id = item.data(ChatIdRole)
        title = item.toolTip()
        menu = QMenu(self)
        menu.addAction("Rename…", QKeySequence(RENAME_KEY), lambda: self._rename(chat_id, title))
        menu.addAction("Delete…", QKeySequence(DELETE_KEY), lambda: self._delete(chat_id, title))
        menu.exec(self.list.viewport().mapToGlobal(point))

    def _on_current(self, act) -> None:
        item = self.list.currentItem()
        if item is not None and item.data(ChatIdRole):
            act(item.data(ChatIdRole), item.toolTip())

    def _rename(self, chat_id: str, title: str) -> None:
        new, ok = QInputDialog.getText(self, "Rename chat", "Title:", text=title)
        if ok and new.strip():
            self.rename_requested.emit(chat_id, new.strip())

    def _delete(self, chat_id: str, title: str) -> None:
        answer = QMessageBox.question(self, "Delete chat", f"Delete “{title}”? You can undo this right after.")
        if answer == QMessageBox.StandardButton.Yes:
            self.delete_requested.emit(chat_id)
