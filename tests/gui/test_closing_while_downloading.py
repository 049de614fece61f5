"""Closing the window while Settings downloads a model from a hub that has stopped sending (tests/stand_in_hub.py,
stalled at half the file). It was: Settings stayed open without its window, so the app went on running (a SIGTERM
did not end it) and the download went on. Now Settings closes with the window and the download is paused: what came
is kept as its .part, to resume next time, and no model file is left that is not whole."""

from __future__ import annotations

from precis.core.providers.local import find_model_path
from PySide6.QtCore import Qt

from tests.gui.test_model_catalogue import ENTRY, NAME, hub, state  # noqa: F401 - hub is a fixture
from tests.gui.test_model_picker import open_settings_listed
from tests.timing import WAIT_MS


def test_closing_the_window_closes_settings_and_pauses_its_download(qtbot, make_window, hub,  # noqa: F811
                                                                    isolated_home):
    hub.faults.stall_at = find_model_path().stat().st_size // 2
    window = make_window()
    dialog = open_settings_listed(qtbot, window)
    catalogue = dialog.model_picker.catalogue
    qtbot.mouseClick(catalogue.buttons[NAME], Qt.MouseButton.LeftButton)
    # Bytes have come ("s left" needs a speed, and so bytes on disk; "of 98.4 MB" alone shows before the first byte,
    # when closing leaves nothing to keep) and the hub has stopped sending.
    qtbot.waitUntil(lambda: "s left" in state(catalogue, NAME) and hub.bytes_sent >= hub.faults.stall_at,
                    timeout=WAIT_MS)
    window.close()
    assert not dialog.isVisible()
    hub.faults.release.set()  # the hub sends again: the next bytes are refused, as a pause does
    qtbot.waitUntil(lambda: not catalogue.busy, timeout=WAIT_MS)
    assert state(catalogue, NAME).startswith("paused at")
    folder = isolated_home / "models"
    assert not (folder / ENTRY.file).exists()
    [partial] = ENTRY.partials(folder)
    assert 0 < partial.stat().st_size < find_model_path().stat().st_size
