"""The chat flow: a virtualized list (model + painting delegate) that stays smooth with 10,000 messages."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtWidgets import QAbstractItemView, QListView, QMenu

from .conversation_model import ConversationModel, Row, build_rows
from .message_delegate import READING_WIDTH, MessageDelegate, search_pattern

__all__ = ["READING_WIDTH", "ConversationView", "Row", "build_rows"]


class ConversationView(QListView):
    """The chat flow. Signals carry the row's key (message id or 'summary:<record id>')."""

    pin_requested = Signal(str, bool)
    copy_requested = Signal(str)
    edit_requested = Signal(str)
    regenerate_requested = Signal(str)
    summarize_up_to_requested = Signal(str)
    summary_selected = Signal(str)
    status = Signal(str)
    clear_search_requested = Signal()  # Esc while a search is highlighted

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("conversation")
        self.conversation = ConversationModel(self)
        self.setModel(self.conversation)
        self.delegate = MessageDelegate(self)
        self.setItemDelegate(self.delegate)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.verticalScrollBar().setSingleStep(24)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setLayoutMode(QListView.LayoutMode.Batched)
        self.setBatchSize(200)
        self.setUniformItemSizes(False)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setMouseTracking(False)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._context_menu)
        # While `following`, the view stays at the end as rows are laid out (in batches) or grow (a streamed reply).
        self.following = False
        self.verticalScrollBar().rangeChanged.connect(self._follow)
        self.verticalScrollBar().actionTriggered.connect(self._user_scrolled)
        self.conversation.row_streamed.connect(self._repaint_row)
        self.delegate.toggled.connect(self._toggle)
        self.delegate.copied.connect(self.status)
        self.clicked.connect(self._clicked)

    def set_highlight(self, text: str) -> None:
        """Highlight the words of a search (each word's prefix, as the search matches); "" clears it."""
        pattern = search_pattern(text)
        if pattern != self.delegate.highlight:
            self.delegate.highlight = pattern
            self.viewport().update()

    def reveal(self, key: str) -> bool:
        """Scroll a row (message id or 'summary:<record id>') to the middle of the view and select it."""
        number = self.conversation.row_of(key)
        if number is None:
            return False
        index = self.conversation.index(number)
        self.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)
        self.setCurrentIndex(index)
        return True

    def keyPressEvent(self, event) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Escape and self.delegate.highlight is not None:
            self.clear_search_requested.emit()
            return
        super().keyPressEvent(event)

    def _repaint_row(self, number: int) -> None:
        self.viewport().update(self.visualRect(self.conversation.index(number)))

    def _toggle(self, number: int) -> None:
        self.conversation.toggle_expanded(number)

    def _clicked(self, index: QModelIndex) -> None:
        row = self.conversation.row_at(index.row())
        if row.record is not None:
            self.summary_selected.emit(row.record.id)

    def selected_row(self) -> Row | None:
        indexes = self.selectionModel().selectedIndexes() if self.selectionModel() else []
        return self.conversation.row_at(indexes[0].row()) if indexes else None

    def is_at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 40

    def scroll_to_end(self) -> None:
        self.following = True
        self.scrollToBottom()

    def _follow(self, _minimum: int, maximum: int) -> None:
        if self.following:
            self.verticalScrollBar().setValue(maximum)

    def _user_scrolled(self, _action: int) -> None:
        QTimer.singleShot(0, lambda: setattr(self, "following", self.is_at_bottom()))

    def wheelEvent(self, event) -> None:  # noqa: N802
        super().wheelEvent(event)
        self.following = self.is_at_bottom()

    def scrollTo(self, index, hint=QAbstractItemView.ScrollHint.EnsureVisible) -> None:  # noqa: N802
        self.following = False
        super().scrollTo(index, hint)

    def _context_menu(self, point) -> None:
        index = self.indexAt(point)
        if not index.isValid():
            return
        row = self.conversation.row_at(index.row())
        menu = QMenu(self)
        if row.message is not None:
            message = row.message
            menu.addAction("Copy message", lambda: self.copy_requested.emit(message.id))
            menu.addAction("Unpin" if message.pinned else "Pin (never summarize)",
                           lambda: self.pin_requested.emit(message.id, not message.pinned))
            if message.role != "system":
                menu.addAction("Summarize up to here", lambda: self.summarize_up_to_requested.emit(message.id))
            last_user = self._last_of("user")
            last_assistant = self._last_of("assistant")
            if last_user is not None and last_user.message.id == message.id:
                menu.addAction("Edit and resend", lambda: self.edit_requested.emit(message.id))
            if last_assistant is not None and last_assistant.message.id == message.id:
                menu.addAction("Regenerate reply", lambda: self.regenerate_requested.emit(message.id))
        else:
            menu.addAction("Show in the inspector", lambda: self.summary_selected.emit(row.record.id))
        menu.exec(self.viewport().mapToGlobal(point))

    def _last_of(self, role: str) -> Row | None:
        for row in reversed(self.conversation.rows()):
            if row.message is not None and row.message.role == role:
                return row
        return None
