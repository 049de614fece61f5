"""The focus ring of read-only text views (a summary's text and originals in the inspector, what was sent, a preview):
one overlay, drawn over the edge of whichever of them has the focus. Not a style sheet `:focus` rule, as the editable
boxes have: that rule re-polished the inspector's views of a 100,000-message summary each time one was selected."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QApplication, QPlainTextEdit, QTextEdit, QWidget
from shiboken6 import isValid

from . import theme

RING_WIDTH = 2
RING_RADIUS = 6  # the text boxes' border-radius in the style sheet


def shows_ring(widget: QWidget | None) -> bool:
    """Whether `widget` is a read-only text view: the style sheet rings only the editable ones."""
    return isinstance(widget, (QTextEdit, QPlainTextEdit)) and widget.isReadOnly()


class FocusRing(QWidget):
    """A ring in the accent colour over a view's edge: a child of the view, as large as it, letting the mouse
    through. It paints only while a read-only view has the focus."""

    def __init__(self) -> None:
        super().__init__()
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.view: QWidget | None = None

    def around(self, view: QWidget | None) -> None:
        """Ring `view`, or nothing."""
        if self.view is not None and isValid(self.view):
            self.view.removeEventFilter(self)
        self.view = view
        self.hide()
        if view is None:
            return
        self.setParent(view)
        self.setGeometry(view.rect())
        view.installEventFilter(self)
        self.raise_()
        self.show()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name): the view's size, followed
        if watched is self.view and event.type() == QEvent.Type.Resize:
            self.setGeometry(self.view.rect())
        return False

    def paintEvent(self, _event) -> None:  # noqa: N802
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(QColor(theme.current.accent), RING_WIDTH))
        inset = RING_WIDTH / 2
        painter.drawRoundedRect(QRectF(self.rect()).adjusted(inset, inset, -inset, -inset), RING_RADIUS, RING_RADIUS)


class _Follower(QObject):
    """Moves the ring to the read-only text view that has the focus (a new ring if its view, and it, were deleted)."""

    def __init__(self, app: QApplication) -> None:
        super().__init__(app)
        self.ring = FocusRing()
        app.focusChanged.connect(self._focus_changed)

    def _focus_changed(self, _old: QWidget | None, now: QWidget | None) -> None:
        if not isValid(self.ring):  # deleted with the view it ringed (a closed window)
            self.ring = FocusRing()
        self.ring.around(now if shows_ring(now) else None)


_follower: _Follower | None = None


def follow_focus(app: QApplication) -> None:
    """Ring each read-only text view of `app` while it has the focus (once per application)."""
    global _follower
    if _follower is None or not isValid(_follower):
        _follower = _Follower(app)
