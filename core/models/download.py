"""Downloading a catalogue model from the Hugging Face hub, on request only, through huggingface_hub.

The hub's HEAD on the file (get_hf_file_metadata) gives its size, its commit and its sha256 (the LFS ETag); the
library's http_get fetches the bytes (Range requests, retries on a dropped connection, the hub's errors). Both run
here rather than through hf_hub_download because that one (2.4.0) deletes its partial file on any failure and checks
no sha256: a paused, stalled or cut download must keep what it has, and a file must match the hub's sha256 before it
is called a model.

The bytes go to `<models folder>/<file>.<sha256 prefix>.part`, resumed from where they stopped; only a file whose
sha256 matches is renamed to `<file>` (a .gguf, so the picker lists it). huggingface_hub is imported here and nowhere
else, when a download is asked for; nothing at import or start-up contacts the hub.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from .catalogue import CatalogueEntry

# Set before huggingface_hub is imported (it reads them once): no telemetry, no update checks, no progress bars of
# its own (progress is reported through `on_progress`).
for _name in ("HF_HUB_DISABLE_TELEMETRY", "HF_HUB_DISABLE_UPDATE_CHECK", "HF_HUB_DISABLE_PROGRESS_BARS"):
    os.environ.setdefault(_name, "1")

HEAD_TIMEOUT_SECONDS = 10.0
# The library reads in 10 MB pieces; a megabyte keeps progress and pausing prompt on a slow line.
CHUNK_BYTES = 1024 * 1024
REPORT_SECONDS = 0.2  # at most five progress reports a second
SPEED_WINDOW_SECONDS = 5.0
SHA256 = re.compile(r"[0-9a-f]{64}")


class DownloadError(Exception):
    """A download that did not finish; the message says why, naming the model and the file."""


class HubUnreachable(DownloadError):
    """No answer from the hub (offline, or a stalled connection): what was fetched is kept for a resume."""


class NotOnHub(DownloadError):
    """The hub has no such repository or file (404)."""


class NotEnoughSpace(DownloadError):
    pass


class ChecksumMismatch(DownloadError):
    """The bytes fetched are not the file the hub describes; they are deleted."""


class Paused(DownloadError):
    """Stopped on request; what was fetched is kept and the next download of the model resumes it."""


@dataclass(frozen=True)
class Progress:
    done: int  # bytes on disk
    total: int
    bytes_per_second: float | None  # over the last few seconds; None before there is a measure
    checking: bool = False  # all bytes are in and the sha256 is being checked

    @property
    def seconds_left(self) -> float | None:
        if not self.bytes_per_second:
            return None
        return (self.total - self.done) / self.bytes_per_second


@dataclass(frozen=True)
class HubFile:
    url: str  # where the bytes are (the hub's redirect, when it gives one)
    size: int
    sha256: str
    commit: str | None


DEFAULT_ENDPOINT = "https://huggingface.co"


def hub_endpoint() -> str:
    """The hub's address: HF_ENDPOINT, as huggingface_hub's own setting (read at each download, not once at import, so
    a test can point it at a stand-in), else huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _library() -> Any:
    import huggingface_hub
    from huggingface_hub import constants

    constants.DOWNLOAD_CHUNK_SIZE = CHUNK_BYTES
    # Its warnings ("Trying to resume download...") would break into a progress bar; what stops a download is
    # reported by the DownloadError raised here.
    from huggingface_hub.utils import logging

    logging.set_verbosity_error()
    return huggingface_hub


def offline_reason() -> str | None:
    """Why downloads are off (HF_HUB_OFFLINE set), or None; read from the environment, without importing the library."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(name, "").upper() in {"1", "ON", "YES", "TRUE"}:
            return f"downloads are off: {name} is set"
    return None


def hub_file(entry: CatalogueEntry, timeout: float = HEAD_TIMEOUT_SECONDS) -> HubFile:
    """The hub's description of the entry's file (one HEAD request): its size, sha256 and where to fetch it."""
    hub = _library()
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    endpoint = hub_endpoint()
    url = hub.hf_hub_url(entry.repo, entry.file, endpoint=endpoint)
    try:
        meta = hub.get_hf_file_metadata(url, token=False, timeout=timeout, endpoint=endpoint)
    except OfflineModeIsEnabled:
        raise HubUnreachable(f"{entry.name}: downloads are off (HF_HUB_OFFLINE is set)") from None
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else None
        if status in (401, 403, 404):
            raise NotOnHub(f"{entry.name}: the hub has no file {entry.file} in {entry.repo} ({status})") from None
        raise DownloadError(f"{entry.name}: the hub refused {url}: {exc}") from None
    except httpx2.TransportError as exc:
        raise HubUnreachable(f"{entry.name}: cannot reach the hub at {endpoint}: {exc}") from None
    etag = (meta.etag or "").lower()
    if not SHA256.fullmatch(etag) or meta.size is None:
        raise DownloadError(f"{entry.name}: the hub gave no sha256 and size for {entry.file} in {entry.repo}, so "
                            "the download could not be checked; nothing was fetched")
    return HubFile(url=meta.location, size=meta.size, sha256=etag, commit=meta.commit_hash)


class _Sink:
    """The partial file as http_get writes it: every write reports progress and is refused once a pause is asked."""

    def __init__(self, stream: BinaryIO, total: int, on_progress: Callable[[Progress], None],
                 should_stop: Callable[[], bool]) -> None:
        self._stream = stream
        self._total = total
        self._on_progress = on_progress
        self._should_stop = should_stop
        self._samples: list[tuple[float, int]] = [(time.monotonic(), stream.tell())]
        self._reported = 0.0

    def write(self, data: bytes) -> int:
        if self._should_stop():
            raise Paused("paused")
        written = self._stream.write(data)
        now, done = time.monotonic(), self._stream.tell()
        self._samples.append((now, done))
        while len(self._samples) > 2 and now - self._samples[0][0] > SPEED_WINDOW_SECONDS:
            self._samples.pop(0)
        if now - self._reported >= REPORT_SECONDS or done >= self._total:
            self._reported = now
            self._on_progress(Progress(done, self._total, self.speed()))
        return written

    def speed(self) -> float | None:
        (first_time, first_done), (last_time, last_done) = self._samples[0], self._samples[-1]
        if last_time - first_time <= 0 or last_done <= first_done:
            return None
        return (last_done - first_done) / (last_time - first_time)

    def tell(self) -> int:
        return self._stream.tell()

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._stream.seek(offset, whence)

    def truncate(self, size: int | None = None) -> int:
        return self._stream.truncate(size)


def _check_space(entry: CatalogueEntry, folder: Path, needed: int) -> None:
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise NotEnoughSpace(f"{entry.name}: {needed:,} more bytes are needed in {folder} and {free:,} are free; "
                             "nothing was fetched")


def _sha256_of(path: Path) -> str:
    with open(path, "rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def download(entry: CatalogueEntry, folder: Path, on_progress: Callable[[Progress], None] = lambda _p: None,
             should_stop: Callable[[], bool] = lambda: False) -> Path:
    """Fetch the entry's file into `folder`, resuming a partial download of the same file, and return its path once
    its sha256 matches the hub's. Raises a DownloadError saying why it stopped: Paused (asked), HubUnreachable
    (offline or stalled: the partial is kept), NotOnHub, NotEnoughSpace (checked before anything is fetched, and a
    disk that fills meanwhile), ChecksumMismatch (the file is deleted)."""
    final = entry.path(folder)
    if final.is_file():
        return final
    reason = offline_reason()
    if reason:
        raise HubUnreachable(f"{entry.name}: {reason}")
    remote = hub_file(entry)
    folder.mkdir(parents=True, exist_ok=True)
    partial = entry.partial_path(folder, remote.sha256)
    for stale in entry.partials(folder):  # another version of the file: it cannot be resumed into this one
        if stale != partial:
            stale.unlink(missing_ok=True)
    have = partial.stat().st_size if partial.exists() else 0
    if have > remote.size:
        partial.unlink()
        have = 0
    _check_space(entry, folder, remote.size - have)
    if have < remote.size:
        _fetch(entry, remote, partial, have, on_progress, should_stop)
    on_progress(Progress(remote.size, remote.size, None, checking=True))
    if _sha256_of(partial) != remote.sha256:
        partial.unlink(missing_ok=True)
        raise ChecksumMismatch(f"{entry.name}: the file fetched does not match the hub's sha256 {remote.sha256}; "
                               "it was deleted")
    os.replace(partial, final)
    return final


def _fetch(entry: CatalogueEntry, remote: HubFile, partial: Path, have: int,
           on_progress: Callable[[Progress], None], should_stop: Callable[[], bool]) -> None:
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils import build_hf_headers

    with open(partial, "ab") as stream:
        sink = _Sink(stream, remote.size, on_progress, should_stop)
        on_progress(Progress(have, remote.size, None))
        try:
            http_get(remote.url, sink, resume_size=have, headers=build_hf_headers(token=False),  # type: ignore[arg-type]
                     expected_size=remote.size)
        except Paused:
            raise Paused(f"{entry.name}: paused at {stream.tell():,} of {remote.size:,} bytes; "
                         "getting it again resumes") from None
        except httpx2.TransportError as exc:  # after the library's own retries
            raise HubUnreachable(f"{entry.name}: the download stopped at {stream.tell():,} of {remote.size:,} "
                                 f"bytes ({type(exc).__name__}); getting it again resumes") from None
        except HfHubHTTPError as exc:
            raise DownloadError(f"{entry.name}: the hub refused the download: {exc}") from None
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise NotEnoughSpace(f"{entry.name}: the disk holding {partial.parent} is full "
                                     f"({stream.tell():,} of {remote.size:,} bytes fetched and kept)") from None
            raise DownloadError(f"{entry.name}: the download stopped at {stream.tell():,} of {remote.size:,} bytes "
                                f"({exc}); getting it again resumes") from None


def remove(entry: CatalogueEntry, folder: Path) -> list[Path]:
    """Delete the entry's file and any partial download of it; the paths deleted."""
    removed = [path for path in [entry.path(folder), *entry.partials(folder)] if path.exists()]
    for path in removed:
        path.unlink()
    return removed
