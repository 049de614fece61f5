"""Settings → Local model, driven as a user would: the models found on this computer (a temporary home laid out like
LM Studio's, holding a copy of the real SmolLM2 GGUF) and an Ollama server's models are listed without the window
waiting for them; the one picked answers the next message; a file that is not a model, or does not load, is refused
naming it and the model in use stays."""

from __future__ import annotations

import struct
import threading
from pathlib import Path

import pytest
from precis.core.providers.local import MODEL_NAME
from precis.core.settings import PROVIDER_KEY
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox, QFileDialog

from tests.conftest import free_port
from tests.gui.conftest import open_settings
from tests.gui.test_window import idle
from tests.model_file import place_model
from tests.stand_in_ollama import MODEL, StandInOllama
from tests.timing import WAIT_MS

COPY_NAME = "smollm2-135m-instruct-q4_1"


@pytest.fixture
def models_home(tmp_path, monkeypatch):
    """HOME with an LM Studio models folder holding a copy of the real SmolLM2 GGUF; no Ollama server unless a test
    points OLLAMA_HOST at one."""
    home = tmp_path / "home"
    folder = home / ".lmstudio" / "models" / "HuggingFaceTB" / "SmolLM2-135M-Instruct-GGUF"
    folder.mkdir(parents=True)
    place_model(folder / f"{COPY_NAME}.gguf")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("LLAMA_CACHE", raising=False)
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{free_port()}")  # a port nobody listens on
    return home


@pytest.fixture
def stand_in_ollama():
    """A loopback stand-in for an Ollama server (none can be installed here) answering /api/tags as Ollama does;
    it holds its answer until the test sets `listing`."""
    server = StandInOllama(hold_listing=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.listing.set()
    server.shutdown()
    server.server_close()


def rows(picker) -> list[list[str]]:
    tree = picker.tree
    return [[tree.topLevelItem(row).text(column) for column in range(tree.columnCount())]
            for row in range(tree.topLevelItemCount())]


def click_row(qtbot, picker, name: str) -> None:
    [item] = picker.tree.findItems(name, Qt.MatchFlag.MatchExactly, 0)
    picker.tree.scrollToItem(item)
    qtbot.mouseClick(picker.tree.viewport(), Qt.MouseButton.LeftButton, pos=picker.tree.visualItemRect(item).center())


def window_on_a_chat(qtbot, make_window, store):
    chat_id = store.create_chat("planets", settings={"reserve_output": 16})
    window = make_window()
    window.open_chat(chat_id)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    return window


def open_settings_listed(qtbot, window):
    dialog = open_settings(qtbot, window)
    dialog.tabs.setCurrentWidget(dialog.local_page)
    with qtbot.waitSignal(dialog.model_picker.listed, timeout=WAIT_MS):
        pass
    return dialog


def ok(qtbot, dialog) -> None:
    qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)


@pytest.mark.slow
def test_the_page_shows_at_once_and_fills_in_with_the_gguf_files_and_ollama_models_found(
        qtbot, make_window, models_home, stand_in_ollama, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", stand_in_ollama.url)
    window = make_window()
    dialog = open_settings(qtbot, window)
    dialog.tabs.setCurrentWidget(dialog.local_page)
    picker = dialog.model_picker
    # The Ollama server has not answered yet: the dialog is up, with the built-in model, saying it is looking.
    assert dialog.isVisible() and [row[0] for row in rows(picker)] == [MODEL_NAME]
    assert "Looking for models" in picker.status.text()
    with qtbot.waitSignal(picker.listed, timeout=WAIT_MS):
        stand_in_ollama.listing.set()
    assert rows(picker) == [
        [MODEL_NAME, "98.4 MB", "8,192 tokens", "built in"],
        [COPY_NAME, "98.4 MB", "8,192 tokens", "LM Studio"],
        [MODEL, "98.4 MB", "", "Ollama"],
    ]
    assert picker.selected().name == MODEL_NAME  # the model in use
    assert "1 model of the Ollama server" in picker.status.text()

    # An Ollama model is reached through Ollama's OpenAI-compatible endpoint.
    click_row(qtbot, picker, MODEL)
    choice = dialog.provider_choice()
    assert (choice.kind, choice.base_url, choice.model) == ("openai", f"{stand_in_ollama.url}/v1", MODEL)
    assert dialog.validate()
    # A GGUF file is run by the local model.
    click_row(qtbot, picker, COPY_NAME)
    choice = dialog.provider_choice()
    copy = models_home / ".lmstudio/models/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF" / f"{COPY_NAME}.gguf"
    assert (choice.kind, choice.base_url, choice.model, Path(choice.model_path)) == ("local", "", "", copy)
    click_row(qtbot, picker, MODEL_NAME)
    assert dialog.provider_choice().model_path == ""


@pytest.mark.slow
def test_without_an_ollama_server_no_ollama_models_are_shown(qtbot, make_window, models_home):
    window = make_window()
    picker = open_settings_listed(qtbot, window).model_picker
    assert [row[3] for row in rows(picker)] == ["built in", "LM Studio"]
    assert "Ollama" not in picker.status.text() and "Found 1 GGUF file" in picker.status.text()


@pytest.mark.slow
def test_a_file_that_is_not_a_model_is_refused_in_the_dialog_naming_it(qtbot, make_window, models_home, tmp_path):
    junk = tmp_path / "x.gguf"
    junk.write_bytes(b"this is not a model" * 100)
    window = make_window()
    dialog = open_settings_listed(qtbot, window)
    picker = dialog.model_picker
    qtbot.mouseClick(picker.choose_button, Qt.MouseButton.LeftButton)
    files = picker.findChild(QFileDialog)
    assert files is not None and files.isVisible()
    files.selectFile(str(junk))
    with qtbot.waitSignal(picker.checked, timeout=WAIT_MS):
        files.accept()
    assert picker.error.isVisible() and f"{junk} is not a GGUF model file" in picker.error.text()
    assert picker.selected().name == MODEL_NAME and dialog.provider_choice().model_path == ""  # the pick stays


@pytest.mark.model
@pytest.mark.slow
def test_the_gguf_picked_answers_and_files_that_are_no_model_or_do_not_load_leave_it_in_use(
        qtbot, make_window, store, models_home, tmp_path):
    copy = models_home / ".lmstudio/models/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF" / f"{COPY_NAME}.gguf"
    whole = copy.read_bytes()
    # A download cut short: listed with its size, not to be chosen, its tooltip saying why.
    cut = models_home / ".cache" / "llama.cpp" / "cut.gguf"
    cut.parent.mkdir(parents=True)
    cut.write_bytes(whole[:3_000_000])
    # A whole file whose header names an architecture llama.cpp does not know: it reads as a model but cannot load.
    named = b"general.architecture" + struct.pack("<IQ", 8, 5)
    assert whole.count(named + b"llama") == 1
    (models_home / ".cache" / "llama.cpp" / "strange.gguf").write_bytes(whole.replace(named + b"llama", named + b"nomdl"))
    window = window_on_a_chat(qtbot, make_window, store)

    dialog = open_settings_listed(qtbot, window)
    click_row(qtbot, dialog.model_picker, COPY_NAME)
    ok(qtbot, dialog)
    qtbot.waitUntil(lambda: getattr(window.chat.model.provider, "path", None) == copy and window.chat.model.state == "ready"
                    and idle(window), timeout=120_000)
    assert window.status.model.text() == f"local · {COPY_NAME} · ready"
    with qtbot.waitSignal(window.reply_finished, timeout=300_000) as reply:
        window.submit("Name one planet of the solar system.")
    assert reply.args[0].problem is None and reply.args[0].message.content.strip()
    # The reply came from the model process running the copy.
    pid = window.chat.model.provider.process.pid
    assert str(copy).encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert store.get_setting(PROVIDER_KEY)["model_path"] == str(copy)

    # A junk x.gguf chosen with Choose file…: refused in the dialog, naming it.
    junk = tmp_path / "x.gguf"
    junk.write_bytes(b"\0" * 4096)
    dialog = open_settings_listed(qtbot, window)
    picker = dialog.model_picker
    assert picker.selected().path == copy
    picker.open_file_dialog().selectFile(str(junk))
    with qtbot.waitSignal(picker.checked, timeout=WAIT_MS):
        picker.findChild(QFileDialog).accept()
    assert f"{junk} is not a GGUF model file" in picker.error.text()
    ok(qtbot, dialog)
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert window.chat.model.provider.path == copy

    # A file that reads as a model but does not load: the error names it, and the copy stays in use and saved.
    dialog = open_settings_listed(qtbot, window)
    assert [row for row in rows(dialog.model_picker) if row[0] == "cut"] == [["cut", "3.0 MB", "", "llama.cpp"]]
    cut_item = dialog.model_picker.tree.findItems("cut", Qt.MatchFlag.MatchExactly)[0]
    assert not cut_item.flags() & Qt.ItemFlag.ItemIsEnabled and "is cut short" in cut_item.toolTip(0)
    strange = models_home / ".cache" / "llama.cpp" / "strange.gguf"
    click_row(qtbot, dialog.model_picker, "strange")
    with qtbot.waitSignal(window.job_failed, timeout=120_000) as failed:
        ok(qtbot, dialog)
    assert str(strange) in failed.args[0] and f"Still using local · {COPY_NAME}" in failed.args[0]
    qtbot.waitUntil(lambda: idle(window), timeout=WAIT_MS)
    assert window.chat.model.provider.path == copy and store.get_setting(PROVIDER_KEY)["model_path"] == str(copy)
    assert window.status.model.text() == f"local · {COPY_NAME} · ready"
    with qtbot.waitSignal(window.reply_finished, timeout=300_000) as reply:
        window.submit("Name another planet.")
    assert reply.args[0].problem is None and reply.args[0].message.content.strip()
    assert window.chat.model.provider.process.pid == pid  # the same model process, never stopped


@pytest.mark.model
@pytest.mark.slow
def test_an_ollama_model_picked_answers_through_ollamas_openai_endpoint(qtbot, make_window, store, models_home,
                                                                        ollama, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", ollama.url)
    window = window_on_a_chat(qtbot, make_window, store)
    dialog = open_settings_listed(qtbot, window)
    click_row(qtbot, dialog.model_picker, MODEL)
    ok(qtbot, dialog)
    qtbot.waitUntil(lambda: window.chat.model.provider.name == "openai" and idle(window), timeout=WAIT_MS)
    assert window.status.model.text() == f"openai · {MODEL} · configured"
    with qtbot.waitSignal(window.reply_finished, timeout=300_000) as reply:
        window.submit("Name one planet of the solar system.")
    assert reply.args[0].problem is None and reply.args[0].message.content.strip()
    assert "/v1/chat/completions" in ollama.forwarded
    # The next time the dialog opens, the Ollama model is the one shown as in use.
    dialog = open_settings_listed(qtbot, window)
    assert dialog.model_picker.selected().name == MODEL
