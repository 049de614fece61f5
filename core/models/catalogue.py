"""The catalogue of recommended local models (catalogue.json beside this file) and what of it is on disk.

Reading it touches no network: the catalogue is data in the repository, and the models folder is a folder in the data
folder. Downloading is download.py's, and only ever on request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..storage.paths import data_dir

CATALOGUE_FILE = Path(__file__).with_name("catalogue.json")
MODELS_FOLDER = "models"  # in the data folder: where downloads go, listed by the picker with the other GGUFs
PARTIAL_SUFFIX = ".part"  # a download not finished (or not checked): never a .gguf, so never listed or loaded
UNVERIFIED = "unverified"
NOT_MEASURED = "not measured"


class CatalogueError(ValueError):
    """The catalogue file is malformed, or a name is not in it; the message says what and where."""


@dataclass(frozen=True)
class CatalogueEntry:
    name: str  # what `precis models get NAME` takes
    title: str
    repo: str  # the hub's repository id, owner/name
    file: str  # the GGUF file in it, and its name in the models folder
    download_bytes: int | None  # None: not confirmed from the publisher's page
    memory_bytes: int | None
    context_window: int | None
    licence: str
    source: str  # the page the figures came from
    answer_rate: float | None  # share of questions answered right (benchmarks.fidelity --answers); None: not measured

    def path(self, folder: Path) -> Path:
        return folder / self.file

    def partial_path(self, folder: Path, sha256: str) -> Path:
        """The file being downloaded, named by the content it must end up with: a partial of another version of the
        file is never resumed into this one."""
        return folder / f"{self.file}.{sha256[:16]}{PARTIAL_SUFFIX}"

    def partials(self, folder: Path) -> list[Path]:
        return sorted(folder.glob(f"{_glob_escape(self.file)}.*{PARTIAL_SUFFIX}")) if folder.is_dir() else []


_FIELDS: dict[str, tuple[type, ...]] = {
    "name": (str,), "title": (str,), "repo": (str,), "file": (str,), "download_bytes": (int, type(None)),
    "memory_bytes": (int, type(None)), "context_window": (int, type(None)), "licence": (str,), "source": (str,),
    "answer_rate": (float, int, type(None)),
}


def _glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _entry(raw: Any, where: str) -> CatalogueEntry:
    if not isinstance(raw, dict):
        raise CatalogueError(f"{where}: an entry must be an object")
    missing = sorted(set(_FIELDS) - set(raw))
    unknown = sorted(set(raw) - set(_FIELDS))
    if missing or unknown:
        raise CatalogueError(f"{where}: " + "; ".join(
            part for part in (missing and f"missing {', '.join(missing)}", unknown and f"unknown {', '.join(unknown)}")
            if part))
    for field, types in _FIELDS.items():
        value = raw[field]
        if not isinstance(value, types) or isinstance(value, bool):
            raise CatalogueError(f"{where}.{field}: {value!r} is not a {' or '.join(t.__name__ for t in types)}")
    if raw["repo"].count("/") != 1 or not raw["file"].endswith(".gguf") or "/" in raw["file"]:
        raise CatalogueError(f"{where}: repo must be owner/name and file a .gguf name ({raw['repo']!r}, {raw['file']!r})")
    rate = raw["answer_rate"]
    if rate is not None and not 0 <= rate <= 1:
        raise CatalogueError(f"{where}.answer_rate: {rate!r} is not a share between 0 and 1")
    return CatalogueEntry(**{**raw, "answer_rate": None if rate is None else float(rate)})


def read_catalogue(path: Path = CATALOGUE_FILE) -> list[CatalogueEntry]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CatalogueError(f"cannot read the model catalogue {path}: {exc}") from None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, list):
        raise CatalogueError(f"{path}: no list of models under \"models\"")
    entries = [_entry(raw, f"{path.name} models[{index}]") for index, raw in enumerate(models)]
    names = [entry.name for entry in entries]
    if len(set(names)) != len(names):
        raise CatalogueError(f"{path}: a name is given twice: {sorted({n for n in names if names.count(n) > 1})}")
    return entries


@dataclass(frozen=True)
class EmbeddedMeasure:
    """The built-in model's measured answers (benchmarks.fidelity --answers, the run docs/fidelity.md reports)."""

    title: str
    asked: int  # questions whose evidence was all summarized away
    answered: int  # of them, answered right from the prompt Precis assembled
    answer_in_prompt: int  # of them, the prompts that held the answer
    source: str

    @property
    def answer_rate(self) -> float:
        return self.answered / self.asked


def read_embedded(path: Path = CATALOGUE_FILE) -> EmbeddedMeasure:
    """The catalogue file's "embedded" section: what the built-in model's answers measured, to compare with."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CatalogueError(f"cannot read the model catalogue {path}: {exc}") from None
    raw = data.get("embedded") if isinstance(data, dict) else None
    where = f"{path.name} embedded"
    if not isinstance(raw, dict):
        raise CatalogueError(f"{where}: no object under \"embedded\"")
    fields = {"title": str, "asked": int, "answered": int, "answer_in_prompt": int, "source": str}
    for field, kind in fields.items():
        value = raw.get(field)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CatalogueError(f"{where}.{field}: {value!r} is not {'text' if kind is str else 'a whole number'}")
    if not 0 <= raw["answered"] <= raw["asked"] or not 0 <= raw["answer_in_prompt"] <= raw["asked"] or not raw["asked"]:
        raise CatalogueError(f"{where}: answered ({raw['answered']}) and answer_in_prompt ({raw['answer_in_prompt']}) "
                             f"must be counts of the {raw['asked']} questions asked")
    return EmbeddedMeasure(**{field: raw[field] for field in fields})


def find_entry(name: str, entries: list[CatalogueEntry] | None = None) -> CatalogueEntry:
    entries = read_catalogue() if entries is None else entries
    for entry in entries:
        if entry.name == name:
            return entry
    raise CatalogueError(f"no model named {name!r} in the catalogue; its names: {', '.join(e.name for e in entries)}")


def models_folder(override: str | None = None) -> Path:
    """The data folder's models folder (created): downloads land here, and the picker lists what is in it."""
    folder = data_dir(override) / MODELS_FOLDER
    folder.mkdir(exist_ok=True)
    return folder


@dataclass(frozen=True)
class OnDisk:
    """What of a catalogue entry is in the models folder: the finished file, or a partial download to resume."""

    path: Path | None  # the finished file
    partial_bytes: int  # bytes of a partial download (0: none)

    @property
    def state(self) -> str:
        if self.path is not None:
            return "downloaded"
        return "partial" if self.partial_bytes else "not downloaded"


def on_disk(entry: CatalogueEntry, folder: Path) -> OnDisk:
    path = entry.path(folder)
    partial = sum(p.stat().st_size for p in entry.partials(folder))
    return OnDisk(path=path if path.is_file() else None, partial_bytes=partial)


def size_text(size: int | None) -> str:
    """Bytes as people read them (decimal units, as the hub shows them); '' for None."""
    if size is None:
        return ""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:,.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    return ""


def answer_rate_text(rate: float | None) -> str:
    return NOT_MEASURED if rate is None else f"{rate:.0%}"
