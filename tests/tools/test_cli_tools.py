"""`precis tools` in a subprocess, and mcp.json's errors naming the file, the server and the field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from precis.core.tools.mcp_config import McpConfigError, read_mcp_config

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")


def precis(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "precis.core.cli.main", *arguments], capture_output=True, text=True,
                          timeout=300)


def test_precis_tools_lists_the_workspace_and_each_server_and_reports_one_that_fails(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "mcp.json").write_text(json.dumps({"mcpServers": {
        "time": {"command": TIME_SERVER, "args": ["--local-timezone", "Europe/Paris"]},
        "broken": {"command": str(tmp_path / "no-such-server")}}}))
    done = precis("tools", "--data-dir", str(data), "--workspace", str(tmp_path), "--json")
    assert done.returncode == 1, done.stderr  # a server failed
    listing = json.loads(done.stdout)
    workspace = {tool["name"]: tool["read_only"] for tool in listing["workspace"]["tools"]}
    assert workspace == {"read_file": True, "list_files": True, "search_files": True, "execute_bash": False,
                         "create_file": False, "edit_file": False}
    servers = {server["name"]: server for server in listing["servers"]}
    assert servers["time"]["state"] == "running" and servers["time"]["start_seconds"] > 0
    assert [tool["name"] for tool in servers["time"]["tools"]] == ["get_current_time", "convert_time"]
    assert servers["broken"]["state"] == "failed" and "no-such-server" in servers["broken"]["detail"]

    text = precis("tools", "--data-dir", str(data))
    assert text.returncode == 1
    assert "time: running, 2 tools" in text.stdout and "broken: failed: could not start" in text.stdout
    assert "get_current_time  read-only" in text.stdout and "read_file" not in text.stdout


def test_precis_tools_refuses_a_bad_mcp_json_naming_the_server_and_field(tmp_path):
    (tmp_path / "mcp.json").write_text('{"mcpServers": {"time": {"command": "mcp-server-time", "env": {"TZ": 1}}}}')
    done = precis("tools", "--data-dir", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip() == f"precis tools: {tmp_path / 'mcp.json'}: server 'time': \"env\" 'TZ' is 1, not a string"


@pytest.mark.parametrize(("text", "message"), [
    ('{"mcpServers": {"a": {"command": "x",}}}', "not valid JSON: Expecting property name enclosed in double quotes "
                                                 "at line 1, column 38"),
    ('{"servers": {}}', 'expected an object with "mcpServers"'),
    ('{"mcpServers": {"a": ["x"]}}', "server 'a': expected an object"),
    ('{"mcpServers": {"a": {"args": []}}}', "server 'a': give either \"command\""),
    ('{"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}', "server 'a': give either \"command\""),
    ('{"mcpServers": {"a": {"command": ""}}}', "server 'a': \"command\" must be a non-empty string"),
    ('{"mcpServers": {"a": {"command": "x", "args": "--flag"}}}', "server 'a': \"args\" must be a list of strings"),
    ('{"mcpServers": {"a": {"command": "x", "args": ["-v", null]}}}', "server 'a': \"args\" item 2 is null"),
    ('{"mcpServers": {"a": {"url": "ftp://h/mcp"}}}', "server 'a': \"url\" must be an http:// or https:// address"),
])
def test_a_bad_mcp_json_is_refused_saying_where(tmp_path, text, message):
    path = tmp_path / "mcp.json"
    path.write_text(text)
    with pytest.raises(McpConfigError) as refused:
        read_mcp_config(path)
    assert str(refused.value).startswith(f"{path}: ") and message in str(refused.value)


def test_claude_desktops_form_is_read(tmp_path):
    path = tmp_path / "mcp.json"
    assert read_mcp_config(path) == []  # none configured
    path.write_text(json.dumps({"mcpServers": {
        "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_AUTHOR_NAME": "me"}},
        "remote": {"url": "https://example.com/mcp"}}}))
    git, remote = read_mcp_config(path)
    assert (git.name, git.command, git.args, git.env) == ("git", "uvx", ("mcp-server-git",), {"GIT_AUTHOR_NAME": "me"})
    assert (remote.name, remote.url, remote.command) == ("remote", "https://example.com/mcp", None)


def test_the_terminal_chat_says_what_it_waits_for_and_names_a_server_that_never_answered(tmp_path):
    """`precis chat --mcp` with a server that hangs at start showed nothing for 30 s, then the chat began without
    naming it: the wait ended a moment before the server's own start limit marked it failed."""
    import io

    from precis.core.cli.chat_tools import terminal_toolbox

    hangs = tmp_path / "hangs.py"
    hangs.write_text("import time\ntime.sleep(600)\n")
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {
        "hangs": {"command": sys.executable, "args": [str(hangs)]},
        "time": {"command": str(Path(sys.executable).parent / "mcp-server-time")}}}))
    err = io.StringIO()
    with terminal_toolbox(None, ["hangs", "time"], str(tmp_path), err, start_seconds=3) as toolbox:
        assert toolbox is not None and {spec.source for spec in toolbox.specs()} == {"time"}
    waiting, failed = err.getvalue().splitlines()  # time may start within the first second, or not
    assert waiting.startswith("[precis: waiting for MCP server") and waiting.endswith(" to start (up to 3 s)]")
    assert "'hangs'" in waiting
    assert failed == ("[precis: MCP server 'hangs' did not start: no answer to initialize within 3 s; /mcp restart hangs "
                      "tries again]")
