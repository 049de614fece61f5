"""A disk that will not take a write (full, or a file size limit): opening a sound database says so without calling
it damaged or copying it aside; in the terminal chat a message that cannot be saved is said back, a reply whose
saves fail is shown whole and said not saved, and the chat goes on."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from precis.core.model.messages import Message
from precis.core.storage.store import DB_NAME, open_store

from tests.conftest import TRANSCRIPTS
from tests.providers.scripted_server import FINISH, delta

ROOT = Path(__file__).resolve().parents[2]
# Smaller than SQLite's 32 kB shared-memory file (-shm), which every opening of a WAL database makes.
NO_ROOM_BYTES = 16_384


def failed_writes_not_fatal() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing


def precis(*argv: str, file_size_limit: int | None = None, stdin: str = "") -> subprocess.CompletedProcess:
    """`precis` in its own process; with `file_size_limit`, no file may grow past it (RLIMIT_FSIZE), as on a full
    disk: a real failed write, which needs no privilege to set up, unlike a small file system."""

    def no_room() -> None:
        failed_writes_not_fatal()
        assert file_size_limit is not None
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    return subprocess.run([sys.executable, "-m", "precis.core.cli.main", *argv], cwd=ROOT, capture_output=True,
                          text=True, input=stdin, timeout=120, preexec_fn=no_room if file_size_limit else None)


def test_a_sound_file_that_cannot_be_opened_for_want_of_room_is_not_called_damaged(tmp_path):
    """It was: "precis.db is damaged and could not be copied aside (File too large)", and with room for the copy
    it would have been set aside as corrupt, though nothing is wrong with it."""
    data = tmp_path / "data"
    assert precis("--data-dir", str(data), "import", str(TRANSCRIPTS[0])).returncode == 0
    assert not Path(f"{data / DB_NAME}-shm").exists()  # Precis closed it: the next opening makes this side file

    refused = precis("--data-dir", str(data), "chats", file_size_limit=NO_ROOM_BYTES)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"could not read {data / DB_NAME}: disk I/O error" in refused.stderr
    assert "damaged" not in refused.stderr.replace("not found damaged", "")
    assert list(data.glob(f"{DB_NAME}.corrupt-*")) == []

    listed = precis("--data-dir", str(data), "chats")  # with room again, as it was
    assert listed.returncode == 0 and TRANSCRIPTS[0].stem in listed.stdout


def test_a_message_the_terminal_chat_cannot_save_is_said_back_whole_and_the_chat_goes_on(tmp_path):
    """It was: "could not save the message: …", and the chat ended there, the lines typed after it unread."""
    data = tmp_path / "data"
    with open_store(data) as store:
        chat = store.create_chat("Lisbon trip")
        store.add_messages(chat, [Message(role="user", content="Which tram goes to Belem?")])
    pasted = "A long paste of my notes from the trip, which I typed in over an hour. " * 2_500  # ~180 kB
    nowhere = ["--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--context-tokens", "4096"]
    chatted = precis("--data-dir", str(data), "chat", "--chat", "Lisbon trip", *nowhere,
                     stdin=f"{pasted}\nAnd the ferry?\n/quit\n", file_size_limit=100_000)

    assert chatted.returncode == 1 and "Traceback" not in chatted.stderr
    assert "precis chat: not sent: could not save the message: " in chatted.stderr
    assert f"Your message, to send again:\n{pasted.strip()}\n" in chatted.stderr
    assert "cannot connect to http://127.0.0.1:9/v1" in chatted.stderr  # the next line was sent (nobody answers)
    with open_store(data) as store:
        assert [m.content for m in store.load_messages(chat)] == ["Which tram goes to Belem?", "And the ferry?"]


FIRST_HALF = "The ferry to Cacilhas leaves from Cais do Sodre every twenty minutes. "
SECOND_HALF = [f"Stop {n} of the tour is worth the wait. " for n in range(12)]


def a_reply_in_two_halves(first_half_sent: threading.Event, disk_full: threading.Event):
    """A scripted server's reply: its first half, then (once the test has filled the disk) the rest, over 1.8 s, so
    that the chat's save of the reply so far (every second) falls in it."""

    def step(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write((delta(FIRST_HALF) + "\n\n").encode())
        handler.wfile.flush()
        first_half_sent.set()
        disk_full.wait(30)
        for piece in SECOND_HALF:
            handler.wfile.write((delta(piece) + "\n\n").encode())
            handler.wfile.flush()
            threading.Event().wait(0.15)
        handler.wfile.write((FINISH + "\n\ndata: [DONE]\n\n").encode())

    return step


def test_a_reply_whose_saves_fail_is_shown_whole_said_not_saved_and_the_chat_goes_on(tmp_path, server):
    """It was: the reply stopped mid-sentence at the first save that failed, and the chat ended with it."""
    data = tmp_path / "data"
    with open_store(data) as store:
        chat = store.create_chat("Lisbon trip")
    first_half_sent, disk_full = threading.Event(), threading.Event()
    server.steps.append(a_reply_in_two_halves(first_half_sent, disk_full))
    chatting = subprocess.Popen(
        [sys.executable, "-m", "precis.core.cli.main", "--data-dir", str(data), "chat", "--chat", "Lisbon trip",
         "--provider", "openai", "--base-url", server.base_url, "--model", "m", "--context-tokens", "4096"],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=failed_writes_not_fatal)
    chatting.stdin.write("How do I get to Cacilhas?\n")
    chatting.stdin.flush()
    assert first_half_sent.wait(60)
    # The disk is full from here on: the log of changes (the only file written until Precis closes) grows no more.
    wal = Path(f"{data / DB_NAME}-wal").stat().st_size
    resource.prlimit(chatting.pid, resource.RLIMIT_FSIZE, (wal, wal))
    disk_full.set()
    out, err = chatting.communicate("/quit\n", timeout=60)

    assert out == FIRST_HALF + "".join(SECOND_HALF) + "\n"  # all of it, as the server sent it
    assert "precis chat: the reply above was not saved whole: could not save the message: " in err
    assert str(data / DB_NAME) in err and "Traceback" not in err
    assert chatting.returncode == 1
    with open_store(data) as store:  # as saved before the disk filled: the question, the reply so far (incomplete)
        question, reply = store.load_messages(chat)
    assert question.content == "How do I get to Cacilhas?"
    assert reply.incomplete and (FIRST_HALF + "".join(SECOND_HALF)).startswith(reply.content)
