"""Settings → Provider, built from the provider schema, and its Test connection button: a real request off the GUI
thread whose answer (or failure, in plain words) shows under the button."""

from __future__ import annotations

import socket
import threading

import pytest
from precis.core.model.schema import setting_fields
from precis.core.settings import ProviderChoice
from PySide6.QtCore import Qt

from tests.conftest import free_port
from tests.gui.conftest import open_settings
from tests.providers.scripted_server import ScriptedServer, reply
from tests.timing import WAIT_MS


def provider_dialog(qtbot, make_window, base_url: str, model: str = "smollm2"):
    dialog = open_settings(qtbot, make_window())
    dialog.kind.setCurrentText("openai")
    dialog.base_url.setText(base_url)
    dialog.model.setText(model)
    return dialog


@pytest.mark.slow
def test_the_provider_page_is_the_provider_schema(qtbot, make_window):
    dialog = open_settings(qtbot, make_window())
    fields = setting_fields(ProviderChoice)
    assert set(dialog.provider_fields.editors) | set(dialog.local_fields.editors) == {f.name for f in fields}
    assert set(dialog.local_fields.editors) == {"extra_buffer_types"}
    for field in fields:
        editor = (dialog.provider_fields.editors | dialog.local_fields.editors)[field.name]
        assert editor.toolTip() == field.help
    # The local model runs on this computer: there is no connection to test.
    assert not dialog.test_button.isEnabled()
    dialog.kind.setCurrentText("openai")
    assert dialog.test_button.isEnabled()


def test_switching_back_to_the_local_model_needs_no_emptying_of_the_server_boxes(qtbot, make_window):
    dialog = provider_dialog(qtbot, make_window, "http://127.0.0.1:9/v1", "gpt-x")
    ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
    assert ok.isEnabled() and dialog.base_url.isEnabled()
    dialog.kind.setCurrentText("local")
    assert ok.isEnabled() and not dialog.provider_error.text()
    assert not dialog.base_url.isEnabled() and not dialog.model.isEnabled()  # not used by the local model
    assert dialog.provider_choice() == ProviderChoice(kind="local")
    dialog.kind.setCurrentText("openai")  # and back: what was typed is still there
    assert (dialog.base_url.text(), dialog.model.text()) == ("http://127.0.0.1:9/v1", "gpt-x")


@pytest.mark.model
@pytest.mark.slow
def test_test_connection_says_what_a_real_server_serves(qtbot, make_window, llama_server):
    dialog = provider_dialog(qtbot, make_window, llama_server)
    with qtbot.waitSignal(dialog.tested, timeout=WAIT_MS) as tested:
        qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    assert tested.args == [True]
    # llama_cpp.server names its one model by the file it loaded, not "smollm2": the answer says so.
    text = dialog.test_result.text()
    assert text.startswith(f"Connected: {llama_server} serves 1 model (") and text.endswith(", but not smollm2")
    assert ".gguf" in text


@pytest.mark.slow
def test_test_connection_runs_off_the_gui_thread_and_says_plainly_why_it_failed(qtbot, make_window):
    # A port that takes connections but never answers: the request waits on its worker while the dialog works.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)
    try:
        dialog = provider_dialog(qtbot, make_window, f"http://127.0.0.1:{silent.getsockname()[1]}/v1")
        qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
        assert dialog.test_result.text().startswith("Asking http://127.0.0.1:") and not dialog.test_button.isEnabled()
        qtbot.wait(300)
        assert dialog.test_result.text().startswith("Asking")  # still waiting, and the form still takes input
        dialog.model.setText("another")
        assert dialog.provider_choice().model == "another"
        with qtbot.waitSignal(dialog.tested, timeout=WAIT_MS) as tested:
            silent.close()  # the waiting connection is reset
        assert tested.args == [False] and dialog.test_result.text().startswith("Failed: ")
    finally:
        silent.close()
    assert dialog.test_button.isEnabled()

    closed = f"http://127.0.0.1:{free_port()}/v1"  # nobody listens there
    dialog.base_url.setText(closed)
    with qtbot.waitSignal(dialog.tested, timeout=WAIT_MS) as tested:
        qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    assert tested.args == [False]
    assert dialog.test_result.text().startswith(f"Failed: cannot connect to {closed}")
    assert "Connection refused" in dialog.test_result.text()


@pytest.mark.slow
def test_a_rejected_key_is_said_plainly_and_never_shown(qtbot, make_window):
    # A scripted server: a real OpenAI-compatible server rejects a key the same way, but not on demand.
    server = ScriptedServer()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        server.steps = [reply(401, '{"error": {"message": "Incorrect API key provided: sk-abc123456"}}')]
        dialog = provider_dialog(qtbot, make_window, server.base_url)
        dialog.api_key.setText("sk-abc123456")
        with qtbot.waitSignal(dialog.tested, timeout=WAIT_MS) as tested:
            qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
        assert tested.args == [False]
        text = dialog.test_result.text()
        assert f"{server.base_url} rejected the API key (HTTP 401)" in text and "sk-abc123456" not in text
        assert server.authorizations == ["Bearer sk-abc123456"]  # the key typed was the one sent, not saved first
    finally:
        server.shutdown()
        server.server_close()
