"""Downloading a catalogue model, against a loopback stand-in for the hub (tests/stand_in_hub.py, serving the embedded
model's real GGUF under a catalogue name): a full download, one cut mid-way, a pause and a resume, a stall (the
partial kept and resumed), a wrong sha256 (refused, deleted), a full disk (a real small tmpfs), a 404, offline; and
the file downloaded is listed with the other models and answers through the model process."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from precis.core.model.messages import Message
from precis.core.models import download as hub_download
from precis.core.models.catalogue import CatalogueEntry, on_disk
from precis.core.models.download import (
    ChecksumMismatch,
    HubUnreachable,
    NotEnoughSpace,
    NotOnHub,
    Paused,
    Progress,
    download,
    remove,
)
from precis.core.providers.base import complete
from precis.core.providers.discovery import DOWNLOADED, find_gguf_models
from precis.core.providers.local import find_model_path
from precis.core.providers.registry import make_provider

from tests.conftest import free_port
from tests.stand_in_hub import StandInHub

ENTRY = CatalogueEntry(name="tiny", title="Tiny Instruct", repo="stand-in/Tiny-Instruct-GGUF",
                       file="tiny-instruct-q4_1.gguf", download_bytes=None, memory_bytes=None, context_window=8192,
                       licence="Apache-2.0", source="https://example.invalid", answer_rate=None)
MODEL = find_model_path()


@pytest.fixture
def hub(monkeypatch):
    with StandInHub() as server:
        server.serve(ENTRY.repo, ENTRY.file, MODEL)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        yield server


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "models"
    path.mkdir()
    return path


def sha256(path: Path) -> str:
    with open(path, "rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def byte_gets(hub: StandInHub) -> list[str | None]:
    """The Range header of each GET of the file's bytes."""
    return [asked for method, path, asked in hub.requests if method == "GET" and path.startswith("/cdn/")]


def test_a_full_download_is_the_hubs_file_listed_with_the_other_models(hub, folder):
    reports: list[Progress] = []
    path = download(ENTRY, folder, on_progress=reports.append)
    assert path == folder / ENTRY.file and sha256(path) == sha256(MODEL)
    assert list(folder.iterdir()) == [path]  # no partial left behind
    size = MODEL.stat().st_size
    done = [r.done for r in reports if not r.checking]
    assert done == sorted(done) and done[-1] == size and all(r.total == size for r in reports)
    assert reports[-1].checking  # the sha256 is checked last
    assert any(r.bytes_per_second for r in reports)
    [found] = find_gguf_models(folder / "no-home", env={}, downloads=folder)
    assert (found.source, found.path, found.problem) == (DOWNLOADED, path, None)
    assert on_disk(ENTRY, folder).state == "downloaded"
    assert download(ENTRY, folder) == path and len(byte_gets(hub)) == 1  # already there: not fetched again


def test_a_connection_cut_mid_way_is_resumed_from_where_it_stopped(hub, folder):
    size = MODEL.stat().st_size
    hub.faults.cut_at = size // 2
    path = download(ENTRY, folder)
    assert sha256(path) == sha256(MODEL)
    first, resumed = byte_gets(hub)
    # From the last whole piece written: the first half is not fetched again.
    assert first is None and size // 2 - hub_download.CHUNK_BYTES <= int(resumed[6:-1]) <= size // 2
    assert hub.bytes_sent <= size + hub_download.CHUNK_BYTES


def test_a_paused_download_keeps_its_part_unlisted_and_resumes(hub, folder):
    size = MODEL.stat().st_size

    def stop() -> bool:  # Pause pressed once a third has arrived (progress reports are throttled: read the file)
        return any(part.stat().st_size >= size // 3 for part in ENTRY.partials(folder))

    with pytest.raises(Paused, match="resumes"):
        download(ENTRY, folder, should_stop=stop)
    [partial] = ENTRY.partials(folder)
    kept = partial.stat().st_size
    assert size // 3 <= kept < size
    assert not (folder / ENTRY.file).exists()
    assert find_gguf_models(folder / "no-home", env={}, downloads=folder) == []  # a partial is never offered
    assert on_disk(ENTRY, folder).state == "partial" and on_disk(ENTRY, folder).partial_bytes == kept

    path = download(ENTRY, folder)
    assert sha256(path) == sha256(MODEL) and ENTRY.partials(folder) == []
    assert byte_gets(hub)[-1] == f"bytes={kept}-"


def test_a_stalled_server_times_out_keeping_the_partial_for_a_resume(hub, folder, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DOWNLOAD_TIMEOUT", 1)  # the library's read timeout (10 s by default)
    size = MODEL.stat().st_size
    hub.faults.stall_at = size // 2
    with pytest.raises(HubUnreachable, match="getting it again resumes"):
        download(ENTRY, folder)
    [partial] = ENTRY.partials(folder)
    kept = partial.stat().st_size
    assert size // 2 - hub_download.CHUNK_BYTES <= kept <= size // 2  # every whole piece that came
    hub.faults.release.set()
    path = download(ENTRY, folder)
    assert sha256(path) == sha256(MODEL)
    assert byte_gets(hub)[-1] == f"bytes={kept}-"


def test_bytes_that_do_not_match_the_hubs_sha256_are_refused_and_deleted(hub, folder):
    hub.faults.claimed_sha256 = "ab" * 32
    with pytest.raises(ChecksumMismatch, match="sha256"):
        download(ENTRY, folder)
    assert list(folder.iterdir()) == []


def test_a_file_the_hub_does_not_have_is_a_clear_404(hub, folder):
    missing = CatalogueEntry(**{**ENTRY.__dict__, "file": "no-such-file.gguf"})
    with pytest.raises(NotOnHub, match="no-such-file.gguf in stand-in/Tiny-Instruct-GGUF"):
        download(missing, folder)
    assert list(folder.iterdir()) == []


def test_offline_nothing_is_asked_of_the_hub(hub, folder, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubUnreachable, match="HF_HUB_OFFLINE"):
        download(ENTRY, folder)
    assert hub.requests == []


def test_no_hub_answering_says_so_naming_it(folder, monkeypatch):
    endpoint = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    with pytest.raises(HubUnreachable, match=f"cannot reach the hub at {endpoint}"):
        download(ENTRY, folder)


@pytest.fixture
def small_disk(tmp_path):
    """A real 16 MB tmpfs (the model is 98 MB): mounting needs root."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_disk_too_small_is_refused_before_anything_is_fetched(hub, small_disk):
    with pytest.raises(NotEnoughSpace, match=f"are needed in {small_disk}"):
        download(ENTRY, small_disk)
    assert byte_gets(hub) == [] and list(small_disk.iterdir()) == []


def test_a_disk_that_fills_during_the_download_keeps_what_it_has(hub, small_disk, monkeypatch):
    """The space check passes (it is told the disk is empty enough: a fake, since the real disk cannot fill between
    the check and the writes on cue), then the real tmpfs fills mid-way."""
    monkeypatch.setattr(hub_download, "_check_space", lambda *_args: None)
    with pytest.raises(NotEnoughSpace, match="is full"):
        download(ENTRY, small_disk)
    [partial] = ENTRY.partials(small_disk)
    assert 0 < partial.stat().st_size <= 16 * 1024 * 1024 and not (small_disk / ENTRY.file).exists()


def test_remove_deletes_the_file_and_any_partial(hub, folder):
    path = download(ENTRY, folder)
    stale = ENTRY.partial_path(folder, "cd" * 32)
    stale.write_bytes(b"half")
    assert sorted(remove(ENTRY, folder)) == sorted([path, stale])
    assert list(folder.iterdir()) == []


@pytest.mark.model
def test_the_downloaded_file_loads_and_answers_through_the_model_process(hub, folder):
    path = download(ENTRY, folder)
    provider = make_provider("local", model_path=str(path))
    try:
        provider.load()
        assert provider.process.path == path
        reply = complete(provider, [Message("user", "Name one planet of the solar system.")], max_tokens=16,
                         temperature=0)
        assert reply.text.strip()
    finally:
        provider.close()
