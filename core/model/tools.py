"""Tools the model may call: what a tool is (sent to the model with each request) and what running one gave.

The workspace tools and MCP servers (core/tools/) make ToolSpecs and ToolOutcomes; the providers send
the specs and return the model's ToolCalls (core/model/messages.py); the chat core's loop runs the calls between
them. Plain data: no I/O here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# tool_choice: "auto" (the model decides), "none" (no call), or a tool's name (the model must call that tool).
AUTO, NONE = "auto", "none"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: name, what it does, the JSON schema of its arguments object. `read_only` tools
    run without asking the user (unless asked to); the others (write, execute) ask before each call. `source` is
    "workspace" or the name of the MCP server that offers it."""

    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool = False
    source: str = "workspace"


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What running one call gave: the text the model reads next, whether it succeeded (✓/❌), how long it took,
    and whether the output was cut (a time or size limit, Stop): what is kept is marked so."""

    output: str
    ok: bool
    seconds: float = 0.0
    cut: bool = False


# A failed tool's output that says so itself, "Error executing tool x" (mcp-server-git's): it is not labelled again.
SAYS_ERROR = re.compile(r"\s*Error\b")
# How the result of a call Precis did not run begins (denied, stopped, past the step limit), then why: its one-line
# summary says so in place of an exit code and output.
NOT_RUN = "not run: "


def not_run(why: str) -> ToolOutcome:
    """The outcome of a call that was not run, for `why`."""
    return ToolOutcome(NOT_RUN + why, ok=False)


def unknown_tool(name: str, specs: Sequence[ToolSpec]) -> str | None:
    """Why a call of `name` cannot be asked for (/use): no tool of that name among `specs`, named; or None."""
    names = [spec.name for spec in specs]
    if name in names:
        return None
    return f"there is no tool called {name!r} here; the tools are: {', '.join(names) or 'none'}"


def compact_json(value: Any) -> str:
    """JSON without spaces after `,` and `:`, the way tool definitions are written into a prompt: each space is a
    token more in every prompt (a seventh of mcp-server-git's definitions)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def specs_json(specs: Sequence[ToolSpec]) -> str:
    """What the tool definitions add to a prompt, as the text a token counter reads: each tool's name, description and
    parameter schema in JSON (every backend sends these three, in its own wrapping)."""
    if not specs:
        return ""
    return compact_json([{"name": spec.name, "description": spec.description, "parameters": spec.parameters}
                         for spec in specs])
