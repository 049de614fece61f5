"""MCP servers that fail or end are said in the window's status bar as it happens, naming the server and why: before,
only Settings → Tools showed it, and a chat went on without the server's tools unexplained. Real servers: a command
that is not there, and the SDK's own server (tests/tools/slow_mcp_server.py) killed while running."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from tests.timing import WAIT_MS

SLOW_SERVER = Path(__file__).parents[1] / "tools" / "slow_mcp_server.py"


def write_mcp_json(store, servers: dict) -> None:
    (Path(store.path).parent / "mcp.json").write_text(json.dumps({"mcpServers": servers}))


def test_a_server_that_cannot_start_is_named_with_why_in_the_status_bar(qtbot, make_window, store):
    write_mcp_json(store, {"weather": {"command": "mcp-weather-not-installed"}})
    window = make_window()
    qtbot.waitUntil(lambda: "weather" in window.statusBar().currentMessage(), timeout=WAIT_MS)
    assert window.statusBar().currentMessage() == (
        "MCP server 'weather' failed: could not start: No such file or directory: mcp-weather-not-installed "
        "(Settings → Tools shows them)")


def test_a_server_that_ends_while_running_is_said_once(qtbot, make_window, store, tmp_path):
    pid_file = tmp_path / "slow.pid"
    write_mcp_json(store, {"slow": {"command": sys.executable, "args": [str(SLOW_SERVER), str(pid_file)]}})
    window = make_window()
    qtbot.waitUntil(lambda: [s.state for s in window.tools.statuses()] == ["running"], timeout=WAIT_MS)
    assert "slow" not in window.statusBar().currentMessage()  # running is no news
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    qtbot.waitUntil(lambda: "slow" in window.statusBar().currentMessage(), timeout=WAIT_MS)
    assert window.statusBar().currentMessage().startswith("MCP server 'slow' exited: the server was killed (SIGKILL)")
    window.statusBar().clearMessage()
    qtbot.wait(1500)  # three looks at the servers: the same end is not said again
    assert window.statusBar().currentMessage() == ""


def test_an_mcp_json_that_cannot_be_read_is_said(qtbot, make_window, store):
    (Path(store.path).parent / "mcp.json").write_text('{"mcpServers": {"time": {"args": ["x"]}}}')
    window = make_window()
    qtbot.waitUntil(lambda: "mcp.json" in window.statusBar().currentMessage(), timeout=WAIT_MS)
    message = window.statusBar().currentMessage()
    assert message.startswith("MCP servers not started: ") and "'time'" in message
