"""A reply that fails or is stopped before its first word leaves no empty reply behind: `/history` showed
"2. assistant: (empty)", and the exports, the window and the next prompt all carried it. The user's message stays,
to be answered again; a regenerated reply gets its earlier text back. The real HTTP stack against a scripted server
on loopback (a real server does not refuse or stall on demand)."""

from __future__ import annotations

import threading

from precis.core.chat.history import history_lines
from precis.core.chat.session import ChatSession
from precis.core.model.messages import Message
from precis.core.providers.base import CancelToken
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.storage.exporters import export_chat
from precis.core.storage.store import open_store

from tests.providers.scripted_server import FINISH, delta, reply, stream

REFUSED = reply(400, '{"error": {"message": "the model m is not loaded"}}')


def answered(text: str):
    return stream([delta(text), FINISH, "data: [DONE]"])


def opened(store, server, *messages: Message) -> ChatSession:
    chat_id = store.import_chat("Ferries", list(messages))
    session = ChatSession(store, chat_id, OpenAICompatProvider(base_url=server.base_url, model="m"))
    session.build_engine(estimate=False)
    return session


def write_reply(session: ChatSession, cancel: CancelToken | None = None, regenerate: bool = False):
    last = session.built_engine.messages[-1]
    placeholder = (last.with_changes(content="", incomplete=True) if regenerate
                   else Message(role="assistant", content="", incomplete=True))
    return session.reply(placeholder, on_text=lambda _piece: None, cancel=cancel or CancelToken(),
                         regenerate=regenerate)


def stored(store, chat_id) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in store.load_messages(chat_id)]


def test_a_reply_refused_before_its_first_word_keeps_the_question_and_no_empty_reply(tmp_path, server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    question = Message(role="user", content="Which ferry leaves first?")
    with open_store(tmp_path) as store:
        session = opened(store, server, question)
        server.steps = [REFUSED]
        result = write_reply(session)
        assert "not loaded" in (result.failure or "") and not result.kept
        assert stored(store, session.chat_id) == [("user", "Which ferry leaves first?")]
        assert [m.role for m in result.snapshot.messages] == ["user"]
        history = "\n".join(history_lines(store.load_messages(session.chat_id), []))
        assert "(empty)" not in history and "1. user: Which ferry leaves first?" in history
        for format_ in ("md", "jsonl", "openai"):
            assert "assistant" not in "".join(export_chat(store, session.chat_id, format_).pieces).lower()
        # Asked again, the question is answered once, as if the failure had not happened.
        server.steps = [answered("The 7:10 to Vashon.")]
        again = write_reply(session)
        assert again.kept and again.failure is None
        assert stored(store, session.chat_id) == [("user", "Which ferry leaves first?"),
                                                  ("assistant", "The 7:10 to Vashon.")]
        assert [m["role"] for m in server.requests[-1][2]["messages"]] == ["user"]


def test_a_reply_stopped_before_its_first_word_leaves_no_empty_reply(tmp_path, server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with open_store(tmp_path) as store:
        session = opened(store, server, Message(role="user", content="Which ferry leaves first?"))
        server.steps = [stream([], stall=10)]  # the server says nothing: the user presses Stop
        cancel = CancelToken()
        threading.Timer(0.5, cancel.cancel).start()
        result = write_reply(session, cancel)
        assert result.stopped and result.failure is None and not result.kept
        assert stored(store, session.chat_id) == [("user", "Which ferry leaves first?")]


def test_a_regenerated_reply_that_fails_before_its_first_word_gets_its_earlier_text_back(tmp_path, server,
                                                                                         monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    messages = [Message(role="user", content="Which ferry leaves first?"),
                Message(role="assistant", content="The 7:10 to Vashon.")]
    with open_store(tmp_path) as store:
        session = opened(store, server, *messages)
        server.steps = [REFUSED]
        result = write_reply(session, regenerate=True)
        assert result.failure and not result.kept and result.message.content == "The 7:10 to Vashon."
        assert stored(store, session.chat_id)[-1] == ("assistant", "The 7:10 to Vashon.")
        assert not store.load_messages(session.chat_id)[-1].incomplete
        assert session.built_engine.messages[-1].content == "The 7:10 to Vashon."
        # No empty version was kept, and the next regenerate keeps the earlier text once.
        server.steps = [answered("The 6:45 to Bremerton.")]
        assert write_reply(session, regenerate=True).kept
        [kept] = store.versions(session.chat_id).values()
        assert kept.texts == ("The 7:10 to Vashon.", "The 6:45 to Bremerton.") and kept.shown == 1


def test_a_reply_cut_after_its_first_words_is_kept_marked(tmp_path, server, monkeypatch):
    """Only a reply with nothing in it goes: a part that arrived is the user's to keep and continue."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with open_store(tmp_path) as store:
        session = opened(store, server, Message(role="user", content="Which ferry leaves first?"))
        server.steps = [stream([delta("The 7:10")])]  # the connection closes mid-reply
        result = write_reply(session)
        assert result.failure and result.kept
        assert stored(store, session.chat_id)[-1] == ("assistant", "The 7:10")
        assert store.load_messages(session.chat_id)[-1].incomplete
