"""Tool calls as every backend needs them: the choice checked against the tools offered, a call's streamed arguments
parsed, an id for a call that came without one."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from ..model.tools import AUTO, NONE, ToolSpec

# The key under which arguments that are not a JSON object are kept, raw (see parse_arguments).
UNPARSED = "_unparsed"


def forced_tool(tools: Sequence[ToolSpec], tool_choice: str) -> ToolSpec | None:
    """The tool `tool_choice` forces, or None for AUTO and NONE. Raises ValueError for a name not among the tools."""
    if tool_choice in (AUTO, NONE):
        return None
    for spec in tools:
        if spec.name == tool_choice:
            return spec
    offered = ", ".join(spec.name for spec in tools) or "no tools"
    raise ValueError(f"tool_choice {tool_choice!r} is not one of the tools offered ({offered}); "
                     f"it must be {AUTO!r}, {NONE!r} or a tool's name")


def parse_arguments(raw: str) -> dict[str, Any]:
    """A call's arguments from the JSON text the model wrote. No text is no arguments. Text that is not a JSON object
    (cut off, malformed, a bare string) is kept as {"_unparsed": raw}: the chat loop answers such a call with an error
    quoting it, so the model can try again."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {UNPARSED: raw}
    return value if isinstance(value, dict) else {UNPARSED: raw}


def new_call_id() -> str:
    """An id for a call the backend sent without one (tool results are matched to calls by id)."""
    return f"call_{uuid.uuid4().hex[:24]}"
