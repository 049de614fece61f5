"""A reply refused as too long (the server counts differently from our estimate): summarize, then retry once. The
window and `precis chat` both write replies through ChatSession.reply."""

from __future__ import annotations

from precis.core.chat.session import ChatSession
from precis.core.model.messages import Message
from precis.core.providers.base import CancelToken, ContextLengthExceeded
from precis.core.settings import SUMMARIZATION_KEY
from precis.core.storage.store import open_store

from tests.fakes import ScriptedProvider


def long_chat(store) -> str:
    store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
    chat_id = store.create_chat("lexer notes")
    store.add_messages(chat_id, [
        Message(role="user" if i % 2 == 0 else "assistant",
                content=f"Point {i} about the lexer: it reads the source one character at a time and turns each run "
                        f"of digits into a number token, each name into an identifier, and reports the line of "
                        f"anything it cannot read.")
        for i in range(20)])
    return chat_id


def reply(session: ChatSession):
    pieces: list[str] = []
    result = session.reply(Message(role="assistant", content="", incomplete=True), on_text=pieces.append,
                           cancel=CancelToken())
    return result, "".join(pieces)


def test_context_length_error_summarizes_and_retries_once(tmp_path):
    # A server refusing the prompt cannot be made to on demand: the scripted provider injects the refusal.
    provider = ScriptedProvider([ContextLengthExceeded("prompt is too long: 9000 > 8192"), "Short answer."])
    with open_store(tmp_path) as store:
        chat_id = long_chat(store)
        session = ChatSession(store, chat_id, provider)
        session.build_engine(estimate=False)
        result, shown = reply(session)
        assert result.message.content == shown == "Short answer." and result.problem is None
        first, retry = provider.calls
        assert len(retry) < len(first) and retry[0].content.startswith("[Summary 1")
        [record] = store.load_records(chat_id)
        assert record.status == "active"
        assert store.load_messages(chat_id)[-1].content == "Short answer."


def test_a_second_refusal_is_reported_not_retried_forever(tmp_path):
    provider = ScriptedProvider([ContextLengthExceeded("too long"), ContextLengthExceeded("still too long")])
    with open_store(tmp_path) as store:
        session = ChatSession(store, long_chat(store), provider)
        session.build_engine(estimate=False)
        result, _ = reply(session)
        assert result.problem == "still too long" and len(provider.calls) == 2
        assert result.message.incomplete
