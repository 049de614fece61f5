"""OpenAI-compatible Chat Completions over httpx: OpenAI, Ollama, LM Studio, vLLM, llama.cpp servers, OpenRouter."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
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
    StreamInterrupted,
    Usage,
)
from .cancellable import cancellable
from .render import paired_call_ids, tool_call_text, tool_result_text
from .sse import iter_sse
from .tool_calls import forced_tool, new_call_id, parse_arguments
from .transport import (
    CONTEXT_ERROR_MARKERS,
    HTTPProvider,
    RetryPolicy,
    error_for_status,
    get_json,
    open_stream,
    scrub,
    server_detail,
    stream_failure,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_WINDOW = 8192
# Fields servers use in /models entries for the context window (OpenRouter, vLLM, LM Studio, llama.cpp).
_WINDOW_FIELDS = ("context_length", "context_window", "max_model_len", "max_context_length", "n_ctx", "n_ctx_train")


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Our messages as Chat Completions messages; tool calls and results go natively only as complete pairs."""
    paired = paired_call_ids(messages)
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            if message.tool_call_id in paired:
                out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
            else:
                out.append({"role": "user", "content": tool_result_text(message)})
            continue
        entry: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.tool_calls:
            native = [call for call in message.tool_calls if call.id in paired]
            as_text = [tool_call_text(call) for call in message.tool_calls if call.id not in paired]
            # "" rather than null: chat templates of local servers concatenate content as a string.
            entry["content"] = "\n".join([message.content, *as_text]).strip()
            if native:
                entry["tool_calls"] = [
                    {"id": call.id, "type": "function",
                     "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}}
                    for call in native
                ]
        out.append(entry)
    return out


def tool_fields(tools: Sequence[ToolSpec], tool_choice: str) -> dict[str, Any]:
    """The request's `tools` and `tool_choice`, or nothing without tools. A forced call is sent as that tool alone
    with "required": the same demand as the named form to OpenAI, and the form llama.cpp's server honours (it takes
    tool_choice as a string only, and drops the named object with a logged warning)."""
    forced = forced_tool(tools, tool_choice)
    if not tools:
        return {}
    return {
        "tools": [{"type": "function", "function": {"name": spec.name, "description": spec.description,
                                                    "parameters": spec.parameters}}
                  for spec in (tools if forced is None else [forced])],
        "tool_choice": tool_choice if forced is None else "required",
    }


@dataclass
class _StreamedCall:
    """One call as its delta.tool_calls fragments arrive: id and name once, the arguments in pieces."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ToolCallAssembler:
    """Joins the streamed fragments of a reply's calls by their index (parallel calls interleave)."""

    def __init__(self) -> None:
        self._calls: dict[int, _StreamedCall] = {}

    def add(self, fragments: list[dict[str, Any]]) -> None:
        for fragment in fragments:
            # A server that streams each call whole may leave out the index: it is then the next call.
            index = fragment.get("index", len(self._calls))
            call = self._calls.setdefault(index, _StreamedCall())
            call.id = fragment.get("id") or call.id
            function = fragment.get("function") or {}
            call.name = function.get("name") or call.name
            if function.get("arguments"):
                call.arguments.append(function["arguments"])

    def calls(self, server: str) -> tuple[ToolCall, ...]:
        """The whole calls, in index order. Arguments that are not a JSON object are kept as {"_unparsed": raw}
        (tool_calls.parse_arguments); a call without an id gets one."""
        out = []
        for index in sorted(self._calls):
            call = self._calls[index]
            if not call.name:
                raise MalformedResponse(f"{server} sent tool call {index} without the name of its function")
            out.append(ToolCall(call.id or new_call_id(), call.name, parse_arguments("".join(call.arguments))))
        return tuple(out)


def _window_from_models(payload: object, model: str) -> int | None:
    entries = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        return None
    candidates = [e for e in entries if isinstance(e, dict) and e.get("id") == model] or (
        entries if len(entries) == 1 else [])
    for entry in candidates:
        for source in (entry, entry.get("meta") or {}, entry.get("top_provider") or {}):
            for key in _WINDOW_FIELDS:
                value = source.get(key) if isinstance(source, dict) else None
                if isinstance(value, int) and value > 0:
                    return value
    return None


class OpenAICompatProvider(HTTPProvider):
    """Streams /chat/completions with SSE; the usage the server reports feeds the engine's token calibration."""

    name = "openai"

    def __init__(self, base_url: str = DEFAULT_BASE_URL, model: str = "gpt-4o-mini", api_key: str | None = None, *,
                 window: int | None = None, timeout: float = 60.0, connect_timeout: float = 10.0,
                 retry: RetryPolicy = RetryPolicy(), transport: httpx.BaseTransport | None = None) -> None:
        super().__init__(base_url, model, api_key, window=window, timeout=timeout, connect_timeout=connect_timeout,
                         retry=retry, transport=transport)
        # Servers that reject response_format json_schema (llama-cpp-python's) get json_object + schema instead.
        self._schema_format = "json_schema"

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def request_body(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.7,
                     tools: Sequence[ToolSpec] = (), tool_choice: str = AUTO) -> dict[str, Any]:
        return self._payload(messages, max_tokens, temperature, None, tool_fields(tools, tool_choice))

    def _payload(self, messages: list[Message], max_tokens: int, temperature: float,
                 json_schema: dict[str, Any] | None, tools: dict[str, Any]) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(messages),
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
            **tools,
        }
        if json_schema is not None:
            if self._schema_format == "json_schema":
                payload["response_format"] = {
                    "type": "json_schema", "json_schema": {"name": "summary", "schema": json_schema, "strict": True}}
            else:
                payload["response_format"] = {"type": "json_object", "schema": json_schema}
        return payload

    def _open(self, messages, max_tokens, temperature, json_schema, tools, cancel) -> httpx.Response:
        rejected_format: list[bool] = []

        def format_rejected(status: int, body: str) -> bool:
            if json_schema is not None and self._schema_format == "json_schema" and "response_format" in body:
                rejected_format.append(True)
                return True
            return False

        for _ in range(2):
            request = self._client.build_request(
                "POST", f"{self.base_url}/chat/completions", headers=self._headers(),
                json=self._payload(messages, max_tokens, temperature, json_schema, tools))
            try:
                return open_stream(self._client, request, server=self.server, model=self.model, secret=self._api_key,
                                   retry=self._retry, cancel=cancel, key_hint=self._key_hint, final=format_rejected)
            except ProviderError:
                if not rejected_format:
                    raise
                self._schema_format = "json_object"
                rejected_format.clear()
        raise AssertionError("unreachable: the second attempt returns or raises")

    def stream_chat(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.7,
                    json_schema: dict[str, Any] | None = None, cancel: CancelToken | None = None,
                    tools: Sequence[ToolSpec] = (), tool_choice: str = AUTO) -> Iterator[ChatChunk]:
        """The reply's text as it streams; its tool calls, assembled from their fragments, on the last chunk."""
        cancel = cancel or CancelToken()
        sent_tools = tool_fields(tools, tool_choice)
        response = self._open(messages, max_tokens, temperature, json_schema, sent_tools, cancel)
        parts: list[str] = []
        calls = ToolCallAssembler()
        usage: Usage | None = None
        finish: str | None = None
        done = False
        try:
            for event in iter_sse(response.iter_lines()):
                if cancel.cancelled:
                    break
                if event.data.strip() == "[DONE]":
                    done = True
                    break
                chunk = self._parse_chunk(event.data)
                if chunk.get("usage"):
                    usage = self._parse_usage(chunk["usage"])
                for choice in chunk.get("choices") or ():
                    delta = choice.get("delta") or {}
                    text = delta.get("content")
                    if text:
                        parts.append(text)
                        yield ChatChunk(text=text)
                    calls.add(delta.get("tool_calls") or [])
                    finish = choice.get("finish_reason") or finish
        except (httpx.HTTPError, ProviderError) as exc:
            raise stream_failure(exc, server=self.server, partial="".join(parts), cancel=cancel) from exc
        finally:
            response.close()
        if cancel.cancelled:
            raise Cancelled(partial="".join(parts))
        if not done and finish is None:
            if not parts and usage is None:
                with cancellable(cancel):
                    self._diagnose_empty_stream(messages, temperature, json_schema, sent_tools)
            raise StreamInterrupted(f"{self.server} ended the stream before the reply was complete",
                                    partial="".join(parts))
        tool_calls = calls.calls(self.server)
        # A server may finish a reply with calls as "stop": the calls say what it is.
        yield ChatChunk(done=True, usage=usage, finish_reason="tool_calls" if tool_calls else finish,
                        tool_calls=tool_calls)

    def _diagnose_empty_stream(self, messages, temperature, json_schema, tools) -> None:
        """Raise the server's real error for a stream that closed without a single event.

        llama-cpp-python's server answers an over-long prompt with 200 and an empty stream; the same request
        without streaming (one token, one attempt) returns the 400 that says why, so the engine can summarize.
        """
        payload = self._payload(messages, 1, temperature, json_schema, tools)
        payload.pop("stream_options")
        payload["stream"] = False
        # The server may drop the connection it just failed on, so a reused one can be reset: try twice.
        for _ in range(2):
            try:
                response = self._client.post(f"{self.base_url}/chat/completions", headers=self._headers(),
                                             json=payload)
                break
            except httpx.TransportError:
                continue
        else:
            return
        if response.status_code >= 400:
            raise error_for_status(response.status_code, response.text, response.headers, server=self.server,
                                   model=self.model, secret=self._api_key, key_hint=self._key_hint)

    def _parse_chunk(self, data: str) -> dict[str, Any]:
        chunk = self._event_json(data)
        if chunk.get("error"):
            detail = scrub(server_detail(json.dumps(chunk)), self._api_key)
            if any(marker in detail.lower() for marker in CONTEXT_ERROR_MARKERS):
                raise ContextLengthExceeded(f"{self.server}: the prompt is longer than the model's context window: {detail}")
            raise ProviderError(f"{self.server} reported an error mid-stream: {detail}")
        return chunk

    def _parse_usage(self, raw: Any) -> Usage | None:
        if not isinstance(raw, dict):
            return None
        prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int):
            return Usage(prompt_tokens=prompt, completion_tokens=completion)
        return None

    def count_tokens(self, text: str) -> int | None:
        return None

    def tokenizer_name(self) -> str | None:
        return None

    def list_models(self) -> list[str]:
        payload = self._get_models()
        entries = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(entries, list):
            raise MalformedResponse(f"{self.server}/models did not return a list of models")
        return [str(e["id"]) for e in entries if isinstance(e, dict) and "id" in e]

    def _get_models(self) -> object:
        return get_json(self._client, f"{self.base_url}/models", headers=self._headers(), server=self.server,
                        model=self.model, secret=self._api_key, key_hint=self._key_hint)

    def context_window(self) -> int:
        """The configured window, else what /models says (asked once; may block briefly), else 8192."""
        if self._window is None:
            try:
                found = _window_from_models(self._get_models(), self.model)
            except ProviderError:
                return DEFAULT_WINDOW
            self._window = found or DEFAULT_WINDOW
        return self._window
