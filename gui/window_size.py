"""The window's size: the one it was last closed at, fitted to the screen's available area (the default 1400x900 put
the status bar below the edge of a 1366x768 laptop's screen)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from pydantic import ValidationError
from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtWidgets import QMainWindow

from ..core.settings import WINDOW_KEY, WindowSize
from ..core.storage.store import Store

log = logging.getLogger("precis.gui")

# Room for the title bar and borders the window manager adds around the window.
FRAME_ALLOWANCE = QSize(16, 48)


def available_area(window: QMainWindow) -> QRect:
    """The part of the window's screen not taken by panels and docks."""
    return window.screen().availableGeometry()


def fitted(wanted: QSize, minimum: QSize, available: QRect) -> QRect:
    """`wanted`, made no larger than the available area (but not below the window's minimum), and centred in it."""
    room = available.size() - FRAME_ALLOWANCE
    size = wanted.boundedTo(room).expandedTo(minimum)
    rect = QRect(available.topLeft(), size)
    rect.moveCenter(available.center())
    # A window larger than the area keeps its top left corner (and title bar) on the screen.
    rect.moveTo(max(rect.left(), available.left()), max(rect.top(), available.top()))
    return rect


def restore_size(window: QMainWindow, store: Store) -> None:
    try:
        saved = WindowSize.model_validate(store.get_setting(WINDOW_KEY, {}) or {})
    except ValidationError as error:  # only a size: the window opens at the default one
        log.warning("the saved window size is not valid, the default is used: %s", error)
        saved = WindowSize()
    window.setGeometry(fitted(QSize(saved.width, saved.height), window.minimumSizeHint(), available_area(window)))
    if saved.maximized:
        window.setWindowState(window.windowState() | Qt.WindowState.WindowMaximized)


def remember_size(window: QMainWindow, save_setting: Callable[[str, object], object]) -> None:
    """Saved as the window closes: its size when not maximized, and whether it was."""
    normal = window.normalGeometry() if window.isMaximized() else window.geometry()
    save_setting(WINDOW_KEY, WindowSize(width=normal.width(), height=normal.height(),
                                        maximized=window.isMaximized()).model_dump())
