"""Local models already on this machine: GGUF files in Precis's own models folder (catalogue downloads), in the folders
of LM Studio, Jan, GPT4All and llama.cpp's cache, and the models of an Ollama server on this machine when one
answers. Nothing is downloaded.

Both look-ups touch the disk or the network: call them off the GUI thread.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .gguf import NotAModel, read_info, unreadable

OLLAMA_URL = "http://localhost:11434"
# Where Ollama's own clients look for its server ("host:port" or a URL), as they do.
OLLAMA_HOST_ENV = "OLLAMA_HOST"
OLLAMA_TIMEOUT_SECONDS = 0.5
# (app, folder under the home folder) in the order shown
MODEL_FOLDERS: tuple[tuple[str, str], ...] = (
    ("LM Studio", ".lmstudio/models"),
    ("LM Studio", ".cache/lm-studio/models"),
    ("Jan", "jan/models"),
    ("Jan", ".local/share/Jan/data/models"),
    ("GPT4All", ".local/share/nomic.ai/GPT4All"),
    ("llama.cpp", ".cache/llama.cpp"),
)
LLAMA_CACHE_ENV = "LLAMA_CACHE"
DOWNLOADED = "downloaded"  # the source shown for a file in Precis's own models folder
# Model folders hold a few levels (publisher/model/file.gguf); deeper trees are not models.
MAX_DEPTH = 4


@dataclass(frozen=True)
class FoundModel:
    """A model to offer: a GGUF file (`path`), or a model an Ollama server serves (`base_url` and `name`)."""

    source: str  # the app whose folder or server it is in
    name: str
    path: Path | None = None
    base_url: str | None = None
    size: int | None = None  # bytes
    context_length: int | None = None  # tokens, from a GGUF's header
    problem: str | None = None  # why a file found cannot be used (its header is not a GGUF's)

    @property
    def label(self) -> str:
        return f"{self.name} ({self.source})"


def model_folders(home: Path | None = None, env: Mapping[str, str] | None = None,
                  downloads: Path | None = None) -> list[tuple[str, Path]]:
    """Where GGUF files are looked for: `downloads` (Precis's models folder) first, then each app's."""
    home = home or Path.home()
    env = os.environ if env is None else env
    folders = [(DOWNLOADED, downloads)] if downloads is not None else []
    folders += [(app, home / folder) for app, folder in MODEL_FOLDERS]
    if env.get(LLAMA_CACHE_ENV):
        folders.append(("llama.cpp", Path(env[LLAMA_CACHE_ENV]).expanduser()))
    return folders


def _gguf_files(folder: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(folder, onerror=lambda _error: None):
        if len(Path(root).relative_to(folder).parts) >= MAX_DEPTH:
            dirs.clear()
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        # Split models name their first part ...-00001-of-00003.gguf; llama.cpp loads the rest from it.
        found += [Path(root) / name for name in sorted(files)
                  if name.lower().endswith(".gguf") and ("-of-" not in name or "-00001-of-" in name)]
    return found


def find_gguf_models(home: Path | None = None, env: Mapping[str, str] | None = None,
                     downloads: Path | None = None) -> list[FoundModel]:
    """The GGUF files in the usual model folders (each file once, under the first app whose folder holds it). A
    download not finished is a .part file, never listed."""
    seen: set[Path] = set()
    models = []
    for app, folder in model_folders(home, env, downloads):
        if not folder.is_dir():
            continue
        for path in _gguf_files(folder):
            real = path.resolve()
            if real not in seen:
                seen.add(real)
                models.append(describe_gguf(path, app))
    return models


def describe_gguf(path: Path, source: str) -> FoundModel:
    """The file as a model to offer: its size and, from its header, its context window (or why it is no model)."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return FoundModel(source=source, name=path.stem, path=path, problem=str(unreadable(path, exc)))
    try:
        info = read_info(path)
    except NotAModel as exc:  # its size still tells a download cut short from a whole file
        return FoundModel(source=source, name=path.stem, path=path, size=size, problem=str(exc))
    return FoundModel(source=source, name=path.stem, path=path, size=size, context_length=info.context_length)


def ollama_server_url(env: Mapping[str, str] | None = None) -> str:
    """The Ollama server's address: OLLAMA_HOST when set, read as Ollama's own clients read it (a URL as it is; a
    bare "host" or "host:port" over http, on port 11434 unless it says), else localhost:11434."""
    host = (os.environ if env is None else env).get(OLLAMA_HOST_ENV, "").strip().rstrip("/")
    if not host:
        return OLLAMA_URL
    if "://" in host:
        return host
    return f"http://{host}" if urlsplit(f"http://{host}").port else f"http://{host}:11434"


def find_ollama_models(base_url: str | None = None, timeout: float = OLLAMA_TIMEOUT_SECONDS) -> list[FoundModel]:
    """The models of the Ollama server at `base_url` (None: ollama_server_url()) (GET /api/tags), or none when nothing
    answers in time.

    They are chatted with through Ollama's OpenAI-compatible endpoint, `base_url`/v1."""
    import httpx

    base_url = base_url or ollama_server_url()
    try:
        response = httpx.get(f"{base_url}/api/tags", timeout=timeout)
        response.raise_for_status()
        entries = response.json().get("models")
    except (httpx.HTTPError, ValueError, AttributeError):
        return []  # no server, or not an Ollama one: nothing to show
    if not isinstance(entries, list):
        return []
    models = []
    for entry in entries:
        name = entry.get("name") or entry.get("model") if isinstance(entry, dict) else None
        if isinstance(name, str) and name:
            size = entry.get("size")
            models.append(FoundModel(source="Ollama", name=name, base_url=f"{base_url}/v1",
                                     size=size if isinstance(size, int) and size > 0 else None))
    return models


def find_local_models(home: Path | None = None, env: Mapping[str, str] | None = None,
                      ollama_url: str | None = None, downloads: Path | None = None) -> list[FoundModel]:
    """Every model found on this machine: GGUF files first (those in `downloads`, Precis's models folder, first),
    then the models of the Ollama server at `ollama_url` (None: ollama_server_url(env))."""
    return find_gguf_models(home, env, downloads) + find_ollama_models(ollama_url or ollama_server_url(env))
