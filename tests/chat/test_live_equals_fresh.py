"""What the inspector shows live equals what a fresh opening of the same chat shows, after every operation (issue 22:
one chat's gauge read 944 tokens live and 357 once opened again, after Regenerate). The embedded model, a real
store: the model's reported prompt counts are what corrected (and skewed) the live counts."""

from __future__ import annotations

import threading

import pytest
from precis.core.chat.session import ChatSession
from precis.core.model.messages import Message
from precis.core.providers.base import CancelToken
from precis.core.settings import SUMMARIZATION_KEY
from precis.core.storage.store import open_store

# Long enough (over 256 tokens) that the model's count of the prompt corrects the estimate.
BRIEF = ("We are planning the move of the orders service to the new cluster. The database has 40 tables; the largest, "
         "order_lines, holds 90 million rows and is copied in batches of ten thousand, each batch's count checked "
         "against the source. Readers move first, writers last, and the old cluster stays read-only for a week. ") * 4


def shown(session: ChatSession) -> tuple:
    snapshot = session.snapshot()
    return (snapshot.usage.total, snapshot.usage.by_kind, [r.id for r in snapshot.chain],
            [(m.id, m.content, m.pinned, m.incomplete) for m in snapshot.messages])


def opened_afresh(store, chat_id: str, provider) -> tuple:
    fresh = ChatSession(store, chat_id, provider)
    fresh.build_engine(estimate=False)
    try:
        return shown(fresh)
    finally:
        fresh.close()


def reply(session: ChatSession, regenerate: Message | None = None, stop_after_first_piece: bool = False):
    cancel = CancelToken()

    def arrived(_piece: str) -> None:
        if stop_after_first_piece:
            threading.Thread(target=cancel.cancel).start()  # Stop, pressed from another thread as the window does

    placeholder = (regenerate or Message(role="assistant", content="")).with_changes(content="", incomplete=True)
    return session.reply(placeholder, on_text=arrived, cancel=cancel, regenerate=regenerate is not None)


@pytest.mark.model
def test_every_operation_leaves_the_live_counts_equal_to_a_fresh_opening(tmp_path, local_provider):
    with open_store(tmp_path) as store:
        store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 2})
        chat_id = store.create_chat("move", settings={"reserve_output": 24})
        session = ChatSession(store, chat_id, local_provider)
        session.build_engine(estimate=False)
        steps: list[str] = []

        def check(step: str) -> None:
            steps.append(step)
            assert shown(session) == opened_afresh(store, chat_id, local_provider), f"after {' → '.join(steps)}"

        session.add_messages([Message(role="user", content=BRIEF + "What should we copy first?")])
        first = reply(session).message
        check("send")
        assert session.engine.counter.calibration.observations == 1  # the model's count was taken
        reply(session, regenerate=first)
        check("regenerate")
        session.show_version(first.id, 0)
        check("page to the first version")
        for question in ("And the writers?", "How long is the old cluster kept?"):
            session.add_messages([Message(role="user", content=question)])
            reply(session)
        check("two more turns")
        user = session.engine.messages[-2]
        session.edit_last(user.id, "How long is the old cluster kept read-only?")
        reply(session)
        check("edit and resend")
        session.show_version(user.id, 0)
        check("page back to the question before the edit")
        session.add_messages([Message(role="user", content="List the tables to copy.")])
        stopped = reply(session, stop_after_first_piece=True)
        assert stopped.message.incomplete
        check("stop")
        session.set_pinned(session.engine.messages[2].id, True)
        check("pin")
        session.summarize_now()
        check("summarize")
        session.undo_last()
        check("undo")
