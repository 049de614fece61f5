"""One data folder shared by the window and `precis` commands in other processes; relative and read-only folders."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.settings import CALIBRATION_KEY, SUMMARIZATION_KEY
from precis.core.storage import database
from precis.core.storage.store import DB_NAME, StoreCorrupt, open_store

from tests.conftest import TRANSCRIPTS

ROOT = Path(__file__).resolve().parents[2]


def precis(*argv: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "precis.core.cli.main", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def small_chat(path: Path, n: int = 4) -> Path:
    path.write_text("".join(f'{{"role": "user", "content": "note {i} about kiwis"}}\n' for i in range(n)))
    return path


@contextmanager
def another_process_writing(data: Path) -> Iterator[subprocess.Popen]:
    """Another process in the middle of a write transaction on the store (a long import, the window saving a
    summary) until release(holder) or the end of the block."""
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sqlite3, sys
        conn = sqlite3.connect({str(data / DB_NAME)!r}, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE chat SET title = title")
        print("writing", flush=True)
        sys.stdin.readline()
        conn.execute("COMMIT")
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "writing"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def release(holder: subprocess.Popen) -> None:
    holder.stdin.write("\n")
    holder.stdin.flush()


@pytest.mark.slow
def test_commands_run_while_another_process_holds_the_store(tmp_path):
    data = tmp_path / "data"
    with open_store(data) as store:
        chat = store.import_chat("first", [])
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from precis.core.storage.store import open_store
        store = open_store({str(data)!r})
        store.list_chats()
        print("open", flush=True)
        sys.stdin.readline()
    """)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        imported = precis("--data-dir", str(data), "import", str(small_chat(tmp_path / "k.jsonl")))
        assert imported.returncode == 0, imported.stderr
        chat_id = imported.stdout.strip()
        for argv in (["chats"], ["search", "kiwis"], ["export", chat_id], ["context", chat_id]):
            result = precis("--data-dir", str(data), *argv)
            assert result.returncode == 0, (argv, result.stderr)
            assert "kiwis" in result.stdout or chat_id in result.stdout or "context:" in result.stdout
        assert chat in precis("--data-dir", str(data), "chats").stdout
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.slow
def test_the_store_sees_chats_another_process_imported_and_a_reply_ended_but_not_its_streaming(tmp_path):
    data = tmp_path / "data"
    with open_store(data) as store:
        chat_id = store.import_chat("open in the window", [Message(role="user", content="hello")])
        assert store.chats_changed() is False  # the first call starts watching
        assert store.chats_changed() is False
        imported = precis("--data-dir", str(data), "import", str(small_chat(tmp_path / "k.jsonl")))
        assert imported.returncode == 0, imported.stderr
        assert store.chats_changed() is True
        assert store.chats_changed() is False  # told once
        # A reply's text saved as it streams leaves the chat list alone: no refresh every second of a reply.
        reply = Message(role="assistant", content="")
        store.add_message(chat_id, reply)
        assert store.chats_changed() is True
        store.update_message(chat_id, reply.with_changes(content="streamed text"), streaming=True)
        assert store.chats_changed() is False
        # Its last save is a change: a window showing the chat reads the reply as it ended.
        store.update_message(chat_id, reply.with_changes(content="streamed text, ended"))
        assert store.chats_changed() is True
        store.rename_chat(chat_id, "renamed")
        assert store.chats_changed() is True


def test_the_global_summarization_settings_changed_elsewhere_are_a_change_and_a_models_calibration_is_not(tmp_path):
    """Every open chat follows Settings → Summarization, whichever window saved them; a token-count correction,
    saved after many replies, changes no chat."""
    data = tmp_path / "data"
    with open_store(data) as watching, open_store(data) as other:
        watching.import_chat("Trip to Lisbon", [Message(role="user", content="Which hotel?")])
        watching.chats_changed()
        other.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 10})
        assert watching.chats_changed() is True
        other.set_setting(CALIBRATION_KEY, {"m / cl100k_base": [1.1, 0.0]})
        assert watching.chats_changed() is False


def test_a_chat_deleted_and_restored_between_two_looks_is_still_a_change(tmp_path):
    """A window deleted a chat (and listed the chats without it) and another restored it before the first window's
    watch looked again: the chat rows read as before both, so the watch saw no change and the window never listed the
    restored chat again."""
    data = tmp_path / "data"
    with open_store(data) as watching, open_store(data) as other:
        chat_id = watching.import_chat("Trip to Lisbon", [Message(role="user", content="Which hotel?")])
        watching.import_chat("Garden", [])
        watching.chats_changed()
        watching.delete_chat(chat_id)
        other.restore_chat(chat_id)
        assert watching.chats_changed() is True
        assert [c.title for c in watching.list_chats()][0] == "Trip to Lisbon"  # restored: updated now


def test_a_writer_waits_for_another_writer_instead_of_failing(tmp_path):
    data = tmp_path / "data"
    open_store(data).close()
    with another_process_writing(data) as holder:
        threading.Timer(1.5, release, (holder,)).start()  # a second and a half of writing elsewhere
        started = time.monotonic()
        result = precis("--data-dir", str(data), "import", str(small_chat(tmp_path / "k.jsonl")))
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started > 1.0  # it waited for the other writer rather than failing


@pytest.mark.slow
def test_reading_commands_are_not_held_up_by_a_writer(tmp_path):
    """Another process is in the middle of a write (a long import, the window saving a summary) for as long as the
    commands run: every reading command answers, `context` too (its token-count cache is skipped, not waited for)."""
    data = tmp_path / "data"
    chat_id = precis("--data-dir", str(data), "import", str(small_chat(tmp_path / "k.jsonl"))).stdout.strip()
    with another_process_writing(data) as holder:
        for argv in (["chats"], ["search", "kiwis"], ["export", chat_id], ["context", chat_id]):
            result = precis("--data-dir", str(data), *argv)
            assert result.returncode == 0 and result.stderr == "", (argv, result.stderr)
        assert holder.poll() is None  # the write was still under way throughout
    with sqlite3.connect(data / DB_NAME) as conn:  # nothing cached while the other process wrote
        assert conn.execute("SELECT count(*) FROM message WHERE token_count IS NOT NULL").fetchone() == (0,)
    assert precis("--data-dir", str(data), "context", chat_id).returncode == 0
    with sqlite3.connect(data / DB_NAME) as conn:  # and cached once it was free
        assert conn.execute("SELECT count(*) FROM message WHERE token_count IS NOT NULL").fetchone() == (4,)


def test_a_reply_streams_on_while_another_process_writes_and_is_saved_whole_after(tmp_path, monkeypatch, server):
    """The reply's text is saved as it streams; each save waited for another process's write (a long `precis
    import`), holding up the stream, and past the busy timeout it ended the reply. Streaming saves now skip a busy
    store: every piece arrives while the other process writes, and the last save keeps the whole reply."""
    from precis.core.chat import session as chat_session
    from precis.core.chat.session import ChatSession
    from precis.core.providers.base import CancelToken
    from precis.core.providers.registry import make_provider

    from tests.providers.scripted_server import FINISH, delta, stream

    monkeypatch.setattr(chat_session, "SAVE_EVERY_S", 0.0)  # every piece is saved as it arrives
    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 3_000)  # the real wait is 30 s
    data = tmp_path / "data"
    pieces = ["Kiwis ", "are ", "flightless ", "birds ", "of ", "New ", "Zealand."]
    server.steps = [stream([delta(piece) for piece in pieces] + [FINISH])]
    with open_store(data) as store:
        chat_id = store.create_chat("kiwis", {"context_window": 4096})
        store.add_message(chat_id, Message(role="user", content="What are kiwis?"))
        session = ChatSession(store, chat_id, make_provider("openai", base_url=server.base_url, model="m"))
        session.build_engine(estimate=False)
        shown: list[str] = []
        with ExitStack() as writing:
            holders: list[subprocess.Popen] = []

            def arrived(piece: str) -> None:
                shown.append(piece)
                if len(shown) == 1:  # the reply has begun: another process starts writing
                    holders.append(writing.enter_context(another_process_writing(data)))
                if len(shown) == len(pieces):  # all of it arrived while the other process still writes
                    assert holders[0].poll() is None
                    release(holders[0])

            result = session.reply(Message(role="assistant", content="", incomplete=True), on_text=arrived,
                                   cancel=CancelToken())
        session.close()
        assert shown == pieces and result.problem is None
        stored = store.load_messages(chat_id)[-1]
        assert stored.content == "".join(pieces) and not stored.incomplete


def test_a_writer_kept_waiting_past_the_busy_timeout_is_told_which_file_is_busy(tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    open_store(data).close()
    with another_process_writing(data):
        monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 300)  # the real wait is 30 s
        code = main(["--data-dir", str(data), "import", str(small_chat(tmp_path / "k.jsonl"))])
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"could not import the chat: {data / DB_NAME} is busy" in err and "try again" in err
    assert "Traceback" not in err and "k.jsonl" not in err
    with open_store(data) as store:
        assert store.list_chats() == []


@pytest.mark.slow
def test_five_concurrent_imports_all_succeed(tmp_path):
    data = tmp_path / "data"
    source = TRANSCRIPTS[0]
    runs = [subprocess.Popen([sys.executable, "-m", "precis.core.cli.main", "--data-dir", str(data), "import",
                              str(source), "--title", f"copy {i}"], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for i in range(5)]
    outcomes = [(run.wait(timeout=120), run.stderr.read()) for run in runs]
    assert [code for code, _ in outcomes] == [0] * 5, outcomes
    with open_store(data) as store:
        assert sorted(c.title for c in store.list_chats()) == [f"copy {i}" for i in range(5)]


def test_a_relative_data_folder_works_for_every_command(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    small_chat(tmp_path / "k.jsonl")
    assert main(["--data-dir", "reldir", "import", "k.jsonl"]) == 0
    assert main(["--data-dir", "reldir", "chats"]) == 0
    assert "4 msgs" in capsys.readouterr().out
    monkeypatch.setenv("PRECIS_HOME", "relhome")
    assert main(["import", "k.jsonl"]) == 0
    assert main(["chats"]) == 0
    assert "4 msgs" in capsys.readouterr().out
    assert (tmp_path / "relhome" / DB_NAME).exists()


def read_only_run(folder: Path, *argv: str) -> subprocess.CompletedProcess:
    """`precis` in a mount namespace where `folder` is a read-only bind mount: a real read-only file system, which
    holds even for root (who ignores file modes)."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare for a read-only mount")
    command = " ".join(["exec", sys.executable, "-m", "precis.core.cli.main", *(f"'{a}'" for a in argv)])
    result = subprocess.run(
        ["unshare", "-rm", "sh", "-c",
         f"mount --bind '{folder}' '{folder}' && mount -o remount,bind,ro '{folder}' && {command}"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    if "mount:" in result.stderr:
        pytest.skip(f"cannot make a read-only mount here: {result.stderr.strip()}")
    return result


@pytest.mark.slow
def test_reading_commands_work_on_a_read_only_folder(tmp_path):
    data = tmp_path / "data"
    imported = precis("--data-dir", str(data), "import", str(small_chat(tmp_path / "k.jsonl")))
    chat_id = imported.stdout.strip()
    with sqlite3.connect(data / DB_NAME) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for argv in (["chats"], ["search", "kiwis"], ["export", chat_id], ["context", chat_id]):
        result = read_only_run(data, "--data-dir", str(data), *argv)
        assert result.returncode == 0, (argv, result.stderr)
        assert "Traceback" not in result.stderr
    # context showed the chat without caching its counts into the read-only file
    with sqlite3.connect(data / DB_NAME) as conn:
        assert conn.execute("SELECT count(*) FROM message WHERE token_count IS NOT NULL").fetchone() == (0,)

    result = read_only_run(data, "--data-dir", str(data), "import", str(tmp_path / "k.jsonl"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert str(data / DB_NAME) in result.stderr and "read-only" in result.stderr
    assert "k.jsonl" not in result.stderr


@pytest.mark.slow
def test_summarizing_a_chat_in_a_read_only_folder_fails_naming_the_file(tmp_path):
    """The summary is made, but it cannot be saved: the command says so and fails (it printed success before). An
    undo says the undo was not saved (it said 'could not save the summary')."""
    data = tmp_path / "data"
    chat_id = precis("--data-dir", str(data), "import", str(TRANSCRIPTS[0])).stdout.strip()
    for argv in (["summarize", chat_id, "--mode", "rule"], ["undo-summary", chat_id]):
        if argv[0] == "undo-summary":  # something to undo, summarized while the folder was writable
            assert precis("--data-dir", str(data), "summarize", chat_id, "--mode", "rule").returncode == 0
        result = read_only_run(data, "--data-dir", str(data), *argv)
        assert result.returncode == 1, (argv, result.stdout, result.stderr)
        assert f"{data / DB_NAME} is read-only" in result.stderr and "Traceback" not in result.stderr
        change = "undo the summary" if argv[0] == "undo-summary" else "save the summary"
        assert f"precis {argv[0]}: could not {change}: " in result.stderr, result.stderr
    with open_store(data) as store:
        assert len(store.load_records(chat_id)) == 1  # only the summary made while it was writable


@pytest.mark.slow
def test_a_read_only_folder_shows_what_is_still_in_the_wal(tmp_path):
    """A window that crashed (or is open on another machine's mount) leaves committed chats in precis.db-wal."""
    data = tmp_path / "data"
    precis("--data-dir", str(data), "import", str(small_chat(tmp_path / "k.jsonl")), "--title", "checkpointed")
    crashed = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os, signal
        from precis.core.storage.store import open_store
        open_store({str(data)!r}).import_chat("only in the wal", [])
        os.kill(os.getpid(), signal.SIGKILL)
    """)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert crashed.returncode == -signal.SIGKILL and (data / f"{DB_NAME}-wal").stat().st_size > 0
    result = read_only_run(data, "--data-dir", str(data), "chats")
    assert result.returncode == 0, result.stderr
    assert "only in the wal" in result.stdout and "checkpointed" in result.stdout


@pytest.mark.slow
def test_a_new_store_in_a_read_only_folder_names_the_lock_file(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    result = read_only_run(data, "--data-dir", str(data), "import", str(small_chat(tmp_path / "k.jsonl")))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert str(data / "precis.lock") in result.stderr

    result = read_only_run(data, "--data-dir", str(data / "inner"), "chats")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert str(data / "inner") in result.stderr


def damage(db: Path) -> None:
    db.write_bytes(b"SQLite format 3\x00" + bytes(200) + b"garbage" * 1000)


def test_a_damaged_database_is_copied_aside_once(tmp_path):
    open_store(tmp_path).close()
    db = tmp_path / DB_NAME
    damage(db)
    for _ in range(3):
        with pytest.raises(StoreCorrupt) as info:
            open_store(tmp_path)
    copies = list(tmp_path.glob(f"{DB_NAME}.corrupt-*"))
    assert len(copies) == 1
    assert str(copies[0]) in str(info.value)


@pytest.mark.slow
def test_a_full_disk_during_the_copy_leaves_no_partial_file(tmp_path):
    """A real full disk: the damaged file sits on a tmpfs (in a mount namespace) with room for less than a copy."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare for a small file system")
    source = tmp_path / "source"
    assert precis("--data-dir", str(source), "import", str(TRANSCRIPTS[0])).returncode == 0
    db = source / DB_NAME
    db.write_bytes(db.read_bytes()[:100] + b"garbage!" * 1500 + db.read_bytes()[12_100:])  # a damaged real store
    disk = tmp_path / "disk"
    disk.mkdir()
    size_kb = db.stat().st_size // 1024 + 48  # the file and SQLite's 32 kB side file fit, a copy does not
    command = " ".join([sys.executable, "-m", "precis.core.cli.main", "--data-dir", f"'{disk}'", "chats"])
    result = subprocess.run(
        ["unshare", "-rm", "sh", "-c",
         f"mount -t tmpfs -o size={size_kb}k tmpfs '{disk}' && cp '{db}' '{disk}/' && {command}; "
         f"code=$?; ls -a '{disk}'; exit $code"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    if "mount:" in result.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (f"{disk / DB_NAME} is damaged and could not be copied aside (No space left on device); "
            "the file was not changed") in result.stderr
    assert ".corrupt-" not in result.stdout and "precis.db\n" in result.stdout  # no partial copy; the file stays
