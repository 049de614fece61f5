"""`precis chat --mcp NAME` at a terminal, with the real mcp-server-time from PyPI killed mid-chat: the chat says so
at once, `/mcp` lists the server as exited with why, and `/mcp restart NAME` starts it again (McpServers.restart, as
the window's Restart button), after which the model's call to it runs. Before, the terminal chat had no way back but
quitting. The model is the scripted server on loopback, a stand-in: a real model does not call a tool on demand."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.providers.scripted_server import stream
from tests.providers.test_tool_loop import answer, calls
from tests.pseudo_terminal import PseudoTerminal

PROMPT = r"you> "
TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")
RUNNING = r"time: running since \d\d:\d\d:\d\d \(started in [\d.]+ s\), 2 tools"


def server_pid(parent: int) -> int:
    """The process id of the mcp-server-time `parent` started (its child, found in /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == parent and b"mcp-server-time" in command and fields[0] != "Z":
            return int(entry.name)
    raise LookupError(f"no mcp-server-time under process {parent}")


@pytest.fixture
def chat_args(server, monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = tmp_path / "data"
    data.mkdir()
    (data / "mcp.json").write_text(json.dumps({"mcpServers": {"time": {"command": TIME_SERVER}}}))
    return ["chat", "--provider", "openai", "--base-url", server.base_url, "--model", "m", "--data-dir", str(data),
            "--context-tokens", "8192", "--mcp", "time"]


def test_a_server_killed_mid_chat_is_said_listed_and_restarted_from_the_terminal(server, chat_args):
    tokyo = calls(("c1", "get_current_time", {"timezone": "Asia/Tokyo"}))
    server.steps = [stream(tokyo), stream(answer("It is evening in Tokyo."))]
    # Refusals are fitted to the terminal (readline says 80 columns where the pseudo-terminal says none): a line break
    # may stand for a space.
    with PseudoTerminal(*chat_args) as terminal:
        terminal.expect(PROMPT)
        terminal.line("/mcp")
        terminal.expect(RUNNING)
        terminal.expect(PROMPT)
        first = server_pid(terminal.process.pid)
        os.kill(first, signal.SIGKILL)

        # Said at the next line, once; /mcp then lists it as exited, with why.
        deadline = time.monotonic() + 30
        while True:
            terminal.line("/mcp")
            shown = terminal.expect(PROMPT)
            if "time: exited" in shown or time.monotonic() > deadline:
                break
        assert "[precis: MCP server 'time' exited: the server was killed (SIGKILL) (/mcp restart NAME starts it " \
               "again)]" in shown, shown
        assert "time: exited\r\n  the server was killed (SIGKILL)" in shown, shown
        terminal.line("/mcp")
        assert "precis: MCP server" not in terminal.expect(PROMPT)  # not said again

        # /use of its tool names the server and the way back, not "there is no tool called …"; nothing is sent.
        terminal.line("/use get_current_time What time is it in Tokyo?")
        refused = " ".join(terminal.expect(PROMPT).split())
        assert "get_current_time is not available: the MCP server 'time' that has it exited: the server was killed " \
               "(SIGKILL); /mcp restart time starts it again" in refused, refused
        assert server.requests == []

        terminal.line("/mcp restart time")
        terminal.expect(RUNNING)
        terminal.expect(PROMPT)
        assert server_pid(terminal.process.pid) != first

        terminal.line("What time is it in Tokyo?")
        terminal.expect("It is evening in Tokyo.")
        terminal.expect(PROMPT)
        terminal.line("/mcp restart time")  # running: left alone
        terminal.expect(r"/mcp restart: 'time' is running; only a server that failed or ended is started\s+again")
        terminal.line("/mcp restart clock")
        terminal.expect(r"/mcp restart: this chat has no MCP server 'clock' \(it\s+has: time\)")
        terminal.line("/quit")
        assert terminal.wait() == 0, terminal.seen
    result = server.requests[1][2]["messages"][-1]
    assert result["role"] == "tool" and json.loads(result["content"])["datetime"].endswith("+09:00"), result
