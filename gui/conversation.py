"""The chat flow: a virtualized list (model + painting delegate) that stays smooth with 10,000 messages.

Each message offers its actions (copy, edit, regenerate, continue, pin, summarize up to here) as chips in its header while the
mouse is over it, and the same actions in its context menu (right click, the Menu key or Shift+F10)."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence
from PySide6.QtWidgets import QAbstractItemView, QListView, QMenu

from ..core.chat.reading_place import ReadingPlace
from ..core.chat.rows import Row
from .conversation_model import ConversationModel
from .message_delegate import READING_WIDTH, MessageDelegate
from .search_highlight import search_pattern

__all__ = ["READING_WIDTH", "ConversationView"]

# The context menu's words for the hover actions (the chips are shorter).
MENU_LABELS = {"copy": "Copy message", "edit": "Edit and resend", "regenerate": "Regenerate reply",
               "continue": "Continue the reply", "sent": "What was sent…", "pin": "Pin (never summarize)",
               "unpin": "Unpin", "summarize": "Summarize up to here"}


class ConversationView(QListView):
    """The chat flow. Signals carry the row's key (message id or 'summary:<record id>')."""

    pin_requested = Signal(str, bool)
    edit_requested = Signal(str)
    regenerate_requested = Signal(str)
    continue_requested = Signal(str)
    summarize_up_to_requested = Signal(str)
    sent_requested = Signal(str)  # a reply's id: show what it was written from
    version_requested = Signal(str, int)  # (message id, version position): show another version of a reply
    summary_selected = Signal(str)
    status = Signal(str)
    clear_search_requested = Signal()  # Esc while a search is highlighted

    def __init__(self, parent=None, editable: bool = True) -> None:
        super().__init__(parent)
        self.setObjectName("conversation")
        self.setAccessibleName("Conversation")
        self.rows_model = ConversationModel(self)
        self.setModel(self.rows_model)
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
        self.setMouseTracking(True)  # the hovered message shows its actions
        # False for a read-only flow (the inspector's archive): its messages can only be copied.
        self.editable = editable
        # While `following`, the view stays at the end as rows are laid out (in batches) or grow (a streamed reply).
        self.following = False
        # Else the reader's place it holds (where they scrolled to, or one restored): as rows are laid out, grow or
        # are rebuilt, the same row stays at the top (a pixel offset would drift as the rows above change height).
        self.held: ReadingPlace | None = None
        self.verticalScrollBar().rangeChanged.connect(self._follow)
        self.verticalScrollBar().actionTriggered.connect(self._user_scrolled)
        self.rows_model.row_streamed.connect(self._repaint_row)
        self.delegate.toggled.connect(self._toggle)
        self.delegate.copied.connect(self.status)
        self.delegate.action_triggered.connect(self.trigger)
        # Row numbers change with the rows: the chips come back when the mouse next moves.
        for changed in (self.rows_model.modelReset, self.rows_model.rowsRemoved):
            changed.connect(lambda *_args: self._set_hovered(None))
        self.rows_model.modelReset.connect(self.delegate.forget_rows_gone)
        self.delegate.version_chosen.connect(
            lambda number, position: self.version_requested.emit(self.rows_model.row_at(number).key, position))
        self.clicked.connect(self._clicked)

    def set_highlight(self, text: str) -> None:
        """Highlight the words of a search (each word's prefix, as the search matches); "" clears it."""
        pattern = search_pattern(text)
        if pattern != self.delegate.highlight:
            self.delegate.highlight = pattern
            self.viewport().update()

    def reveal(self, key: str) -> bool:
        """Scroll a row (message id or 'summary:<record id>') to the middle of the view and select it."""
        number = self.rows_model.row_of(key)
        if number is None:
            return False
        index = self.rows_model.index(number)
        self.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)
        self.setCurrentIndex(index)
        return True

    def keyPressEvent(self, event) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Escape and self.delegate.highlight is not None:
            self.clear_search_requested.emit()
            return
        shift_f10 = event.key() == Qt.Key.Key_F10 and event.modifiers() == Qt.KeyboardModifier.ShiftModifier
        if event.key() == Qt.Key.Key_Menu or shift_f10:  # accepted here, so Qt sends no context menu event as well
            self._menu_at_current()
            return
        expand = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space)
        if expand and self.currentIndex().isValid() and self._expand(self.currentIndex().row()):
            return
        if event.matches(QKeySequence.StandardKey.Copy) and self.currentIndex().isValid():
            if "copy" in self.row_actions(self.currentIndex().row()):
                self.trigger("copy", self.currentIndex().row())
            return
        super().keyPressEvent(event)

    def focusInEvent(self, event) -> None:  # noqa: N802
        """Reached by Tab with no row current, the row read (the reading place's, else the last) becomes current and
        selected, so the focus shows where it is: else nothing showed it until an arrow key was pressed."""
        had_current = self.currentIndex().isValid()
        super().focusInEvent(event)
        tabbed = event.reason() in (Qt.FocusReason.TabFocusReason, Qt.FocusReason.BacktabFocusReason)
        if had_current or not tabbed or not self.rows_model.rowCount():
            return
        place = self.reading_place()
        number = self.rows_model.row_of(place.key) if place is not None else None
        # Already in view: made current without scrolling, which would stop the view following the end.
        scrolls = self.hasAutoScroll()
        self.setAutoScroll(False)
        self.setCurrentIndex(self.rows_model.index(self.rows_model.rowCount() - 1 if number is None else number))
        self.setAutoScroll(scrolls)

    def _repaint_row(self, number: int) -> None:
        self.viewport().update(self.visualRect(self.rows_model.index(number)))

    def _toggle(self, number: int) -> None:
        self.rows_model.toggle_expanded(number)

    def _expand(self, number: int) -> bool:
        """Enter or Space on a row: a summary shown whole (and in the inspector, as a click shows it) or a tool line
        opened, or folded again; False where there is nothing more to show. Without it only the mouse could."""
        row = self.rows_model.row_at(number)
        if not self.delegate.expandable(row):
            return False
        self._toggle(number)
        self.scrollTo(self.rows_model.index(number))
        if row.record is not None:
            self.summary_selected.emit(row.record.id)
        return True

    def _clicked(self, index: QModelIndex) -> None:
        row = self.rows_model.row_at(index.row())
        if row.record is not None:
            self.summary_selected.emit(row.record.id)

    def selected_row(self) -> Row | None:
        indexes = self.selectionModel().selectedIndexes() if self.selectionModel() else []
        return self.rows_model.row_at(indexes[0].row()) if indexes else None

    def is_at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 40

    def scroll_to_end(self) -> None:
        self.following, self.held = True, None
        self.scrollToBottom()

    def reading_place(self) -> ReadingPlace | None:
        """Where the reader is: the place held (not scrolled from since); None at the end; else the top row's."""
        if self.held is not None:
            return self.held
        if self.following or self.is_at_bottom():
            return None
        for y in range(0, self.viewport().height(), 4):  # the first row under the top edge (not the gap between)
            index = self.indexAt(QPoint(self.viewport().width() // 2, y))
            if index.isValid():
                rect = self.visualRect(index)
                into = min(1.0, max(0.0, -rect.top() / rect.height())) if rect.height() else 0.0
                return ReadingPlace(key=self.rows_model.row_at(index.row()).key, into=into)
        return None

    def hold(self, place: ReadingPlace | None) -> None:
        """Show the reader's place and keep it as the rows change until they scroll; None: the end, following it."""
        if place is None:
            self.scroll_to_end()
            return
        self.following, self.held = False, place
        self._go_to(place)

    def _go_to(self, place: ReadingPlace) -> None:
        number = self.rows_model.row_of(place.key)
        if number is None:  # its row comes with the whole chat (place_to_hold): the end meanwhile
            self.scrollToBottom()
            return
        rect = self.visualRect(self.rows_model.index(number))
        if rect.isValid():  # else not laid out yet: placed as the next batch changes the range
            bar = self.verticalScrollBar()
            bar.setValue(bar.value() + rect.top() + round(place.into * rect.height()))

    def _follow(self, _minimum: int, maximum: int) -> None:
        if self.following:
            self.verticalScrollBar().setValue(maximum)
        elif self.held is not None:
            self._go_to(self.held)

    def _user_scrolled(self, _action: int) -> None:
        self.held = None
        QTimer.singleShot(0, self._hold_where_scrolled)  # once the scroll bar has moved

    def wheelEvent(self, event) -> None:  # noqa: N802
        super().wheelEvent(event)
        self.held = None
        self._hold_where_scrolled()

    def _hold_where_scrolled(self) -> None:
        """After the user scrolled: at the bottom, follow the end; else hold the row now at the top."""
        self.following = self.is_at_bottom()
        self.held = self.reading_place()

    def scrollTo(self, index, hint=QAbstractItemView.ScrollHint.EnsureVisible) -> None:  # noqa: N802
        self.following, self.held = False, None
        super().scrollTo(index, hint)

    # ---- actions on a message: hover chips, the context menu (mouse or keyboard), Ctrl+C ------------------------
    def row_actions(self, number: int) -> list[str]:
        """The actions a message row offers, in the order shown (see message_delegate.ACTION_LABELS)."""
        row = self.rows_model.row_at(number)
        message = row.message
        if message is None or row.streaming or row.kind in ("tool_call", "tool_result"):
            return []
        if not self.editable:
            return ["copy"]
        actions = ["copy"]
        if message.role in ("user", "assistant"):
            last = self._last_of(message.role)
            if last is not None and last.message.id == message.id:
                actions.append("edit" if message.role == "user" else "regenerate")
                if message.role == "assistant" and number == self.rows_model.rowCount() - 1 and (
                        message.cut_at is not None or message.incomplete):
                    actions.append("continue")  # a reply that did not end by itself
        if message.role == "assistant":
            actions.append("sent")
        actions.append("unpin" if message.pinned else "pin")
        if message.role != "system":
            actions.append("summarize")
        return actions

    def trigger(self, action: str, number: int) -> None:
        message = self.rows_model.row_at(number).message
        if action == "copy":
            QGuiApplication.clipboard().setText(message.content)
            self.status.emit("Message copied.")
        elif action == "edit":
            self.edit_requested.emit(message.id)
        elif action == "regenerate":
            self.regenerate_requested.emit(message.id)
        elif action == "continue":
            self.continue_requested.emit(message.id)
        elif action in ("pin", "unpin"):
            self.pin_requested.emit(message.id, action == "pin")
        elif action == "summarize":
            self.summarize_up_to_requested.emit(message.id)
        elif action == "sent":
            self.sent_requested.emit(message.id)

    def _set_hovered(self, number: int | None) -> None:
        previous, self.delegate.hovered = self.delegate.hovered, number
        if previous != number:
            for changed in (previous, number):
                if changed is not None:
                    self._repaint_row(changed)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        super().mouseMoveEvent(event)
        index = self.indexAt(event.position().toPoint())
        self._set_hovered(index.row() if index.isValid() else None)

    def leaveEvent(self, event) -> None:  # noqa: N802
        super().leaveEvent(event)
        self._set_hovered(None)

    def contextMenuEvent(self, event) -> None:  # noqa: N802
        """The row's actions as a menu: at the mouse, or (Menu key, Shift+F10) at the current row."""
        if event.reason() == event.Reason.Keyboard:
            self._menu_at_current()
            return
        index = self.indexAt(event.pos())
        if index.isValid():
            self.actions_menu(index.row()).exec(self.viewport().mapToGlobal(event.pos()))

    def _menu_at_current(self) -> None:
        index = self.currentIndex()
        if index.isValid():
            rect = self.visualRect(index).intersected(self.viewport().rect())
            self.actions_menu(index.row()).exec(self.viewport().mapToGlobal(rect.center()))

    def actions_menu(self, number: int) -> QMenu:
        row = self.rows_model.row_at(number)
        menu = QMenu(self)
        for action in self.row_actions(number):
            menu.addAction(MENU_LABELS[action], lambda action=action: self.trigger(action, number))
        switchable = self.editable and not row.streaming and self.rows_model.can_switch(number)
        versions = self.rows_model.versions_of(row.key) if switchable else None
        if versions is not None:
            count = len(versions.texts)
            for text, position in (("Previous version", versions.shown - 1), ("Next version", versions.shown + 1)):
                if 0 <= position < count:
                    menu.addAction(f"{text} ({position + 1}/{count})",
                                   lambda position=position: self.version_requested.emit(row.key, position))
        if row.record is not None:
            menu.addAction("Show in the inspector", lambda: self.summary_selected.emit(row.record.id))
        return menu

    def _last_of(self, role: str) -> Row | None:
        for row in reversed(self.rows_model.rows()):
            if row.message is not None and row.message.role == role:
                return row
        return None
