"""The window opens at a size that fits the screen's available area, and at the size it was last closed at
(issue 22, item 10: the default 1400x900 put the status bar below the edge of a 1366x768 screen)."""

from __future__ import annotations

import pytest
from precis.core.settings import WINDOW_KEY
from precis.gui import window_size
from precis.gui.window_size import fitted
from PySide6.QtCore import QRect, QSize

LAPTOP = QRect(0, 0, 1366, 728)  # a 1366x768 screen less a 40-pixel panel


def test_the_default_size_fits_a_laptop_screen_and_a_large_one_keeps_it_centred():
    minimum = QSize(948, 580)
    on_laptop = fitted(QSize(1400, 900), minimum, LAPTOP)
    assert LAPTOP.contains(on_laptop) and on_laptop.height() <= 728 - window_size.FRAME_ALLOWANCE.height()
    on_desktop = fitted(QSize(1400, 900), minimum, QRect(0, 0, 2560, 1400))
    assert on_desktop == QRect(580, 250, 1400, 900)
    # A screen smaller than the window's minimum: the minimum, its title bar on the screen.
    tiny = fitted(QSize(1400, 900), minimum, QRect(100, 30, 800, 560))
    assert tiny.size() == minimum and tiny.topLeft().y() == 30 and tiny.left() >= 100


@pytest.fixture
def screen(monkeypatch):
    """The available area the window is told its screen has (the offscreen platform has one 800x800 screen)."""
    area = {"now": LAPTOP}
    monkeypatch.setattr(window_size, "available_area", lambda _window: area["now"])
    return area


def test_the_window_opens_within_the_screen_then_at_its_last_size(qtbot, store, screen):
    from precis.gui.app import application
    from precis.gui.main_window import MainWindow

    application()

    def open_window():
        window = MainWindow(store, load_model=False)  # not make_window: that one sets the tests' own size
        qtbot.addWidget(window)
        window.show()
        return window

    def close(window):
        window.close()
        assert window.chat.finish_background_work()

    first = open_window()
    assert LAPTOP.contains(first.geometry()), first.geometry()
    first.resize(1100, 640)
    close(first)
    assert store.get_setting(WINDOW_KEY) == {"width": 1100, "height": 640, "maximized": False}
    second = open_window()
    assert second.size() == QSize(1100, 640)
    close(second)

    screen["now"] = QRect(0, 0, 1024, 700)  # the next time, on a smaller screen: fitted to it
    third = open_window()
    assert third.width() <= 1024 and third.height() <= 700
    close(third)
