"""`precis models`: the catalogue of recommended local models and what is on disk; `models get NAME` downloads one
(the only command that contacts the hub), `models rm NAME` deletes it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..model.counted import counted
from ..models.catalogue import (
    UNVERIFIED,
    CatalogueEntry,
    CatalogueError,
    answer_rate_text,
    find_entry,
    models_folder,
    on_disk,
    read_catalogue,
    size_text,
)
from ..providers.discovery import FoundModel, find_gguf_models
from .group import cli, data_dir_option

BAD_INPUT, FAILED, INTERRUPTED = 2, 1, 130


@cli.group("models", invoke_without_command=True, short_help="The recommended local models, and those on disk.")
@click.option("--json", "as_json", is_flag=True, help="print JSON, for scripts")
@data_dir_option
@click.pass_context
def models_command(ctx: click.Context, as_json: bool, data_dir: str | None) -> int | None:
    """List the catalogue of recommended local models and the GGUF files on this computer. Contacts no server."""
    if ctx.invoked_subcommand is not None:
        return None
    from ..models.download import offline_reason

    try:
        entries = read_catalogue()
    except CatalogueError as exc:
        print(f"precis models: {exc}", file=sys.stderr)
        return FAILED
    folder = models_folder(data_dir)
    found = find_gguf_models(downloads=folder)
    if as_json:
        print(json.dumps({
            "models_folder": str(folder),
            "downloads_off": offline_reason(),
            "catalogue": [_entry_json(entry, folder) for entry in entries],
            "on_disk": [{"name": m.name, "source": m.source, "path": str(m.path), "size": m.size,
                         "context_window": m.context_length, "problem": m.problem} for m in found],
        }, indent=2, ensure_ascii=False))
    else:
        _print_listing(entries, folder, found, offline_reason())
    return 0


def _entry_json(entry: CatalogueEntry, folder: Path) -> dict:
    disk = on_disk(entry, folder)
    return {**entry.__dict__, "state": disk.state, "path": str(disk.path) if disk.path else None,
            "partial_bytes": disk.partial_bytes}


def _print_listing(entries: list[CatalogueEntry], folder: Path, found: list[FoundModel], off: str | None) -> None:
    print(f"catalogue (precis models get NAME downloads one to {folder}):")
    rows = [("name", "download", "memory", "context", "answers", "licence", "on disk")]
    for entry in entries:
        disk = on_disk(entry, folder)
        state = disk.state if not disk.partial_bytes else f"partial ({size_text(disk.partial_bytes)})"
        rows.append((entry.name, size_text(entry.download_bytes) or UNVERIFIED,
                     size_text(entry.memory_bytes) or UNVERIFIED,
                     f"{entry.context_window:,}" if entry.context_window else UNVERIFIED,
                     answer_rate_text(entry.answer_rate), entry.licence, state))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    if off:
        print(f"({off})")
    print(f"on disk: {counted(len(found), 'GGUF file')}")
    for model in found:
        detail = model.problem or ", ".join(part for part in (size_text(model.size), model.context_length and
                                                              f"{model.context_length:,} tokens") if part)
        print(f"  {model.name} ({model.source}): {detail}  {model.path}")


@models_command.command("get")
@click.argument("name")
@data_dir_option
def get_command(name: str, data_dir: str | None) -> int:
    """Download a catalogue model from the Hugging Face hub (resumed if a download of it was stopped)."""
    from ..models.download import DownloadError, download

    try:
        entry = find_entry(name)
    except CatalogueError as exc:
        print(f"precis models get: {exc}", file=sys.stderr)
        return BAD_INPUT
    folder = models_folder(data_dir)
    bar = _ProgressBar(entry)
    try:
        path = download(entry, folder, on_progress=bar.show)
    except DownloadError as exc:
        bar.end()
        print(f"precis models get: {exc}", file=sys.stderr)
        return FAILED
    except KeyboardInterrupt:  # Ctrl-C: the .part is kept, as a pause keeps it; the line says so, not "interrupted"
        bar.end()
        print(f"precis models get: {_stopped(entry, folder)}", file=sys.stderr)
        return INTERRUPTED
    bar.end()
    print(f"{entry.name}: {path}")
    return 0


def _stopped(entry: CatalogueEntry, folder: Path) -> str:
    kept = on_disk(entry, folder).partial_bytes
    if not kept:
        return f"{entry.name}: stopped (Ctrl-C) before any of it was fetched"
    return (f"{entry.name}: stopped (Ctrl-C) with {size_text(kept)} kept; `precis models get {entry.name}` "
            "resumes it")


@models_command.command("rm")
@click.argument("name")
@data_dir_option
def rm_command(name: str, data_dir: str | None) -> int:
    """Delete a downloaded catalogue model, and any download of it not finished."""
    from ..models.download import remove

    try:
        entry = find_entry(name)
    except CatalogueError as exc:
        print(f"precis models rm: {exc}", file=sys.stderr)
        return BAD_INPUT
    removed = remove(entry, models_folder(data_dir))
    for path in removed:
        print(f"deleted {path}")
    if not removed:
        print(f"{entry.name} is not on disk")
    return 0


class _ProgressBar:
    """One line on stderr, redrawn in place on a terminal; elsewhere (a log) nothing until the end."""

    WIDTH = 30

    def __init__(self, entry: CatalogueEntry) -> None:
        self._entry = entry
        self._live = sys.stderr.isatty()
        self._drawn = False

    def show(self, progress) -> None:
        if not self._live:
            return
        share = progress.done / progress.total if progress.total else 0.0
        filled = int(share * self.WIDTH)
        if progress.checking:
            tail = "checking the sha256"
        else:
            speed = f"{size_text(int(progress.bytes_per_second))}/s" if progress.bytes_per_second else ""
            left = progress.seconds_left
            tail = " · ".join(part for part in (speed, left is not None and f"{_duration(left)} left") if part)
        line = (f"{self._entry.name} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {share:4.0%} "
                f"{size_text(progress.done)} of {size_text(progress.total)}  {tail}")
        sys.stderr.write("\r" + line.ljust(100)[:100])
        sys.stderr.flush()
        self._drawn = True

    def end(self) -> None:
        if self._drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
