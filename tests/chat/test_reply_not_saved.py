"""A reply whose last save fails (the disk fills as it ends) is kept whole and said not saved whole: the store holds
its last saved part, marked incomplete, and nothing later is saved before it. Save again, or the next message, saves
it once there is room. Real HTTP on loopback and a real SQLite file; the disk is filled with RLIMIT_FSIZE."""

from __future__ import annotations

import contextlib
import json

import pytest
from precis.core.chat.session import ChatSession
from precis.core.model.messages import Message
from precis.core.providers.base import CancelToken
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.storage.store import StoreError, open_store

from tests.disk_full import disk_full
from tests.providers.scripted_server import FINISH, delta, reply, stream

PIECES = ["The ferry to Cacilhas ", "leaves every twenty minutes ", "from Cais do Sodre."]
WHOLE = "".join(PIECES)
MODELS = reply(200, json.dumps({"data": [{"id": "m"}]}))  # the provider asks for its context window first


def reply_as_the_disk_fills(store, server, full: contextlib.ExitStack) -> tuple[ChatSession, object]:
    """The question, then a reply during whose last piece the disk fills (held full by `full`)."""
    server.steps += [MODELS, stream([delta(piece) for piece in PIECES] + [FINISH, "data: [DONE]"])]
    chat_id = store.create_chat("Lisbon trip")
    session = ChatSession(store, chat_id, OpenAICompatProvider(base_url=server.base_url, model="m"))
    session.build_engine(estimate=False)
    session.add_messages([Message(role="user", content="How do I get to Cacilhas?")])
    received: list[str] = []

    def arrived(piece: str) -> None:
        received.append(piece)
        if len(received) == len(PIECES):
            full.enter_context(disk_full(store.path))

    result = session.reply(Message(role="assistant", content="", incomplete=True), on_text=arrived,
                           cancel=CancelToken())
    return session, result


def stored(store, chat_id) -> list[tuple[str, str, bool]]:
    return [(m.role, m.content, m.incomplete) for m in store.load_messages(chat_id)]


def test_a_reply_not_saved_whole_is_kept_whole_said_so_and_saved_again(tmp_path, server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with open_store(tmp_path) as store, contextlib.ExitStack() as full:
        session, result = reply_as_the_disk_fills(store, server, full)
        chat_id = session.chat_id
        assert result.message.content == WHOLE and not result.message.incomplete and result.problem is None
        assert result.unsaved is not None and str(store.path) in result.unsaved.why
        assert "Not saved whole" in result.unsaved.words()
        (_question, (_role, part, incomplete)) = stored(store, chat_id)
        assert incomplete and WHOLE.startswith(part) and part != WHOLE  # the store has only what it has
        assert session.snapshot().unsaved == result.unsaved

        # Still full: the next message is refused rather than saved after a reply the store holds in part.
        with pytest.raises(StoreError):
            session.add_messages([Message(role="user", content="And back?")])
        with pytest.raises(StoreError):
            session.save_unsaved()
        assert len(stored(store, chat_id)) == 2 and session.snapshot().unsaved is not None
        full.close()  # room again

        snapshot = session.save_unsaved()
        assert snapshot.unsaved is None
        assert stored(store, chat_id)[-1] == ("assistant", WHOLE, False)


def test_the_next_message_saves_the_reply_first(tmp_path, server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with open_store(tmp_path) as store:
        with contextlib.ExitStack() as full:
            session, result = reply_as_the_disk_fills(store, server, full)
        assert result.unsaved is not None
        snapshot = session.add_messages([Message(role="user", content="And back?")])
        assert snapshot.unsaved is None
        assert stored(store, session.chat_id) == [("user", "How do I get to Cacilhas?", False),
                                                 ("assistant", WHOLE, False), ("user", "And back?", False)]
