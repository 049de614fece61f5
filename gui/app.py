"""QApplication setup and the window's entry point."""

from __future__ import annotations

import os
import sys

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication

from . import theme


def application() -> QApplication:
    """The one QApplication, styled; created on first use."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv[:1])
        app.setApplicationName("Precis")
        app.setOrganizationName("Precis")
    font = QFont(app.font())
    font.setPointSizeF(max(font.pointSizeF(), 10.0))
    app.setFont(font)
    theme.install(app)
    return app


def offscreen() -> None:
    """Render without a display (tests, screenshots)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
