"""How tool calls and results are shown to backends that cannot take them natively, and which pairs can be."""

from __future__ import annotations

import json

from ..model.messages import Message, ToolCall


def tool_call_text(call: ToolCall) -> str:
    args = json.dumps(call.arguments, ensure_ascii=False) if call.arguments else "{}"
    return f"[called tool {call.name} with {args}]"


def tool_result_text(message: Message) -> str:
    return f"[tool {message.name or 'unknown'} result]\n{message.content}"


def paired_call_ids(messages: list[Message]) -> set[str]:
    """Ids of tool calls answered by tool results directly after their assistant message.

    Chat APIs reject a call without its result and a result without its call; after summarizing, one half of a
    pair can be gone, so only complete pairs are sent natively and the rest as text.
    """
    paired: set[str] = set()
    for index, message in enumerate(messages):
        if not message.tool_calls:
            continue
        asked = {call.id for call in message.tool_calls}
        for following in messages[index + 1:]:
            if following.role != "tool":
                break
            if following.tool_call_id in asked:
                paired.add(following.tool_call_id)
    return paired
