"""A write that finds another program writing says so before it waits (the window tells the user at once, naming the
file, instead of after the 30 s busy timeout); a write that finds the lock free says nothing."""

from __future__ import annotations

import subprocess
import sys
import threading

from precis.core.model.messages import Message
from precis.core.storage.store import open_store

from tests.lock_holder import locked_by_another_process, release


def test_a_write_tells_it_waits_for_another_programs_lock_then_goes_on(tmp_path):
    with open_store(tmp_path / "data") as store:
        chat_id = store.create_chat("Ferry")
        told: list[str] = []
        store.on_wait = told.append
        store.add_messages(chat_id, [Message(role="user", content="no one else is writing")])
        assert told == []
        with locked_by_another_process(store.path) as locker:
            said = threading.Event()
            store.on_wait = lambda text: (told.append(text), said.set())
            writer = threading.Thread(target=store.add_messages,
                                      args=(chat_id, [Message(role="user", content="saved once the lock is free")]))
            writer.start()
            assert said.wait(30)
            assert writer.is_alive()  # told while it waits, not after
            release(locker)
            writer.join(30)
        assert told == [f"Waiting to save the message: another program is writing to the database {store.path} "
                        "(up to 30 s)…"]
        assert [m.content for m in store.load_messages(chat_id)][-1] == "saved once the lock is free"


def test_a_command_says_once_on_stderr_that_it_waits_for_another_programs_lock(tmp_path):
    """`precis import` run while another program holds the write lock: the window's words on stderr while it waits
    (not after the 30 s), once, and the import done once the lock is free."""
    data = tmp_path / "data"
    open_store(data).close()
    chat = tmp_path / "ferry.jsonl"
    chat.write_text('{"role": "user", "content": "which ferry leaves first?"}\n')
    with locked_by_another_process(data / "precis.db") as locker:
        command = subprocess.Popen([sys.executable, "-m", "precis.core.cli.main", "--data-dir", str(data), "import",
                                    str(chat)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert command.stderr is not None
            first = command.stderr.readline()
            assert command.poll() is None  # said while it waits
        finally:
            release(locker)
            out, rest = command.communicate(timeout=60)
    words = (f"Waiting to import the chat: another program is writing to the database {data / 'precis.db'} "
             "(up to 30 s)…")
    assert first == f"precis: {words}\n"
    assert words not in rest and command.returncode == 0, rest
    with open_store(data) as store:
        assert [m.content for m in store.load_messages(out.strip())] == ["which ferry leaves first?"]
