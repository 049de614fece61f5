"""QApplication setup and the window's entry point."""

from __future__ import annotations

import functools
import gc
import os
import sys

from PySide6.QtCore import qInstallMessageHandler
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication

from . import focus_ring, theme

# How long the window's thread waits for the interpreter lock while a worker computes (a summary, a chat opening)
# before the worker is made to hand it over; Python's default is 5 ms. Handling one event can take the lock several
# times (each Qt call made from Python gives it up), so at 5 ms the window stalled 50-130 ms at a time.
LOCK_SWITCH_SECONDS = 0.001


def application() -> QApplication:
    """The one QApplication, styled; created on first use."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv[:1])
        app.setApplicationName("Precis")
        app.setOrganizationName("Precis")
    _keep_the_window_thread_waiting_less()
    font = QFont(app.font())
    font.setPointSizeF(max(font.pointSizeF(), 10.0))
    app.setFont(font)
    theme.install(app)
    focus_ring.follow_focus(app)
    return app


@functools.cache
def _keep_the_window_thread_waiting_less() -> None:
    sys.setswitchinterval(LOCK_SWITCH_SECONDS)
    # What exists by now (modules, classes, Qt's wrappers) lives as long as the app: out of the cyclic garbage
    # collector's full passes, which walked it all (about 150 ms, holding the interpreter lock, so the window waited)
    # whenever a worker had made enough new objects.
    gc.freeze()


# What Qt's offscreen platform says whenever a window is shown or resized: nothing the person asked for is wrong.
_OFFSCREEN_NOISE = "This plugin does not support propagateSizeHints()"


def offscreen() -> None:
    """Render without a display (`precis screenshot`): `precis screenshot` printed _OFFSCREEN_NOISE twice with
    every picture; Qt's other messages still go to standard error."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    def quieter(_kind, _context, message: str) -> None:
        if message != _OFFSCREEN_NOISE:
            print(message, file=sys.stderr)

    qInstallMessageHandler(quieter)
