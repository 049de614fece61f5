"""GUI test setup: a real store in the test's data folder and windows on it."""

from __future__ import annotations

import pytest
from precis.core.storage.store import open_store

from tests.timing import WAIT_MS


@pytest.fixture
def store(isolated_home):
    opened = open_store(isolated_home)
    yield opened
    opened.close()


@pytest.fixture
def make_window(qtbot, store):
    """make_window(provider=None, store=store) -> a shown MainWindow whose chat (if any) has finished opening."""
    from precis.gui.app import application
    from precis.gui.main_window import MainWindow

    application()
    windows = []

    def make(provider=None, on_store=None, load_model=False):
        window = MainWindow(on_store or store, provider=provider, load_model=load_model)
        qtbot.addWidget(window)
        window.resize(1400, 900)  # the tests' layouts were written at this size; the offscreen screen is 800x800
        window.show()
        windows.append(window)
        qtbot.waitUntil(lambda: not window.chat.store_calls.busy, timeout=WAIT_MS)  # the chat list, then its first chat
        if window.chat.session is not None:
            # Generous: opening may summarize a long import, slow on a busy machine (speed is benchmarks' job).
            qtbot.waitUntil(lambda: window.chat.snapshot is not None and not window.chat.chat_runner.busy,
                            timeout=180_000)
        return window

    yield make
    for window in windows:
        window.close()
        window.chat.finish_background_work()  # before the store closes under it


def open_settings(qtbot, window):
    """File → Settings as a user opens it: the dialog, once its values were read off the window's thread."""
    with qtbot.waitSignal(window.settings_opened, timeout=WAIT_MS) as opened:
        window.open_settings()
    return opened.args[0]
