"""The inspector's building blocks: sections that fold away under their header, and text and lists as tall as what
they hold, so the panel has one scroll (a scroll area inside another took the wheel and showed a few lines)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from pydantic import ValidationError
from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QAbstractScrollArea, QListWidget, QSizePolicy, QTextEdit, QToolButton, QVBoxLayout, QWidget

from ..core.settings import INSPECTOR_KEY, InspectorFolds
from ..core.storage.store import Store
from .conversation import ConversationView
from .markdown import SafeDocument

log = logging.getLogger("precis.gui")


class Section(QWidget):
    """A titled part of the inspector: its header (a button: a click, Space or Enter) folds its body away."""

    folded = Signal(str, bool)  # (key, collapsed)

    def __init__(self, key: str, title: str, body: QWidget, parent=None) -> None:
        super().__init__(parent)
        self.key = key
        self.body = body
        self.header = QToolButton()
        self.header.setObjectName("sectionHeader")
        self.header.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.header.setAutoRaise(True)
        self.header.setCheckable(True)
        self.header.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.header.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        bold = QFont(self.header.font())
        bold.setBold(True)
        self.header.setFont(bold)
        self.header.keyPressEvent = self._header_key
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.header)
        layout.addWidget(body)
        self.header.setChecked(True)
        self.header.toggled.connect(self._show_body)
        self.set_title(title)
        self._show_body(True)

    def set_title(self, title: str) -> None:
        self.header.setText(title)

    @property
    def expanded(self) -> bool:
        return self.header.isChecked()

    def set_expanded(self, expanded: bool) -> None:
        self.header.setChecked(expanded)

    def _show_body(self, expanded: bool) -> None:
        self.body.setVisible(expanded)
        self.header.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        self.header.setToolTip(f"{'Hide' if expanded else 'Show'} {self.header.text().split(' · ')[0].lower()}")
        self.folded.emit(self.key, not expanded)

    def _header_key(self, event) -> None:
        """Enter folds it too (a button takes only Space)."""
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.header.toggle()
            return
        QToolButton.keyPressEvent(self.header, event)


def unscrolled(area: QAbstractScrollArea) -> None:
    """Never a scroll bar of its own: it is as tall as its content and the inspector's scroll moves it. The wheel
    passes on to that scroll (a scroll bar with nowhere to go ignores it)."""
    area.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    # Its width is the panel's: a long line wraps or is elided instead of widening the panel.
    area.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)


class FittedText(QTextEdit):
    """Read-only text as tall as its document at the width it has."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setDocument(SafeDocument(self))
        self.setReadOnly(True)
        unscrolled(self)
        # The text set: its height now (sizeHint lays it out whole), not when the lazy layout's timer gets to it.
        self.document().contentsChanged.connect(self.updateGeometry)
        self.document().documentLayout().documentSizeChanged.connect(lambda _size: self.updateGeometry())

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        margins = self.contentsMargins()
        height = self.document().size().height() + margins.top() + margins.bottom()
        return QSize(super().sizeHint().width(), int(height) + 1)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return self.sizeHint()


class FitsItsRows:
    """Mixed into a list view ahead of its Qt class: as tall as its rows, laid out at the width it has."""

    def updateGeometries(self) -> None:  # noqa: N802 (Qt's name): called once its rows are laid out
        super().updateGeometries()
        self.updateGeometry()

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(super().sizeHint().width(), self.contentsSize().height() + 2 * self.frameWidth())

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return self.sizeHint()


class FittedList(FitsItsRows, QListWidget):
    """A list as tall as its rows (laid out at the width it has)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        unscrolled(self)
        self.setResizeMode(QListWidget.ResizeMode.Adjust)


class FittedConversation(FitsItsRows, ConversationView):
    """The archived messages, read-only, as tall as their rows: the inspector's scroll reads through them."""

    revealed = Signal(object)  # the QRect of a row asked for, in the view's coordinates: for the scroll to show it

    def __init__(self, parent=None) -> None:
        super().__init__(parent, editable=False)
        self.setAccessibleName("Archived messages")
        unscrolled(self)

    def reveal(self, key: str) -> bool:
        """Select the row; the inspector's scroll brings it into view (this view never scrolls)."""
        number = self.rows_model.row_of(key)
        if number is None:
            return False
        index = self.rows_model.index(number)
        self.setCurrentIndex(index)
        self.revealed.emit(self.visualRect(index))
        return True


def remember_folds(inspector, store: Store, save_setting: Callable[[str, object], object]) -> None:
    """The inspector's sections as the user left them: folded ones stay folded, and each fold is saved as made."""
    try:
        folded = InspectorFolds.model_validate(store.get_setting(INSPECTOR_KEY, {}) or {}).folded
    except ValidationError as error:  # only a preference: every section opens
        log.warning("the saved inspector sections are not valid, all are shown: %s", error)
        folded = []
    inspector.fold_sections(folded)
    inspector.folds_changed.connect(
        lambda keys: save_setting(INSPECTOR_KEY, InspectorFolds(folded=keys).model_dump()))
