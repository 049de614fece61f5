"""A GGUF model's vocabulary and chat template in the app, without its weights: exact counts in microseconds.

xllamacpp's Python API is a server (weights, a context, threads), which belongs in the model process. The app needs
the tokenizer alone, so it calls llama.cpp's own C functions, which xllamacpp's extension module exports, through
ctypes: `llama_model_load_from_file` with `vocab_only` set (no weights, no context, no compute kernels),
`llama_tokenize`, `llama_token_to_piece`. The model process runs the same build, so the app counts the very tokens
the model reads. The chat template is rendered as llama-cpp-python did (Jinja2, sandboxed, trim_blocks and
lstrip_blocks), and the prompt goes to the model as the token ids counted here.

ctypes needs `llama_model_params`'s layout, which llama.cpp changes between builds: `LAYOUT` is the one of the
pinned xllamacpp (pyproject.toml), checked against the defaults the library itself returns before any model loads.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from .base import ProviderUnavailable
from .gguf import read_info

LIBRARY_PACKAGE = "xllamacpp"


class _ModelParams(ctypes.Structure):
    """`struct llama_model_params` of llama.cpp b10105 and later (80 bytes): 72 bytes of pointers and enums, then
    the booleans vocab_only, check_tensors, use_extra_bufts, no_host, no_alloc, load_mtp."""

    _fields_ = [("head", ctypes.c_uint64 * 9), ("flags", ctypes.c_bool * 6), ("tail", ctypes.c_uint8 * 2)]


VOCAB_ONLY, USE_EXTRA_BUFTS = 0, 2  # indexes into _ModelParams.flags
# What llama_model_default_params() gives in that layout: n_gpu_layers -1 and split_mode 1 (layer) at byte 16; of
# the booleans, use_extra_bufts alone is set.
DEFAULT_GPU_LAYERS_AND_SPLIT = (1 << 32) | 0xFFFFFFFF
DEFAULT_FLAGS = (False, False, True, False, False, False)

_LogCallback = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


@_LogCallback
def _quiet(level: int, text: bytes, user_data: Any) -> None:
    """llama.cpp's log lines in the app (a vocabulary's loading prints dozens) go nowhere."""


def library_path() -> Path:
    """The extension module of the installed xllamacpp, found without importing it."""
    spec = importlib.util.find_spec(LIBRARY_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ProviderUnavailable("the local model cannot run: the Python package xllamacpp is missing (pip install xllamacpp)")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("xllamacpp*.so")) + sorted(Path(folder).glob("xllamacpp*.pyd"))
        if found:
            return found[0]
    raise ProviderUnavailable(f"the package xllamacpp at {spec.submodule_search_locations[0]} holds no library; reinstall it")


@functools.cache
def llama_library() -> ctypes.CDLL:
    """llama.cpp's C API from xllamacpp's library, its functions typed, its logging silenced, its layout checked."""
    lib = ctypes.CDLL(str(library_path()))
    p, i32 = ctypes.c_void_p, ctypes.c_int32
    for name, restype, argtypes in (
            ("llama_backend_init", None, []),
            ("llama_log_set", None, [_LogCallback, p]),
            ("llama_model_default_params", _ModelParams, []),
            ("llama_model_load_from_file", p, [ctypes.c_char_p, _ModelParams]),
            ("llama_model_free", None, [p]),
            ("llama_model_get_vocab", p, [p]),
            ("llama_vocab_bos", i32, [p]),
            ("llama_vocab_eos", i32, [p]),
            ("llama_tokenize", i32, [p, ctypes.c_char_p, i32, ctypes.POINTER(i32), i32, ctypes.c_bool, ctypes.c_bool]),
            ("llama_token_to_piece", i32, [p, i32, ctypes.c_char_p, i32, i32, ctypes.c_bool]),
            ("llama_model_n_params", ctypes.c_uint64, [p]),
    ):
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    lib.llama_log_set(_quiet, None)
    lib.llama_backend_init()
    defaults = lib.llama_model_default_params()
    if defaults.head[2] != DEFAULT_GPU_LAYERS_AND_SPLIT or tuple(defaults.flags) != DEFAULT_FLAGS:
        raise ProviderUnavailable(
            f"this xllamacpp ({library_path().parent}) lays out llama.cpp's model parameters otherwise than Precis "
            "reads them; install the version pyproject.toml names")
    return lib


def model_params(*, vocab_only: bool = False, extra_buffer_types: bool = True) -> _ModelParams:
    params = llama_library().llama_model_default_params()
    params.flags[VOCAB_ONLY] = vocab_only
    params.flags[USE_EXTRA_BUFTS] = extra_buffer_types
    return params


class ChatTemplate:
    """The GGUF's Jinja chat template, rendered as llama-cpp-python's Jinja2ChatFormatter did (and Hugging Face's
    apply_chat_template does): sandboxed, trim_blocks and lstrip_blocks, with bos/eos tokens, raise_exception,
    strftime_now and the reply's header (add_generation_prompt)."""

    def __init__(self, template: str, bos: str, eos: str) -> None:
        from jinja2 import BaseLoader
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        self.bos, self.eos = bos, eos
        self._template = ImmutableSandboxedEnvironment(loader=BaseLoader(), trim_blocks=True,
                                                       lstrip_blocks=True).from_string(template)

    def render(self, messages: list[dict[str, str]]) -> str:
        def raise_exception(message: str) -> None:
            raise ValueError(message)

        return self._template.render(messages=messages, bos_token=self.bos, eos_token=self.eos,
                                     add_generation_prompt=True, raise_exception=raise_exception,
                                     strftime_now=lambda f: datetime.now().strftime(f))


class Vocabulary:
    """One model file's vocabulary (llama.cpp's vocab_only model) and chat template; safe to use from many threads
    (llama_tokenize reads the vocabulary only, and ctypes leaves the interpreter's lock while it runs)."""

    def __init__(self, path: Path) -> None:
        info = read_info(path)  # a file that is not a GGUF gets an error naming it, not llama.cpp's
        if not info.chat_template:
            raise ProviderUnavailable(f"the model file {path} has no chat template (tokenizer.chat_template), so "
                                      "Precis cannot tell how to write a conversation for it")
        self.path = path
        self._lib = lib = llama_library()
        self._model = lib.llama_model_load_from_file(str(path).encode(), model_params(vocab_only=True))
        if not self._model:
            raise ProviderUnavailable(f"cannot load the vocabulary of the model file {path}: llama.cpp refused it")
        self._vocab = lib.llama_model_get_vocab(self._model)
        self._lock = threading.Lock()
        self.eos = self.piece(lib.llama_vocab_eos(self._vocab))
        self.template = ChatTemplate(info.chat_template, bos=self.piece(lib.llama_vocab_bos(self._vocab)), eos=self.eos)

    def piece(self, token: int) -> str:
        """The text of one token, special tokens written out ('<|im_end|>')."""
        buffer = ctypes.create_string_buffer(256)
        size = self._lib.llama_token_to_piece(self._vocab, token, buffer, len(buffer), 0, True)
        return buffer.raw[:max(size, 0)].decode("utf-8", "replace")

    def count(self, text: str) -> int:
        """Tokens of `text` as plain text (a special token's spelling counts as the text it is), asked for with no
        room for them: llama.cpp then answers minus the number it needs, without building the list."""
        data = text.encode("utf-8")
        return -self._lib.llama_tokenize(self._vocab, data, len(data), None, 0, False, False) if data else 0

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        """Token ids of `text`; with `special`, spelled special tokens ('<|im_start|>') are those tokens."""
        data = text.encode("utf-8")
        if not data:
            return []
        size = -self._lib.llama_tokenize(self._vocab, data, len(data), None, 0, False, special)
        tokens = (ctypes.c_int32 * size)()
        written = self._lib.llama_tokenize(self._vocab, data, len(data), tokens, size, False, special)
        return list(tokens[:written])

    def prompt_tokens(self, messages: list[dict[str, str]]) -> list[int]:
        """The exact tokens the model reads for these template messages, the reply's header included."""
        return self.tokenize(self.template.render(messages), special=True)

    def close(self) -> None:
        with self._lock:
            model, self._model = self._model, None
        if model:
            self._lib.llama_model_free(model)

