"""The key/value metadata at the head of a GGUF file, read without llama.cpp: a quick check that a chosen file is a
model at all (before any process loads it), its context window, chat template and name.

Layout (GGUF v2/v3, little-endian): magic b"GGUF", uint32 version, uint64 tensor count, uint64 key/value count, then
each pair as a string key (uint64 length + UTF-8), a uint32 value type and the value. Arrays (the vocabulary's
tokens, tens of thousands of strings) are skipped, not kept.
"""

from __future__ import annotations

import functools
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .base import ProviderUnavailable

MAGIC = b"GGUF"
# value type -> struct format of a fixed-size scalar
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
# A key or string longer than this is a damaged file, not a model (chat templates are a few kilobytes).
MAX_STRING = 16 * 1024 * 1024
MAX_DIMENSIONS = 4  # ggml's GGML_MAX_DIMS
DEFAULT_ALIGNMENT = 32  # of the tensor data, unless general.alignment says
# ggml type -> (values per block, bytes per block), for the common types (ggml's type traits): float, the legacy
# quantizations and the k-quants.
_BLOCKS = {0: (1, 4), 1: (1, 2), 30: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
           10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210)}


class NotAModel(ProviderUnavailable):
    """The file is not a readable GGUF model; the message names the file and what is wrong."""


def unreadable(path: Path, exc: OSError) -> NotAModel:
    """A file that cannot be read (gone since it was chosen, a folder, no permission), named with why."""
    return NotAModel(f"cannot read the model file {path}: {exc.strerror or exc}")


@dataclass(frozen=True)
class GGUFInfo:
    path: Path
    name: str
    architecture: str
    context_length: int | None
    chat_template: str | None


def _read(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError
    return data


def _scalar(stream: IO[bytes], value_type: int) -> Any:
    fmt = _SCALARS[value_type]
    return struct.unpack(fmt, _read(stream, struct.calcsize(fmt)))[0]


def _string(stream: IO[bytes]) -> str:
    (length,) = struct.unpack("<Q", _read(stream, 8))
    if length > MAX_STRING:
        raise ValueError(f"a string of {length} bytes")
    return _read(stream, length).decode("utf-8", "replace")


def _value(stream: IO[bytes], value_type: int) -> Any:
    if value_type == _STRING:
        return _string(stream)
    if value_type == _ARRAY:
        item_type, count = struct.unpack("<IQ", _read(stream, 12))
        if item_type in _SCALARS:
            stream.seek(struct.calcsize(_SCALARS[item_type]) * count, 1)
        elif item_type == _STRING:
            for _ in range(count):
                (length,) = struct.unpack("<Q", _read(stream, 8))
                stream.seek(length, 1)
        else:
            raise ValueError(f"an array of value type {item_type}")
        return None
    if value_type in _SCALARS:
        return _scalar(stream, value_type)
    raise ValueError(f"value type {value_type}")


def _data_end(stream: IO[bytes], tensors: int, alignment: Any) -> int:
    """Where the last tensor's data ends, at least, from the tensor infos after the metadata: each a name, its
    dimensions, its type and its data's offset from the aligned start of the data. A type whose block size is not in
    _BLOCKS counts as its offset alone (a bound that is never too high: a whole file is never taken for cut short)."""
    step = alignment if isinstance(alignment, int) and alignment > 0 else DEFAULT_ALIGNMENT
    end = 0
    for _ in range(tensors):
        _string(stream)
        (dimensions,) = struct.unpack("<I", _read(stream, 4))
        if dimensions > MAX_DIMENSIONS:
            raise ValueError(f"a tensor of {dimensions} dimensions")
        shape = struct.unpack(f"<{dimensions}Q", _read(stream, 8 * dimensions))
        kind, offset = struct.unpack("<IQ", _read(stream, 12))
        elements = math.prod(shape)
        values, size = _BLOCKS.get(kind, (elements or 1, 0))
        end = max(end, offset + elements // values * size)
    start = -(-stream.tell() // step) * step
    return start + end


def read_metadata(path: Path) -> dict[str, Any]:
    """The file's key/value metadata (arrays as None); raises NotAModel naming the file if it is not a GGUF."""
    try:
        with open(path, "rb") as stream:
            if stream.read(4) != MAGIC:
                raise NotAModel(f"{path} is not a GGUF model file (it does not start with 'GGUF'); choose a .gguf "
                                "model file")
            version, tensors, pairs = struct.unpack("<IQQ", _read(stream, 20))
            if version < 2:
                raise NotAModel(f"{path} is a GGUF version {version} file; llama.cpp reads versions 2 and 3")
            metadata = {}
            for _ in range(pairs):
                key = _string(stream)
                (value_type,) = struct.unpack("<I", _read(stream, 4))
                metadata[key] = _value(stream, value_type)
            needed = _data_end(stream, tensors, metadata.get("general.alignment"))
            size = os.fstat(stream.fileno()).st_size
            if size < needed:
                raise NotAModel(f"{path} is cut short: it has {size:,} bytes of the {needed:,} its weights take (an "
                                f"unfinished download or copy); download or copy it again")
            return metadata
    except NotAModel:
        raise
    except EOFError:
        raise NotAModel(f"{path} is cut short: its GGUF header ends early (an unfinished download or copy); "
                        "download or copy it again") from None
    except (ValueError, struct.error) as exc:
        raise NotAModel(f"{path} has a damaged GGUF header ({exc})") from None
    except OSError as exc:
        raise unreadable(path, exc) from None


def read_info(path: Path) -> GGUFInfo:
    """The file's name, architecture, context window and chat template (read once per version of the file: the
    header of a large vocabulary takes tens of milliseconds to walk)."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise unreadable(path, exc) from None
    return _read_info(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _read_info(path: Path, _size: int, _mtime_ns: int) -> GGUFInfo:
    metadata = read_metadata(path)
    architecture = str(metadata.get("general.architecture") or "")
    context = metadata.get(f"{architecture}.context_length")
    template = metadata.get("tokenizer.chat_template")
    return GGUFInfo(path=path, name=str(metadata.get("general.name") or path.stem), architecture=architecture,
                    context_length=int(context) if isinstance(context, int) and context > 0 else None,
                    chat_template=template if isinstance(template, str) and template.strip() else None)
