"""Settings → Tools on the real dialog: a pasted Claude desktop block saved as mcp.json and its real server
(mcp-server-time) running with its tools; mistakes named and nothing written; switches saved and obeyed by the
window's toolbox; a server that cannot start shown failed with why, one killed shown exited; and This chat's
workspace folder."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
from precis.core.model.tools import specs_json
from precis.core.settings import TOOLS_KEY, ChatSettings, ProviderChoice
from precis.core.tools.mcp_servers import RUNNING, START_SECONDS
from precis.gui.settings_dialog import SettingsDialog
from precis.gui.store_calls import StoreCalls
from precis.gui.tool_service import ToolService
from precis.gui.tools_page import ToolsPage
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QDialogButtonBox

from tests.gui.conftest import open_settings
from tests.timing import WAIT_MS

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")  # as tests/tools/test_mcp_servers.py starts it
SLOW_SERVER = Path(__file__).parents[1] / "tools" / "slow_mcp_server.py"  # one that can be killed


def config_path(store) -> Path:
    return Path(store.path).parent / "mcp.json"


def click(qtbot, widget) -> None:
    """A click where a person clicks: a switch spans its row, but only its box and its name take the click."""
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton, pos=QPoint(8, widget.height() // 2))


def running(page, name: str) -> bool:
    block = page.server_blocks.get(name)
    return block is not None and block.state.text().startswith("running") and bool(block.tool_switches)


@pytest.fixture
def open_tools(qtbot, store):
    """open_tools(chat=None) -> the settings dialog on its Tools page (over a ToolService of the store's data folder,
    its servers started as the window starts them), mcp.json and the switches read."""
    from precis.gui.app import application

    application()
    opened = []

    def open_(chat: ChatSettings | None = None) -> SettingsDialog:
        tools = ToolService(store)
        tools.start()
        calls = StoreCalls(store)
        dialog = SettingsDialog(ProviderChoice(), {}, chat, key_saved=False, tools_page=ToolsPage(tools, calls))
        qtbot.addWidget(dialog)
        opened.append((dialog, tools, calls))
        dialog.show()
        dialog.tabs.setCurrentWidget(dialog.tools_tab)
        qtbot.waitUntil(lambda: dialog.tools_page.editor.isEnabled(), timeout=WAIT_MS)
        return dialog

    yield open_
    for dialog, tools, calls in opened:
        dialog.tools_page._runner.wait(WAIT_MS)
        tools.stop()
        calls.wait(WAIT_MS)


def test_a_pasted_claude_desktop_block_is_saved_and_its_server_runs_with_its_tools(qtbot, make_window, store):
    window = make_window()
    dialog = open_settings(qtbot, window)
    page = dialog.tools_page
    dialog.tabs.setCurrentWidget(dialog.tools_tab)
    qtbot.waitUntil(lambda: page.editor.isEnabled(), timeout=WAIT_MS)
    assert page.editor.toPlainText() == "" and page.no_servers.text() == "No MCP servers: mcp.json names none."

    block = {"mcpServers": {"time": {"command": TIME_SERVER, "args": ["--local-timezone", "Europe/Paris"],
                                     "env": {"TIME_API_KEY": "sk-not-a-real-key"}}}}
    page.editor.setPlainText(json.dumps(block, indent=2))
    assert page.status.text() == "Not saved yet."
    with qtbot.waitSignal(page.config_saved, timeout=WAIT_MS) as saved:
        click(qtbot, page.save_button)
    assert saved.args == [True] and page.status.text() == "Saved." and page.error.isHidden()
    assert json.loads(config_path(store).read_text()) == block
    # The window's servers were restarted on it: the page shows the new one running, with its tools.
    qtbot.waitUntil(lambda: running(page, "time"), timeout=WAIT_MS)
    shown = page.server_blocks["time"]
    assert shown.state.text().startswith("running since ") and shown.state.text().endswith(", 2 tools")
    assert set(shown.tool_switches) == {"get_current_time", "convert_time"}
    assert all(box.isChecked() and box.isEnabled() for box in shown.tool_switches.values())
    assert shown.tool_switches["convert_time"].text() == "convert_time  (reads only)"
    assert [status.state for status in window.tools.statuses()] == [RUNNING]
    assert page.no_servers.isHidden()


def test_a_mistake_is_named_under_the_text_and_mcp_json_is_left_as_it_was(qtbot, open_tools, store):
    config_path(store).write_text('{"mcpServers": {}}\n')
    dialog = open_tools()
    page = dialog.tools_page
    assert page.editor.toPlainText() == '{"mcpServers": {}}\n'

    page.editor.setPlainText('{"mcpServers": {\n  "time": {"command": "mcp-server-time", "env": {"KEY": "sk-typed"},}\n}}')
    with qtbot.waitSignal(page.config_saved, timeout=WAIT_MS) as saved:
        click(qtbot, page.save_button)
    assert saved.args == [False] and page.error.isVisible()
    assert page.error.text() == (f"{config_path(store)}: not valid JSON: Expecting property name enclosed in double "
                                 f"quotes at line 2, column 69")
    assert config_path(store).read_text() == '{"mcpServers": {}}\n'

    page.editor.setPlainText(json.dumps({"mcpServers": {"time": {"command": TIME_SERVER, "args": ["--local-timezone", 3]}}}))
    click(qtbot, page.save_button)
    assert page.error.text() == f"{config_path(store)}: server 'time': \"args\" item 2 is 3, not a string"
    assert config_path(store).read_text() == '{"mcpServers": {}}\n'
    assert page.no_servers.isVisible()  # nothing was started either

    # OK with the mistake still there keeps the dialog open on the Tools page.
    dialog.tabs.setCurrentIndex(0)
    click(qtbot, dialog.buttons.button(QDialogButtonBox.StandardButton.Ok))
    assert dialog.isVisible() and dialog.tabs.currentWidget() is dialog.tools_tab
    assert config_path(store).read_text() == '{"mcpServers": {}}\n'


def test_switches_are_saved_and_the_windows_toolbox_obeys_them(qtbot, make_window, store, tmp_path):
    config_path(store).write_text(json.dumps({"mcpServers": {"time": {"command": TIME_SERVER}}}))
    window = make_window()
    dialog = open_settings(qtbot, window)
    page = dialog.tools_page
    dialog.tabs.setCurrentWidget(dialog.tools_tab)
    qtbot.waitUntil(lambda: page.settings is not None and running(page, "time"), timeout=WAIT_MS)
    server = page.server_blocks["time"]

    def offered(chat: ChatSettings = ChatSettings()) -> set[str]:
        return {spec.name for spec in window.tools.toolbox_for(chat).specs()}

    assert offered() == {"get_current_time", "convert_time"}
    with qtbot.waitSignal(page.settings_saved, timeout=WAIT_MS):
        click(qtbot, server.tool_switches["convert_time"])
    assert store.get_setting(TOOLS_KEY) == {"disabled": ["time/convert_time"], "ask_before_reading": False}
    assert offered() == {"get_current_time"}

    with qtbot.waitSignal(page.settings_saved, timeout=WAIT_MS):
        click(qtbot, server.switch)
    assert offered() == set()
    assert not any(box.isEnabled() for box in server.tool_switches.values())
    with qtbot.waitSignal(page.settings_saved, timeout=WAIT_MS):
        click(qtbot, server.switch)
    assert offered() == {"get_current_time"}  # the tool switched off on its own stays off

    workspace = ChatSettings(workspace=str(tmp_path))
    assert "execute_bash" in offered(workspace)
    with qtbot.waitSignal(page.settings_saved, timeout=WAIT_MS):
        click(qtbot, page.workspace_switches["execute_bash"])
    assert offered(workspace) == {"get_current_time", "read_file", "list_files", "search_files", "create_file",
                                  "edit_file"}
    with qtbot.waitSignal(page.settings_saved, timeout=WAIT_MS):
        click(qtbot, page.ask_before_reading)
    assert window.tools.settings().ask_before_reading
    assert window.tools.settings().disabled == ["time/convert_time", "execute_bash"]

    dialog.reject()
    again = open_settings(qtbot, window).tools_page
    qtbot.waitUntil(lambda: again.settings is not None and running(again, "time"), timeout=WAIT_MS)
    assert not again.server_blocks["time"].tool_switches["convert_time"].isChecked()
    assert again.server_blocks["time"].tool_switches["get_current_time"].isChecked()
    assert not again.workspace_switches["execute_bash"].isChecked() and again.workspace_switches["read_file"].isChecked()
    assert again.ask_before_reading.isChecked()


def test_a_server_that_cannot_start_or_dies_is_shown_with_why_and_the_others_go_on(qtbot, open_tools, store, tmp_path):
    pid_file = tmp_path / "pid"
    config_path(store).write_text(json.dumps({"mcpServers": {
        "missing": {"command": str(tmp_path / "no-such-server")},
        "quits": {"command": sys.executable, "args": ["-c", "import sys; sys.exit('no API token given')"]},
        "slow": {"command": sys.executable, "args": [str(SLOW_SERVER), str(pid_file)]},
        "time": {"command": TIME_SERVER}}}))
    page = open_tools().tools_page
    qtbot.waitUntil(lambda: all(page.server_blocks[name].state.text() == "failed" for name in ("missing", "quits"))
                    and running(page, "slow") and running(page, "time"), timeout=WAIT_MS)
    missing, quits, slow = page.server_blocks["missing"], page.server_blocks["quits"], page.server_blocks["slow"]
    assert missing.detail.isVisible()
    assert missing.detail.text() == f"could not start: No such file or directory: {tmp_path / 'no-such-server'}"
    assert "no API token given" in quits.detail.text() and quits.detail.isVisible()
    assert not missing.tool_switches and not quits.tool_switches

    os.kill(int(pid_file.read_text()), signal.SIGKILL)  # a server that crashes while the page is open
    qtbot.waitUntil(lambda: slow.state.text() == "exited", timeout=WAIT_MS)
    assert slow.detail.text().startswith("the server was killed (SIGKILL)") and slow.detail.isVisible()
    offered = {spec.name for spec in page.tools.toolbox_for(ChatSettings()).specs()}
    assert offered == {"get_current_time", "convert_time"}  # the chat goes on with the others


def test_a_server_killed_mid_chat_is_restarted_alone_from_its_line(qtbot, open_tools, store, tmp_path):
    """Before, only "Save and restart servers" (every server, their calls cut) or restarting Precis brought it back."""
    pid_file = tmp_path / "pid"
    config_path(store).write_text(json.dumps({"mcpServers": {
        "slow": {"command": sys.executable, "args": [str(SLOW_SERVER), str(pid_file)]},
        "time": {"command": TIME_SERVER}}}))
    page = open_tools().tools_page
    qtbot.waitUntil(lambda: running(page, "slow") and running(page, "time"), timeout=WAIT_MS)
    slow, clock = page.server_blocks["slow"], page.server_blocks["time"]
    assert not slow.restart.isVisible() and not clock.restart.isVisible()  # nothing to restart while running
    first_pid = int(pid_file.read_text())
    clock_since = page.tools.servers.status("time").running_since

    os.kill(first_pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: slow.state.text() == "exited", timeout=WAIT_MS)
    assert slow.restart.isVisible() and not clock.restart.isVisible()
    slow.restart.setFocus()
    qtbot.keyClick(slow.restart, Qt.Key.Key_Space)  # from the keyboard
    qtbot.waitUntil(lambda: running(page, "slow"), timeout=WAIT_MS)
    assert int(pid_file.read_text()) != first_pid and not slow.restart.isVisible() and slow.detail.isHidden()
    assert page.tools.servers.status("time").running_since == clock_since  # the other server went on
    offered = {spec.name for spec in page.tools.toolbox_for(ChatSettings()).specs()}
    assert offered == {"wait", "get_current_time", "convert_time"}


def test_a_server_that_hangs_at_start_counts_its_seconds_to_the_limit_and_can_be_removed(qtbot, open_tools, store):
    """Before, it said "starting…" alone for the whole 30 s, the user not told how long it would be."""
    hangs = {"command": sys.executable, "args": ["-c", "import time; time.sleep(999)"]}
    config_path(store).write_text(json.dumps({"mcpServers": {"hangs": hangs}}))
    page = open_tools().tools_page
    shown = page.server_blocks["hangs"].state
    qtbot.waitUntil(lambda: shown.text() == f"starting… 1 s (given up at {START_SECONDS:g} s)", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: shown.text() == f"starting… 2 s (given up at {START_SECONDS:g} s)", timeout=WAIT_MS)

    page.editor.setPlainText('{"mcpServers": {}}')  # removed while it still starts: the page does not wait for it
    with qtbot.waitSignal(page.config_saved, timeout=WAIT_MS) as saved:
        click(qtbot, page.save_button)
    assert saved.args == [True] and not page.server_blocks and page.no_servers.isVisible()


def test_the_workspace_folder_is_picked_or_refused_naming_it(qtbot, tmp_path):
    from precis.gui.app import application

    application()
    dialog = SettingsDialog(ProviderChoice(), {}, ChatSettings(), key_saved=False)
    qtbot.addWidget(dialog)
    dialog.show()
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    error = dialog.chat_fields.error_labels["workspace"]

    dialog.workspace.setText(str(tmp_path / "gone"))
    assert error.text() == f"there is no folder {tmp_path / 'gone'}" and not ok.isEnabled()
    dialog.workspace.setText("projects")
    assert error.text().startswith("projects is not a whole path") and not ok.isEnabled()

    project = tmp_path / "project"
    project.mkdir()
    picker = dialog.open_folder_picker()
    assert picker.isVisible()
    picker.setDirectory(str(tmp_path))
    picker.selectFile(str(project))
    picker.accept()
    assert dialog.workspace.text() == str(project)
    assert error.isHidden() and ok.isEnabled()
    assert dialog.chat_settings().workspace == str(project)


def test_the_inspector_counts_the_new_servers_tools_once_they_run_not_at_the_next_message(qtbot, make_window, store):
    """Saving mcp.json restarts the servers: the open chat's next prompt is offered their tools as soon as they run
    (and none once they are gone), without a message sent; "Tool definitions" went missing until then."""
    window = make_window()
    # Offered even to the built-in model the window has here (by default it is not: tests/providers/test_tools_offered.py).
    chat_id = store.create_chat("times", settings={"context_window": 8192, "offer_tools": "yes"})
    window.refresh_chats()
    window.open_chat(chat_id)
    tools_value = window.inspector.legend_values["tools"]
    qtbot.waitUntil(lambda: window.chat.snapshot is not None and window.chat.session.chat_id == chat_id,
                    timeout=WAIT_MS)
    assert window.chat.snapshot.usage.by_kind["tools"] == 0 and tools_value.isHidden()

    def tools_counted() -> int:
        return window.chat.snapshot.usage.by_kind["tools"]

    for config, counted in (({"mcpServers": {"time": {"command": TIME_SERVER}}}, True), ({"mcpServers": {}}, False)):
        dialog = open_settings(qtbot, window)
        page = dialog.tools_page
        dialog.tabs.setCurrentWidget(dialog.tools_tab)
        qtbot.waitUntil(lambda p=page: p.editor.isEnabled(), timeout=WAIT_MS)
        page.editor.setPlainText(json.dumps(config))
        with qtbot.waitSignal(page.config_saved, timeout=WAIT_MS):
            click(qtbot, page.save_button)
        dialog.reject()
        qtbot.waitUntil(lambda c=counted: (tools_counted() > 0) == c and tools_value.isHidden() != c, timeout=WAIT_MS)
        specs = window.chat.session.tools
        assert [spec.name for spec in specs] == (["get_current_time", "convert_time"] if counted else [])
        if counted:  # what the inspector says is what the chat's prompt offers: these tools' definitions
            engine = window.chat.session.engine
            assert engine.setup.tool_tokens == engine.counter.count_text(specs_json(specs))
            assert tools_value.text() == f"{tools_counted():,}"
    assert store.load_messages(chat_id) == []


def test_mcp_typed_in_the_window_restarts_the_server_and_opens_its_page(qtbot, make_window, store, tmp_path):
    """/mcp is the terminal chat's way to the servers (core/cli/chat_tools.py); in the window it is the same command:
    Settings → Tools, with `restart NAME` pressing that server's Restart first."""
    pid_file = tmp_path / "pid"
    config_path(store).write_text(json.dumps({"mcpServers": {
        "slow": {"command": sys.executable, "args": [str(SLOW_SERVER), str(pid_file)]}}}))
    window = make_window()
    window.open_chat(store.create_chat("servers", settings={"context_window": 8192}))
    qtbot.waitUntil(lambda: window.tools.servers.status("slow").state == RUNNING, timeout=WAIT_MS)
    window.submit("/mcp restart slow")  # running: left alone, and said
    qtbot.waitUntil(lambda: "'slow' is running; only a server that failed or ended" in window.composer.hint.text(),
                    timeout=WAIT_MS)
    first_pid = int(pid_file.read_text())
    os.kill(first_pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: window.tools.servers.status("slow").state == "exited", timeout=WAIT_MS)
    with qtbot.waitSignal(window.settings_opened, timeout=WAIT_MS) as opened:
        window.submit("/mcp restart slow")
    dialog = opened.args[0]
    assert dialog.tabs.currentWidget() is dialog.tools_tab
    qtbot.waitUntil(lambda: running(dialog.tools_page, "slow"), timeout=WAIT_MS)
    assert int(pid_file.read_text()) != first_pid
    dialog.reject()
