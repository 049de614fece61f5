"""Versions through the chat core (ChatSession), as the window and `precis chat` use them: an edited message keeps
the branch it began, the model is sent only the branch shown, and a reply cut at its token limit is continued in
place. A real SQLite file; the scripted provider gives replies known in advance, so a test can tell the branches
apart in the prompt and cut a reply at its limit at a chosen word (the window's tests use the real model)."""

from __future__ import annotations

from precis.core.chat.session import CONTINUE_REQUEST, ChatSession
from precis.core.model.messages import Message
from precis.core.providers.base import CancelToken
from precis.core.storage.store import Versions, open_store

from tests.fakes import ScriptedProvider


def reply(session: ChatSession):
    return session.reply(Message(role="assistant", content="", incomplete=True), on_text=lambda _t: None,
                         cancel=CancelToken())


def open_session(store, chat_id, provider) -> ChatSession:
    session = ChatSession(store, chat_id, provider)
    session.build_engine(estimate=False)
    return session


def test_an_edited_message_keeps_its_old_branch_and_the_model_sees_only_the_branch_shown(tmp_path):
    provider = ScriptedProvider(["Red.", "Blue.", "A pear.", "Crimson, like a cardinal."])
    with open_store(tmp_path) as store:
        chat_id = store.create_chat("colours")
        session = open_session(store, chat_id, provider)
        question = Message(role="user", content="Name a colour.")
        session.add_messages([question])
        first = reply(session).message
        session.reply(first.with_changes(content="", incomplete=True), on_text=lambda _t: None, cancel=CancelToken(),
                      regenerate=True)

        snapshot = session.edit_last(question.id, "Name a fruit.")
        assert [m.content for m in snapshot.messages] == ["Name a fruit."]  # the reply waits to be written
        assert snapshot.versions == {question.id: Versions(("Name a colour.", "Name a fruit."), 1)}
        assert reply(session).message.content == "A pear."
        assert [m.content for m in provider.calls[-1]] == ["Name a fruit."]  # nothing of the other branch
        session.close()

    with open_store(tmp_path) as store:  # a restart: the versions are stored
        session = open_session(store, chat_id, provider)
        assert session.snapshot().versions[question.id] == Versions(("Name a colour.", "Name a fruit."), 1)
        snapshot = session.show_version(question.id, 0)
        assert [m.content for m in snapshot.messages] == ["Name a colour.", "Blue."]
        assert snapshot.versions == {question.id: Versions(("Name a colour.", "Name a fruit."), 0),
                                     first.id: Versions(("Red.", "Blue."), 1)}
        assert [m.content for m in session.engine.assemble().messages] == ["Name a colour.", "Blue."]
        # Sending from there goes on with that branch.
        session.add_messages([Message(role="user", content="Darker?")])
        assert reply(session).message.content == "Crimson, like a cardinal."
        assert [m.content for m in provider.calls[-1]] == ["Name a colour.", "Blue.", "Darker?"]
        session.close()
    with open_store(tmp_path) as store:
        assert [m.content for m in store.load_messages(chat_id)] == [
            "Name a colour.", "Blue.", "Darker?", "Crimson, like a cardinal."]


def test_a_reply_cut_at_its_limit_is_marked_and_continue_appends_to_it(tmp_path):
    provider = ScriptedProvider([("The three reasons are: first, the", "length"), " cost; second, the time.",
                                 ("A", "length"), ("nother.", "stop")])
    with open_store(tmp_path) as store:
        chat_id = store.create_chat("reasons", settings={"reserve_output": 64})
        session = open_session(store, chat_id, provider)
        session.add_messages([Message(role="user", content="Why?")])
        cut = reply(session)
        assert cut.cut_at == 64 and cut.message.cut_at == 64 and not cut.message.incomplete
        tokens_before = session.snapshot().usage.total

        pieces: list[str] = []
        going_on = session.continue_reply(cut.message.id, on_text=pieces.append, cancel=CancelToken())
        whole = "The three reasons are: first, the cost; second, the time."
        assert going_on.message.content == whole and going_on.cut_at is None and going_on.message.cut_at is None
        assert "".join(pieces) == " cost; second, the time."
        # The model saw the reply so far and was asked to go on; that request is not kept.
        assert [m.content for m in provider.calls[-1]] == ["Why?", "The three reasons are: first, the",
                                                           CONTINUE_REQUEST]
        assert [m.content for m in session.engine.messages] == ["Why?", whole]
        assert going_on.snapshot.usage.total > tokens_before  # counted
        session.close()
    with open_store(tmp_path) as store:
        [_question, stored] = store.load_messages(chat_id)
        assert (stored.id, stored.content, stored.cut_at) == (cut.message.id, whole, None)


def test_a_continued_version_keeps_its_continuation_when_paged_away_and_back(tmp_path):
    provider = ScriptedProvider(["First answer.", ("Second", "length"), " answer, continued."])
    with open_store(tmp_path) as store:
        chat_id = store.create_chat("pages", settings={"reserve_output": 32})
        session = open_session(store, chat_id, provider)
        session.add_messages([Message(role="user", content="Answer twice.")])
        first = reply(session).message
        second = session.reply(first.with_changes(content="", incomplete=True), on_text=lambda _t: None,
                               cancel=CancelToken(), regenerate=True)
        assert second.message.cut_at == 32
        session.continue_reply(first.id, on_text=lambda _t: None, cancel=CancelToken())
        session.show_version(first.id, 0)
        snapshot = session.show_version(first.id, 1)
        assert (snapshot.messages[-1].content, snapshot.messages[-1].cut_at) == ("Second answer, continued.", None)
        assert snapshot.versions[first.id] == Versions(("First answer.", "Second answer, continued."), 1)
        session.close()
