"""MCP servers through the official SDK: the real mcp-server-time and mcp-server-git from PyPI, commands that fail at
start or never answer, one killed mid-call (the SDK's own server, tests/tools/slow_mcp_server.py), and the
environment a server is given."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from precis.core.model.messages import ToolCall
from precis.core.providers.base import CancelToken
from precis.core.tools.mcp_config import ServerConfig
from precis.core.tools.mcp_servers import EXIT_CODE_SECONDS, EXITED, FAILED, RUNNING, STARTING, McpServers
from precis.core.tools.toolbox import Toolbox

BIN = Path(sys.executable).parent
TIME_SERVER = ServerConfig("time", command=str(BIN / "mcp-server-time"))
SLOW_SERVER = Path(__file__).with_name("slow_mcp_server.py")
STARTED_WITHIN = 120  # seconds: a loaded machine imports slowly; no test fails for being slow


def wait_for(condition, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_real_servers_list_their_tools_and_answer(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "notes.txt").write_text("not committed yet\n")
    with McpServers([TIME_SERVER, ServerConfig("git", command=str(BIN / "mcp-server-git"))]) as servers:
        assert servers.wait_started(STARTED_WITHIN)
        clock, git = servers.status("time"), servers.status("git")
        assert (clock.state, git.state) == (RUNNING, RUNNING), (clock.detail, git.detail)
        assert {tool.name for tool in clock.tools} == {"get_current_time", "convert_time"}
        assert all(tool.read_only and tool.source == "time" for tool in clock.tools)
        git_tools = {tool.name: tool for tool in git.tools}
        assert git_tools["git_status"].read_only and not git_tools["git_commit"].read_only
        assert git_tools["git_status"].parameters["properties"]["repo_path"]

        tokyo = servers.call("time", "get_current_time", {"timezone": "Asia/Tokyo"})
        assert tokyo.ok, tokyo.output
        assert json.loads(tokyo.output)["timezone"] == "Asia/Tokyo"
        assert json.loads(tokyo.output)["datetime"].endswith("+09:00")
        nowhere = servers.call("time", "get_current_time", {"timezone": "Nowhere/Atlantis"})
        assert not nowhere.ok and "Nowhere/Atlantis" in nowhere.output

        status = servers.call("git", "git_status", {"repo_path": str(repo)})
        assert status.ok, status.output
        assert "notes.txt" in status.output


def test_servers_that_fail_at_start_are_reported_with_their_stderr(tmp_path):
    missing = ServerConfig("missing", command=str(tmp_path / "no-such-server"))
    quits = ServerConfig("quits", command=sys.executable,
                         args=("-c", "import sys; print('no API token given', file=sys.stderr); sys.exit(3)"))
    with McpServers([missing, quits, TIME_SERVER]) as servers:
        assert servers.wait_started(STARTED_WITHIN)
        assert servers.status("missing").state == FAILED
        assert "could not start" in servers.status("missing").detail
        assert "no-such-server" in servers.status("missing").detail
        assert servers.status("quits").state == FAILED
        # Its code said, not the SDK's "Connection closed".
        assert servers.status("quits").detail == "the server exited with code 3 before it was ready; its stderr " \
                                                 "ends: no API token given"
        assert servers.status("time").state == RUNNING
        assert servers.call("time", "get_current_time", {"timezone": "UTC"}).ok
        refused = servers.call("quits", "anything", {})
        assert not refused.ok and "not running" in refused.output and "no API token given" in refused.output


def test_a_server_that_never_answers_initialize_fails_at_the_time_limit():
    silent = ServerConfig("silent", command=sys.executable, args=("-c", "import time; time.sleep(600)"))
    began = time.monotonic()
    with McpServers([silent], start_seconds=2) as servers:
        assert servers.status("silent").state == "starting"  # start() did not wait for it
        assert servers.wait_started(STARTED_WITHIN)
        assert servers.status("silent").state == FAILED
        assert "no answer to initialize within 2 s" in servers.status("silent").detail
    assert time.monotonic() - began < STARTED_WITHIN


def test_a_call_past_its_time_cancelled_or_cut_by_a_kill_is_reported_and_the_others_keep_working(tmp_path):
    pid_file = tmp_path / "pid"
    slow = ServerConfig("slow", command=sys.executable, args=(str(SLOW_SERVER), str(pid_file)))
    with McpServers([slow, TIME_SERVER]) as servers:
        assert servers.wait_started(STARTED_WITHIN)
        assert servers.status("slow").state == RUNNING, servers.status("slow").detail
        assert servers.call("slow", "wait", {"seconds": 0}).output == "waited 0.0 s"

        late = servers.call("slow", "wait", {"seconds": 60}, timeout=1)
        assert not late.ok and late.cut and "timed out after 1 s" in late.output

        cancel = CancelToken()
        threading.Timer(0.5, cancel.cancel).start()
        stopped = servers.call("slow", "wait", {"seconds": 60}, cancel=cancel)
        assert not stopped.ok and stopped.cut and "cancelled" in stopped.output
        assert stopped.seconds < 30

        outcomes = []
        caller = threading.Thread(target=lambda: outcomes.append(servers.call("slow", "wait", {"seconds": 60})))
        caller.start()
        time.sleep(1)  # the call is under way
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        caller.join(60)
        assert not caller.is_alive()
        assert outcomes[0].output.startswith("the MCP server 'slow' ended during the call to wait (it was killed "
                                             "(SIGKILL))"), outcomes[0].output
        assert wait_for(lambda: servers.status("slow").state == EXITED)
        assert servers.status("slow").detail.startswith("the server was killed (SIGKILL)")
        assert servers.status("time").state == RUNNING
        assert servers.call("time", "get_current_time", {"timezone": "UTC"}).ok


def test_a_server_killed_mid_chat_is_named_at_the_next_call_and_restarts_alone(tmp_path):
    """Before, the model's next call read "there is no tool called 'wait'", and only restarting every server (or
    Precis) brought it back."""
    pid_file = tmp_path / "pid"
    slow = ServerConfig("slow", command=sys.executable, args=(str(SLOW_SERVER), str(pid_file)))
    with McpServers([slow, TIME_SERVER]) as servers:
        assert servers.wait_started(STARTED_WITHIN)
        box = Toolbox(None, servers)
        call = ToolCall(id="c1", name="wait", arguments={"seconds": 0})
        assert box.run(call).output == "waited 0.0 s"
        first_pid = int(pid_file.read_text())
        os.kill(first_pid, signal.SIGKILL)
        assert wait_for(lambda: servers.status("slow").state == EXITED)

        gone = box.run(call)
        assert not gone.ok
        assert gone.output.startswith("wait is not available: the MCP server 'slow' that has it exited: the server "
                                      "was killed (SIGKILL); the tools are: "), gone.output
        assert not servers.restart("time")  # a running server is left alone

        time_since = servers.status("time").running_since
        assert servers.restart("slow")
        assert servers.status("slow").state == STARTING and servers.status("slow").detail == ""
        assert wait_for(lambda: servers.status("slow").state == RUNNING, STARTED_WITHIN)
        assert int(pid_file.read_text()) != first_pid
        time.sleep(EXIT_CODE_SECONDS + 0.5)  # the old serving's end, were it still news, would have been said by now
        assert servers.status("slow").state == RUNNING
        assert box.run(call).output == "waited 0.0 s"
        assert servers.status("time").running_since == time_since  # the others were not restarted


def test_a_server_restarted_while_its_hung_start_is_still_being_ended_is_not_undone_by_it(tmp_path):
    """The SDK takes seconds to end a server that hung at start (stdin closed, then SIGTERM); that ending, of the
    first start, must not mark the second one stopped and take its session."""
    hung = tmp_path / "hung-once"
    hangs_then_serves = ServerConfig("flaky", command="/bin/sh", args=(
        "-c", f'if [ -e "{hung}" ]; then exec "{sys.executable}" "{SLOW_SERVER}" "{tmp_path / "pid"}"; fi; '
              f'touch "{hung}"; exec sleep 600'))
    with McpServers([hangs_then_serves], start_seconds=10) as servers:
        assert servers.wait_started(STARTED_WITHIN)
        assert servers.status("flaky").state == FAILED
        assert servers.restart("flaky")
        states = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (states and states[-1] == RUNNING and len(states) > 1):
            if not states or states[-1] != servers.status("flaky").state:
                states.append(servers.status("flaky").state)
            time.sleep(0.02)
        time.sleep(5)  # past the SDK's ending of the first start
        assert states == [STARTING, RUNNING] and servers.status("flaky").state == RUNNING
        assert servers.call("flaky", "wait", {"seconds": 0}).output == "waited 0.0 s"


def test_a_server_gets_its_entrys_environment_and_never_precis_api_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-precis-openai-secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-precis-secret")
    seen = tmp_path / "environment"
    dumps_then_serves = ServerConfig("time", command="/bin/sh",
                                     args=("-c", f'env > "{seen}"; exec "{BIN / "mcp-server-time"}"'),
                                     env={"TIME_SERVER_SETTING": "from-mcp-json"})
    with McpServers([dumps_then_serves]) as servers:
        assert servers.wait_started(STARTED_WITHIN)
        assert servers.status("time").state == RUNNING
    environment = seen.read_text()
    assert "TIME_SERVER_SETTING=from-mcp-json" in environment
    assert "PATH=" in environment  # the SDK's minimal default
    assert "sk-precis" not in environment and "OPENAI_API_KEY" not in environment
    assert "ANTHROPIC_API_KEY" not in environment


def test_a_streamable_http_server_by_url(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(SLOW_SERVER), str(tmp_path / "pid"), "http", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def listening() -> bool:
            with socket.socket() as client:
                return client.connect_ex(("127.0.0.1", port)) == 0
        assert wait_for(listening, STARTED_WITHIN)
        with McpServers([ServerConfig("web", url=f"http://127.0.0.1:{port}/mcp")]) as servers:
            assert servers.wait_started(STARTED_WITHIN)
            assert servers.status("web").state == RUNNING, servers.status("web").detail
            assert servers.call("web", "wait", {"seconds": 0}).output == "waited 0.0 s"
    finally:
        server.kill()
        server.wait()
