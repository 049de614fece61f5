"""Every chat of a store exported into a folder, a file each: what a database written by a newer Precis offers
(opened read-only: open_store's `newer_read_only`), so its chats can be read without updating."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy.exc import SQLAlchemyError

from .errors import StoreError
from .exporters import EXPORT_SUFFIXES, export_chat, write_export
from .store import Store


def file_name_for(title: str, format_: str) -> str:
    """A file name from a chat's title: letters, digits, dashes and underscores."""
    stem = re.sub(r"[^\w-]+", "-", title).strip("-")[:60] or "chat"
    return stem + EXPORT_SUFFIXES[format_]


@dataclass
class FolderExport:
    """What export_every_chat wrote, and the chats it could not read or write, with why."""

    written: list[Path] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (the chat's title, why)
    redacted: int = 0  # secrets replaced by [REDACTED:<kind>], in all

    def report(self) -> list[str]:
        """A sentence each: how many chats went where, and each one that did not, with why."""
        folder = self.written[0].parent if self.written else None
        lines = [f"Exported {len(self.written):,} chat{'s' * (len(self.written) != 1)}"
                 + (f" to {folder}." if folder else ".")]
        lines += [f"Not exported: {title!r}: {why}" for title, why in self.failed]
        if self.redacted:
            lines.append(f"{self.redacted:,} secret{'s' * (self.redacted != 1)} written as [REDACTED:<kind>].")
        return lines


def export_every_chat(store: Store, folder: Path, format_: str,
                      on_chat: Callable[[int, int, str], object] | None = None) -> FolderExport:
    """Each chat of `store` as a file of `format_` in `folder` (named from its title; a name taken gets a number),
    each written whole or not at all. A chat that cannot be read (a newer Precis's rows this one does not know) or
    written is left out, named with why; the rest go on. `on_chat(n, count, title)` as the n-th (from 0) begins."""
    chats = store.list_chats()
    done = FolderExport()
    taken: set[str] = {path.name for path in folder.iterdir()} if folder.is_dir() else set()
    for n, chat in enumerate(chats):
        if on_chat is not None:
            on_chat(n, len(chats), chat.title)
        name = file_name_for(chat.title, format_)
        stem, suffix = name[:-len(EXPORT_SUFFIXES[format_])], EXPORT_SUFFIXES[format_]
        number = 1
        while name in taken:
            number += 1
            name = f"{stem}-{number}{suffix}"
        taken.add(name)
        try:
            exported = export_chat(store, chat.id, format_)
            write_export(exported.pieces, folder / name)
        except (StoreError, SQLAlchemyError, ValidationError, OSError, ValueError) as exc:
            done.failed.append((chat.title, str(exc).splitlines()[0]))
            continue
        done.written.append(folder / name)
        done.redacted += exported.redacted
    return done
