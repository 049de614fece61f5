"""`precis models`, `models get NAME` and `models rm NAME` as a user runs them (a process of their own, the hub a loopback
stand-in serving the embedded GGUF under a catalogue name); and nothing Precis runs contacts a host unless a download
was asked for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from precis.core.models.catalogue import find_entry, read_catalogue, size_text
from precis.core.providers.local import find_model_path

from tests.interrupted_download import interrupt_get
from tests.stand_in_hub import StandInHub

NAME = "smollm2-360m"
ENTRY = find_entry(NAME)

# Runs `precis ARGS` with every socket connection and name look-up noted (an audit hook sees each one, whatever
# library makes it), then prints them as JSON on the last line of stderr.
WATCHED = """
import json, sys
contacts = []
def note(event, args):
    if event == "socket.connect":
        contacts.append(repr(args[1]))
    elif event == "socket.getaddrinfo":
        contacts.append(f"lookup {args[0]}")
sys.addaudithook(note)
from precis.core.cli.main import main
code = main(sys.argv[1:])
print(json.dumps(contacts), file=sys.stderr)
sys.exit(code)
"""


def precis(*args: str, env: dict[str, str]) -> tuple[int, str, str, list[str]]:
    """(exit code, stdout, stderr without the last line, the contacts made)."""
    done = subprocess.run([sys.executable, "-c", WATCHED, *args], capture_output=True, text=True, env=env,
                          timeout=300)
    *err, contacts = done.stderr.rstrip("\n").split("\n")
    return done.returncode, done.stdout, "\n".join(err), json.loads(contacts)


@pytest.fixture
def hub():
    with StandInHub() as server:
        server.serve(ENTRY.repo, ENTRY.file, find_model_path())
        yield server


@pytest.fixture
def env(hub, isolated_home, tmp_path):
    environment = {**os.environ, "HF_ENDPOINT": hub.url, "PRECIS_HOME": str(isolated_home),
                   "HOME": str(tmp_path / "home"), "HF_HOME": str(tmp_path / "hf-home")}
    environment.pop("HF_HUB_OFFLINE", None)
    return environment


def not_loopback(contacts: list[str]) -> list[str]:
    return [c for c in contacts if "127.0.0.1" not in c and "localhost" not in c and "::1" not in c]


def test_models_lists_the_catalogue_and_contacts_nothing(hub, env):
    code, out, _err, contacts = precis("models", "--json", env=env)
    assert code == 0 and contacts == [] and hub.requests == []
    listing = json.loads(out)
    assert [m["name"] for m in listing["catalogue"]] == [e.name for e in read_catalogue()]
    assert {m["state"] for m in listing["catalogue"]} == {"not downloaded"} and listing["on_disk"] == []

    code, out, _err, contacts = precis("models", env=env)
    assert code == 0 and contacts == []
    assert "not measured" in out and "unverified" in out and NAME in out


def test_get_downloads_lists_and_rm_deletes(hub, env, isolated_home):
    code, out, err, contacts = precis("models", "get", NAME, env=env)
    assert code == 0, err
    path = isolated_home / "models" / ENTRY.file
    assert out.strip() == f"{NAME}: {path}" and path.stat().st_size == find_model_path().stat().st_size
    assert contacts and not not_loopback(contacts)  # the stand-in hub only
    assert hub.requests

    listing = json.loads(precis("models", "--json", env=env)[1])
    [entry] = [m for m in listing["catalogue"] if m["name"] == NAME]
    assert (entry["state"], entry["path"]) == ("downloaded", str(path))
    assert [(m["source"], m["path"]) for m in listing["on_disk"]] == [("downloaded", str(path))]

    code, out, _err, _contacts = precis("models", "rm", NAME, env=env)
    assert code == 0 and out.strip() == f"deleted {path}" and not path.exists()


def test_get_failing_exits_1_saying_why_and_a_bad_name_2(hub, env):
    hub.faults.claimed_sha256 = "ab" * 32
    code, _out, err, _contacts = precis("models", "get", NAME, env=env)
    assert code == 1 and "does not match the hub's sha256" in err
    code, _out, err, contacts = precis("models", "get", "no-such-model", env=env)
    assert code == 2 and "no model named 'no-such-model'" in err and contacts == []


def test_offline_get_fetches_nothing(hub, env):
    code, _out, err, contacts = precis("models", "get", NAME, env={**env, "HF_HUB_OFFLINE": "1"})
    assert code == 1 and "HF_HUB_OFFLINE" in err and contacts == [] and hub.requests == []


def test_the_window_and_the_other_commands_contact_no_host(hub, env, tmp_path):
    """Opening the window (rendered offscreen), listing, searching: no connection leaves this machine and the hub is
    never asked, whatever the app's start-up loads (the local model's process talks over loopback only)."""
    for args in (["chats"], ["search", "planet"], ["screenshot", str(tmp_path / "window.png"), "--size", "800x600"]):
        code, _out, err, contacts = precis(*args, env=env)
        assert code == 0, (args, err)
        assert not_loopback(contacts) == [], args
    assert hub.requests == []
    assert Path(tmp_path / "window.png").stat().st_size > 0


def test_ctrl_c_while_the_hub_stalls_stops_keeps_the_part_and_get_again_resumes(hub, env, isolated_home):
    """Ctrl-C while the hub has stopped sending half-way through the file (and would hang past the read timeout):
    the command ends there, with one line saying what was kept and how to resume rather than "interrupted", exits
    130 with no traceback, and `get` again fetches only the rest."""
    size = find_model_path().stat().st_size
    hub.faults.stall_at = size // 2
    folder = isolated_home / "models"
    stalled = {**env, "HF_HUB_DOWNLOAD_TIMEOUT": "600"}  # only Ctrl-C can end the wait, not the library's timeout
    stopped = interrupt_get(hub, ENTRY, folder, stalled)
    assert stopped.code == 130, stopped.shown
    [part] = ENTRY.partials(folder)
    kept = part.stat().st_size
    lines = stopped.shown.replace("\r\n", "\n").rstrip("\n").split("\n")
    assert lines[-1] == f"precis models get: {NAME}: stopped (Ctrl-C) with {size_text(kept)} kept; " \
                        f"`precis models get {NAME}` resumes it", stopped.shown
    assert len(lines) == 2 and lines[0].startswith(f"{NAME} [")  # the progress bar, ended, then that line alone
    assert 0 < stopped.kept <= kept < size and not (folder / ENTRY.file).exists()

    hub.faults.release.set()  # the hub sends again
    code, out, err, _contacts = precis("models", "get", NAME, env=env)
    assert code == 0, err
    assert out.strip() == f"{NAME}: {folder / ENTRY.file}" and (folder / ENTRY.file).stat().st_size == size
    assert hub.requests[-1][2] == f"bytes={kept}-"  # resumed, not started again
