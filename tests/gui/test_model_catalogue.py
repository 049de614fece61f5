"""Settings → Local model's catalogue, driven as a user would, against a loopback stand-in for the hub
(tests/stand_in_hub.py) serving the embedded GGUF under a catalogue name: the catalogue is shown with its figures and
nothing is fetched; Download shows progress, Pause keeps what came, Resume finishes, and the model joins the list,
ready to pick; offline, the catalogue says downloads are unavailable and the rest of the page works."""

from __future__ import annotations

import pytest
from precis.core.models.catalogue import find_entry, read_catalogue
from precis.core.providers.discovery import DOWNLOADED
from precis.core.providers.local import find_model_path
from precis.gui.model_catalogue import LICENCE_COLUMN
from precis.gui.settings_dialog import DIALOG_SIZE
from PySide6.QtCore import Qt

from tests.conftest import free_port
from tests.gui.test_model_picker import click_row, open_settings_listed, rows
from tests.model_file import place_model
from tests.stand_in_hub import StandInHub
from tests.timing import WAIT_MS

NAME = "smollm2-360m"
ENTRY = find_entry(NAME)


@pytest.fixture
def hub(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no other GGUF files listed
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{free_port()}")  # a port nobody listens on
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with StandInHub() as server:
        server.serve(ENTRY.repo, ENTRY.file, find_model_path())
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


def catalogue_rows(catalogue) -> list[list[str]]:
    tree = catalogue.tree
    return [[tree.topLevelItem(row).text(column) for column in range(6)] for row in range(tree.topLevelItemCount())]


def state(catalogue, name: str) -> str:
    return catalogue._items[name].text(6)


def test_the_catalogue_shows_each_models_figures_and_fetches_nothing(qtbot, make_window, hub):
    dialog = open_settings_listed(qtbot, make_window())
    catalogue = dialog.model_picker.catalogue
    entries = read_catalogue()
    shown = catalogue_rows(catalogue)
    assert [row[0] for row in shown] == [e.title for e in entries]
    assert shown[0] == ["SmolLM2 360M Instruct", "386.0 MB", "unverified", "8,192 tokens", "Apache-2.0",
                        "not measured"]
    assert all(row[5] == "not measured" for row in shown)  # no answer rate measured yet
    assert all(button.text() == "Download" and button.isEnabled() for button in catalogue.buttons.values())
    assert hub.requests == []  # showing the catalogue asks the hub nothing


def test_download_pause_resume_then_pick_the_model(qtbot, make_window, hub, monkeypatch, isolated_home):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DOWNLOAD_TIMEOUT", 1)
    size = find_model_path().stat().st_size
    hub.faults.stall_at = size // 2
    dialog = open_settings_listed(qtbot, make_window())
    picker = dialog.model_picker
    catalogue = picker.catalogue
    button = catalogue.buttons[NAME]

    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert button.text() == "Pause"
    qtbot.waitUntil(lambda: "of 98.4 MB" in state(catalogue, NAME) and "s left" in state(catalogue, NAME),
                    timeout=WAIT_MS)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)  # before or after the hub stalls, at half the file
    assert button.text() == "Pausing…" and not button.isEnabled()
    hub.faults.release.set()  # the next bytes that come are refused: the pause takes
    qtbot.waitUntil(lambda: button.text() == "Resume", timeout=WAIT_MS)
    assert state(catalogue, NAME).startswith("paused at")
    [partial] = ENTRY.partials(isolated_home / "models")
    assert not (isolated_home / "models" / ENTRY.file).exists()
    assert ENTRY.file.removesuffix(".gguf") not in [row[0] for row in rows(picker)]  # a partial is not offered

    kept = partial.stat().st_size
    with qtbot.waitSignal(catalogue.downloaded, timeout=WAIT_MS) as done:
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    path = isolated_home / "models" / ENTRY.file
    assert done.args == [path] and path.stat().st_size == size
    assert hub.requests[-1][2] == f"bytes={kept}-"  # resumed, not started again
    assert state(catalogue, NAME) == "downloaded" and button.text() == "Downloaded" and not button.isEnabled()

    # Listed with the rest, and picked like any GGUF file.
    assert rows(picker)[1] == [path.stem, "98.4 MB", "8,192 tokens", DOWNLOADED]
    click_row(qtbot, picker, path.stem)
    assert dialog.provider_choice().model_path == str(path)


def test_a_model_already_downloaded_shows_as_such(qtbot, make_window, hub, isolated_home):
    folder = isolated_home / "models"
    folder.mkdir()
    place_model(folder / ENTRY.file)
    dialog = open_settings_listed(qtbot, make_window())
    catalogue = dialog.model_picker.catalogue
    qtbot.waitUntil(lambda: state(catalogue, NAME) == "downloaded", timeout=WAIT_MS)
    assert not catalogue.buttons[NAME].isEnabled()
    assert [row[3] for row in rows(dialog.model_picker)] == ["built in", DOWNLOADED]
    assert hub.requests == []


def test_offline_the_catalogue_says_downloads_are_unavailable_and_the_rest_works(qtbot, make_window, hub,
                                                                                   monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    dialog = open_settings_listed(qtbot, make_window())  # the list of models on this computer still fills in
    catalogue = dialog.model_picker.catalogue
    assert "Downloads are unavailable" in catalogue.status.text() and "HF_HUB_OFFLINE" in catalogue.status.text()
    assert not any(button.isEnabled() for button in catalogue.buttons.values())
    assert len(catalogue_rows(catalogue)) == len(read_catalogue())


def test_a_hub_that_cannot_be_reached_is_said_and_the_button_comes_back(qtbot, make_window, hub, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    dialog = open_settings_listed(qtbot, make_window())
    catalogue = dialog.model_picker.catalogue
    qtbot.mouseClick(catalogue.buttons[NAME], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: catalogue.buttons[NAME].text() == "Download", timeout=WAIT_MS)
    assert "cannot be reached" in catalogue.status.text() and "Everything else works" in catalogue.status.text()
    assert state(catalogue, NAME) == "not downloaded"


def test_at_its_size_on_a_1000x700_screen_every_model_licence_and_button_shows_without_scrolling(qtbot, make_window,
                                                                                                  hub):
    """The dialog at 660 px hid the Licence, Answers, Status and Download columns off to the side, and the last three
    models below; the longest licence ("… (non-commercial)") had taken a third of the width on one line."""
    window = make_window()
    window.resize(1000, 700)
    dialog = open_settings_listed(qtbot, window)
    assert dialog.frameGeometry().width() <= dialog.screen().availableGeometry().width()  # opened on the screen
    dialog.resize(*DIALOG_SIZE)  # what it opens at on a 1000x700 screen (the tests' offscreen screen is 800x800)
    tree = dialog.model_picker.catalogue.tree
    qtbot.waitUntil(lambda: tree.viewport().width() > DIALOG_SIZE[0] - 100, timeout=WAIT_MS)
    assert tree.horizontalScrollBar().maximum() == 0 and tree.verticalScrollBar().maximum() == 0
    view = tree.viewport().rect()
    for name, button in dialog.model_picker.catalogue.buttons.items():
        place = button.rect().translated(button.mapTo(tree.viewport(), button.rect().topLeft()))
        assert view.contains(place), f"{name}'s Download button is out of view"
    # A licence too long for its column wraps onto a second line: all of it is read, none of it cut.
    metrics = tree.fontMetrics()
    for row in range(tree.topLevelItemCount()):
        item = tree.topLevelItem(row)
        cell = tree.visualItemRect(item)
        width = tree.columnWidth(LICENCE_COLUMN) - 12
        wrapped = metrics.boundingRect(0, 0, width, 0, Qt.TextFlag.TextWordWrap, item.text(LICENCE_COLUMN))
        assert wrapped.height() <= cell.height(), f"{item.text(LICENCE_COLUMN)!r} is cut"
