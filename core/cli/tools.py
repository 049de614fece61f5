"""`precis tools`: the tools the model can call, the workspace's and each configured MCP server's, each server started
to ask it (and stopped again)."""

from __future__ import annotations

import json
import sys

import click

from ..model.counted import counted
from ..model.tools import ToolSpec
from ..storage.paths import data_dir as data_folder
from ..tools.bounded import ToolInputError
from ..tools.editing import EDITING_TOOLS
from ..tools.mcp_config import MCP_CONFIG_NAME, McpConfigError, read_mcp_config
from ..tools.mcp_servers import FAILED, START_SECONDS, McpServers, ServerStatus
from ..tools.workspace import WORKSPACE_TOOLS, Workspace
from .group import cli, data_dir_option

BAD_INPUT, SERVER_FAILED = 2, 1
DESCRIPTION_CHARS = 90


@cli.command("tools", short_help="List the tools the model can call.")
@click.option("--workspace", type=click.Path(file_okay=False), help="a folder: also list the workspace tools, which "
              "work in it")
@click.option("--json", "as_json", is_flag=True, help="print JSON, for scripts")
@data_dir_option
def tools_command(workspace: str | None, as_json: bool, data_dir: str | None) -> int:
    """List the tools the model can call: the workspace's, and each MCP server's from mcp.json (each started)."""
    config = data_folder(data_dir) / MCP_CONFIG_NAME
    try:
        folder = Workspace(workspace) if workspace is not None else None
        servers = read_mcp_config(config)
    except (McpConfigError, ToolInputError) as exc:
        print(f"precis tools: {exc}", file=sys.stderr)
        return BAD_INPUT
    with McpServers(servers) as running:
        running.wait_started(START_SECONDS + 5)
        statuses = running.statuses()
    workspace_tools = [*WORKSPACE_TOOLS, *EDITING_TOOLS] if folder is not None else []
    if as_json:
        print(json.dumps({
            "mcp_config": str(config),
            "workspace": {"folder": str(folder.root), "tools": [_tool(spec) for spec in workspace_tools]}
            if folder is not None else None,
            "servers": [{"name": status.name, "state": status.state, "detail": status.detail,
                         "start_seconds": None if status.seconds is None else round(status.seconds, 3),
                         "command": running.configs[status.name].describe(),
                         "tools": [_tool(spec) for spec in status.tools]} for status in statuses],
        }, indent=2, ensure_ascii=False))
    else:
        _print_listing(folder, workspace_tools, statuses, str(config))
    return SERVER_FAILED if any(status.state == FAILED for status in statuses) else 0


def _tool(spec: ToolSpec) -> dict:
    return {"name": spec.name, "description": spec.description, "read_only": spec.read_only,
            "parameters": spec.parameters}


def _print_listing(folder: Workspace | None, workspace_tools: list[ToolSpec], statuses: list[ServerStatus],
                   config: str) -> None:
    if folder is not None:
        print(f"workspace {folder.root}: {counted(len(workspace_tools), 'tool')}")
        _print_tools(workspace_tools)
    if not statuses:
        print(f"no MCP servers (none in {config})")
    for status in statuses:
        if status.state == FAILED:
            print(f"{status.name}: failed: {status.detail}")
            continue
        started = f", started in {status.seconds:.1f} s" if status.seconds is not None else ""
        print(f"{status.name}: {status.state}, {counted(len(status.tools), 'tool')}{started}")
        _print_tools(list(status.tools))


def _print_tools(specs: list[ToolSpec]) -> None:
    width = max((len(spec.name) for spec in specs), default=0)
    for spec in specs:
        line = " ".join(spec.description.split())
        if len(line) > DESCRIPTION_CHARS:
            line = line[:DESCRIPTION_CHARS - 3] + "..."
        print(f"  {spec.name:<{width}}  {'read-only' if spec.read_only else 'asks     '}  {line}")
