"""Anthropic Messages API over httpx: top-level system prompt, content blocks, streamed events, usage."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from ..model.messages import Message, ToolCall
from ..model.tools import AUTO, ToolSpec
from .base import (
    Cancelled,
    CancelToken,
    ChatChunk,
    ContextLengthExceeded,
    MalformedResponse,
    ProviderError,
    ServerError,
    StreamInterrupted,
    Usage,
)
from .render import paired_call_ids, tool_call_text, tool_result_text
from .sse import iter_sse
from .tool_calls import forced_tool, parse_arguments
from .transport import (
    CONTEXT_ERROR_MARKERS,
    HTTPProvider,
    RetryPolicy,
    get_json,
    open_stream,
    scrub,
    stream_failure,
)

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_WINDOW = 200_000
# Anthropic's stop reasons in the vocabulary the rest of Precis uses (OpenAI's).
MAX_TEMPERATURE = 1.0  # Anthropic's Messages API takes 0 to 1
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}
# The API requires the conversation to open with a user turn; after summarizing it may not.
OPENING_USER_TEXT = "(continuing the conversation)"


def to_anthropic(messages: list[Message], json_schema: dict[str, Any] | None = None) -> tuple[str, list[dict[str, Any]]]:
    """(system, messages) for the Messages API.

    System messages (the prompt and summaries) join into the top-level `system`; tool results become
    tool_result blocks in a user turn; consecutive turns of one role merge, as the API requires alternation.
    """
    paired = paired_call_ids(messages)
    system_parts: list[str] = []
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for message in messages:
        if message.role == "system":
            if message.content:
                system_parts.append(message.content)
        elif message.role == "tool":
            if message.tool_call_id in paired:
                add("user", [{"type": "tool_result", "tool_use_id": message.tool_call_id,
                              "content": message.content or "(no output)"}])
            else:
                add("user", [{"type": "text", "text": tool_result_text(message)}])
        elif message.role == "assistant":
            texts = [message.content] + [tool_call_text(c) for c in message.tool_calls if c.id not in paired]
            text = "\n".join(t for t in texts if t)
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                       for c in message.tool_calls if c.id in paired]
            add("assistant", blocks)
        elif message.content:
            add("user", [{"type": "text", "text": message.content}])
    if turns and turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": OPENING_USER_TEXT}]})
    if json_schema is not None:
        system_parts.append("Reply with one JSON object only, no other text, valid against this JSON schema:\n"
                            + json.dumps(json_schema, ensure_ascii=False))
    return "\n\n".join(system_parts), turns


def tool_fields(tools: Sequence[ToolSpec], tool_choice: str) -> dict[str, Any]:
    """The request's `tools` and `tool_choice` in the Messages API's shape, or nothing without tools."""
    forced = forced_tool(tools, tool_choice)
    if not tools:
        return {}
    return {
        "tools": [{"name": spec.name, "description": spec.description, "input_schema": spec.parameters}
                  for spec in tools],
        "tool_choice": {"type": tool_choice} if forced is None else {"type": "tool", "name": forced.name},
    }


class AnthropicProvider(HTTPProvider):
    name = "anthropic"

    def __init__(self, base_url: str = DEFAULT_BASE_URL, model: str = "claude-3-5-haiku-latest",
                 api_key: str | None = None, *, window: int = DEFAULT_WINDOW, timeout: float = 60.0,
                 connect_timeout: float = 10.0, retry: RetryPolicy = RetryPolicy(),
                 transport: httpx.BaseTransport | None = None) -> None:
        super().__init__(base_url, model, api_key, window=window, timeout=timeout, connect_timeout=connect_timeout,
                         retry=retry, transport=transport)

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION, "Accept": "text/event-stream"}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def request_body(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.7,
                     tools: Sequence[ToolSpec] = (), tool_choice: str = AUTO) -> dict[str, Any]:
        return self._payload(messages, max_tokens, temperature, None, tools, tool_choice)

    def _payload(self, messages: list[Message], max_tokens: int, temperature: float,
                 json_schema: dict[str, Any] | None, tools: Sequence[ToolSpec], tool_choice: str) -> dict[str, Any]:
        system, turns = to_anthropic(messages, json_schema)
        payload: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "temperature": temperature,
                                   "messages": turns, "stream": True, **tool_fields(tools, tool_choice)}
        if system:
            payload["system"] = system
        return payload

    def stream_chat(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.7,
                    json_schema: dict[str, Any] | None = None, cancel: CancelToken | None = None,
                    tools: Sequence[ToolSpec] = (), tool_choice: str = AUTO) -> Iterator[ChatChunk]:
        """The reply's text as it streams; its tool_use blocks, each input parsed at its block's end, on the last
        chunk (input that is not a JSON object is kept as {"_unparsed": raw}, see tool_calls.parse_arguments)."""
        if not 0 <= temperature <= MAX_TEMPERATURE:  # the API answers 400; said here, before anything is sent
            raise ValueError(f"Anthropic takes a temperature from 0 to {MAX_TEMPERATURE:g}, not {temperature:g}")
        cancel = cancel or CancelToken()
        payload = self._payload(messages, max_tokens, temperature, json_schema, tools, tool_choice)
        request = self._client.build_request("POST", f"{self.base_url}/v1/messages", headers=self._headers(),
                                             json=payload)
        response = open_stream(self._client, request, server=self.server, model=self.model, secret=self._api_key,
                               retry=self._retry, cancel=cancel, key_hint=self._key_hint)
        parts: list[str] = []
        # tool_use blocks by their index: (id, name, the input's JSON pieces) until the block stops.
        open_calls: dict[int | None, tuple[str, str, list[str]]] = {}  # by the block's index
        calls: list[ToolCall] = []
        input_tokens = output_tokens = None
        finish: str | None = None
        stopped = False
        try:
            for event in iter_sse(response.iter_lines()):
                if cancel.cancelled:
                    break
                data = self._event_json(event.data)
                kind = data.get("type", event.event)
                if kind == "message_start":
                    usage = (data.get("message") or {}).get("usage") or {}
                    input_tokens = usage.get("input_tokens", input_tokens)
                    output_tokens = usage.get("output_tokens", output_tokens)
                elif kind == "content_block_start":
                    block = data.get("content_block") or {}
                    if block.get("type") == "tool_use":
                        open_calls[data.get("index")] = (str(block.get("id", "")), str(block.get("name", "")), [])
                elif kind == "content_block_delta":
                    delta = data.get("delta") or {}
                    if delta.get("type") == "text_delta" and delta.get("text"):
                        parts.append(delta["text"])
                        yield ChatChunk(text=delta["text"])
                    elif delta.get("type") == "input_json_delta" and data.get("index") in open_calls:
                        open_calls[data["index"]][2].append(delta.get("partial_json") or "")
                elif kind == "content_block_stop" and data.get("index") in open_calls:
                    call_id, name, pieces = open_calls.pop(data["index"])
                    calls.append(ToolCall(call_id, name, parse_arguments("".join(pieces))))
                elif kind == "message_delta":
                    reason = (data.get("delta") or {}).get("stop_reason")
                    finish = STOP_REASONS.get(reason, reason) if reason else finish
                    output_tokens = (data.get("usage") or {}).get("output_tokens", output_tokens)
                elif kind == "message_stop":
                    stopped = True
                    break
                elif kind == "error":
                    raise self._stream_error(data)
                # ping, text blocks' start and stop, and future event types carry nothing we need.
        except (httpx.HTTPError, ProviderError) as exc:
            raise stream_failure(exc, server=self.server, partial="".join(parts), cancel=cancel) from exc
        finally:
            response.close()
        if cancel.cancelled:
            raise Cancelled(partial="".join(parts))
        if not stopped:
            raise StreamInterrupted(f"{self.server} ended the stream before the reply was complete",
                                    partial="".join(parts))
        usage = (Usage(prompt_tokens=input_tokens, completion_tokens=output_tokens or 0)
                 if isinstance(input_tokens, int) else None)
        yield ChatChunk(done=True, usage=usage, finish_reason=finish, tool_calls=tuple(calls))

    def _stream_error(self, data: dict[str, Any]) -> ProviderError:
        error = data.get("error") or {}
        kind = str(error.get("type", "error"))
        detail = scrub(str(error.get("message", kind)), self._api_key)
        if any(marker in detail.lower() for marker in CONTEXT_ERROR_MARKERS):
            return ContextLengthExceeded(f"{self.server}: the prompt is longer than the model's context window: {detail}")
        if kind in ("overloaded_error", "api_error"):
            return ServerError(f"{self.server} failed mid-stream ({kind}): {detail}")
        return ProviderError(f"{self.server} reported an error mid-stream ({kind}): {detail}")

    def count_tokens(self, text: str) -> int | None:
        return None

    def tokenizer_name(self) -> str | None:
        return None

    def list_models(self) -> list[str]:
        payload = get_json(self._client, f"{self.base_url}/v1/models", headers=self._headers(), server=self.server,
                           model=self.model, secret=self._api_key, key_hint=self._key_hint)
        entries = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(entries, list):
            raise MalformedResponse(f"{self.server}/v1/models did not return a list of models")
        return [str(e["id"]) for e in entries if isinstance(e, dict) and "id" in e]

    def context_window(self) -> int:
        return self._window if self._window is not None else DEFAULT_WINDOW  # always given (__init__)
