"""Continue appends what the model writes to the reply it goes on with. The model writes it as a new turn, which
starts without a space: "Ember was" + "I am here…" was stored (and summarized) as "Ember wasI am here…"."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st
from precis.core.chat.session import ChatSession
from precis.core.chat.streaming import CLOSING, joint
from precis.core.model.messages import Message
from precis.core.providers.base import CancelToken
from precis.core.storage.store import open_store

words = st.text(st.characters(whitelist_categories=("Lu", "Ll", "Nd", "Zs", "Po")), min_size=1, max_size=20)


@given(before=words, after=words)
def test_words_never_run_together_and_no_space_is_doubled(before, after):
    joined = before + joint(before, after) + after
    at = len(before)
    if before[-1].isalnum() and after[0].isalnum():
        assert joined[at] == " " and joined[at + 1:] == after
    if before[-1].isspace() or after[0].isspace() or after[0] in CLOSING:
        assert joined == before + after


@pytest.mark.model
def test_a_stopped_reply_continued_reads_as_one_text(tmp_path, local_provider):
    with open_store(tmp_path) as store:
        chat_id = store.create_chat("stories")
        store.add_message(chat_id, Message(role="user", content="Write a long story about a lighthouse keeper."))
        session = ChatSession(store, chat_id, local_provider)
        session.build_engine(estimate=False)
        cancel = CancelToken()
        pieces: list[str] = []

        def arrived(piece: str) -> None:
            pieces.append(piece)
            if len("".join(pieces).split()) >= 3:
                threading.Thread(target=cancel.cancel).start()  # Stop, as the window presses it

        stopped = session.reply(Message(role="assistant", content="", incomplete=True), on_text=arrived,
                                cancel=cancel).message
        written: list[str] = []
        going_on = session.continue_reply(stopped.id, on_text=written.append, cancel=CancelToken()).message
        after = "".join(written)
        assert after and going_on.content == stopped.content + joint(stopped.content, after) + after
        if stopped.content[-1:].isalnum() and after[0].isalnum():  # the model's new turn starts with a word: a space between
            assert going_on.content[len(stopped.content)] == " "
        assert store.load_messages(chat_id)[-1].content == going_on.content
