"""A reply the user stops (Stop, Esc) is kept and marked incomplete, and is not a failure: the window showed
"Error: cancelled by the user" under every stopped reply. A reply the provider breaks off is one."""

from __future__ import annotations

import threading

import pytest
from precis.core.chat.session import ChatSession
from precis.core.model.messages import Message
from precis.core.providers.base import CancelToken, StreamInterrupted
from precis.core.storage.store import open_store

from tests.fakes import ScriptedProvider


def asked(store, provider) -> ChatSession:
    chat_id = store.create_chat("stories")
    store.add_message(chat_id, Message(role="user", content="Write a long story about a lighthouse keeper."))
    session = ChatSession(store, chat_id, provider)
    session.build_engine(estimate=False)
    return session


def stopped_after_first_piece(session: ChatSession, going_on: str | None = None):
    cancel = CancelToken()

    def arrived(_piece: str) -> None:
        threading.Thread(target=cancel.cancel).start()  # Stop, pressed from another thread as the window does

    if going_on is not None:
        return session.continue_reply(going_on, on_text=arrived, cancel=cancel)
    return session.reply(Message(role="assistant", content="", incomplete=True), on_text=arrived, cancel=cancel)


@pytest.mark.model
def test_a_reply_the_user_stops_is_kept_marked_and_not_a_failure(tmp_path, local_provider):
    with open_store(tmp_path) as store:
        session = asked(store, local_provider)
        result = stopped_after_first_piece(session)
        assert result.stopped and result.failure is None
        assert result.message.incomplete and result.message.content  # what arrived is kept
        assert store.load_messages(session.chat_id)[-1].incomplete
        # Continue, stopped again: the same.
        going_on = stopped_after_first_piece(session, going_on=result.message.id)
        assert going_on.stopped and going_on.failure is None and going_on.message.incomplete


def test_a_reply_the_provider_breaks_off_is_a_failure(tmp_path):
    # A server dropping the stream mid-reply cannot be made to on demand: the scripted provider injects it.
    provider = ScriptedProvider([StreamInterrupted("the connection dropped", partial="Once upon")])
    with open_store(tmp_path) as store:
        result = asked(store, provider).reply(Message(role="assistant", content="", incomplete=True),
                                              on_text=lambda _piece: None, cancel=CancelToken())
        assert not result.stopped and result.failure == "the connection dropped"
        assert result.message.incomplete
