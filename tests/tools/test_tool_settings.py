"""The rules under Settings → Tools: mcp.json written whole or not at all, the workspace folder a chat may name,
and the switches' entries."""

from __future__ import annotations

import json
import stat

import pytest
from precis.core.settings import ToolSettings
from precis.core.tools.mcp_config import EMPTY_CONFIG, McpConfigError, parse_mcp_text, write_mcp_config
from precis.core.tools.workspace import workspace_problem

GOOD = '{"mcpServers": {"time": {"command": "mcp-server-time", "env": {"TOKEN": "sk-secret-1234"}}}}'


@pytest.fixture
def folder(tmp_path):
    made = tmp_path / "data"
    made.mkdir()
    return made


def test_mcp_json_is_written_whole_for_its_owner_alone(folder):
    path = folder / "mcp.json"
    [server] = write_mcp_config(path, GOOD)
    assert (server.name, server.env) == ("time", {"TOKEN": "sk-secret-1234"})
    assert path.read_text() == GOOD + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # the entry holds an API key
    assert [p.name for p in folder.iterdir()] == ["mcp.json"]  # no temporary file left beside it


@pytest.mark.parametrize(("text", "message"), [
    ('{"mcpServers": {"time": {"command": "x", "env": {"TOKEN": "sk-secret-1234"},}}}',
     "not valid JSON: Expecting property name enclosed in double quotes at line 1, column 77"),
    ('{"mcpServers": {"time": {"command": "x", "env": {"TOKEN": 1234}}}}', "server 'time': \"env\" 'TOKEN' is 1234"),
])
def test_a_mistake_leaves_mcp_json_as_it_was(folder, text, message):
    path = folder / "mcp.json"
    path.write_text(GOOD)
    with pytest.raises(McpConfigError) as refused:
        write_mcp_config(path, text)
    assert str(refused.value).startswith(f"{path}: ") and message in str(refused.value)
    assert "sk-secret" not in str(refused.value)  # the text is located, not quoted
    assert path.read_text() == GOOD
    assert [p.name for p in folder.iterdir()] == ["mcp.json"]


def test_blank_text_is_no_servers(tmp_path):
    path = tmp_path / "mcp.json"
    assert parse_mcp_text("  \n", path) == []
    assert write_mcp_config(path, "") == []
    assert json.loads(path.read_text()) == json.loads(EMPTY_CONFIG)


def test_a_workspace_folder_must_be_a_whole_path_to_a_folder_that_is_there(tmp_path):
    (tmp_path / "notes.txt").write_text("")
    assert workspace_problem("") == ""  # no workspace
    assert workspace_problem(str(tmp_path)) == ""
    assert workspace_problem(f"{tmp_path}/gone") == f"there is no folder {tmp_path}/gone"
    assert workspace_problem(f"{tmp_path}/notes.txt") == f"{tmp_path}/notes.txt is a file, not a folder"
    assert workspace_problem("projects/precis").startswith("projects/precis is not a whole path")


def test_a_switch_adds_or_removes_only_its_own_entry():
    settings = ToolSettings().switched("time/*", False).switched("time/convert_time", False)
    assert settings.disabled == ["time/*", "time/convert_time"]
    assert not settings.is_on("time/*") and settings.is_on("execute_bash")
    settings = settings.switched("time/*", True)
    assert settings.disabled == ["time/convert_time"]  # the tool's own switch stays off
    assert settings.switched("time/convert_time", False).disabled == ["time/convert_time"]  # not twice
