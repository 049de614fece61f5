"""Each reply keeps what it was written from (issue 26): its record rebuilds exactly the tokens the model process was
sent, and still does after later summaries and their undo. The embedded model, a real store."""

from __future__ import annotations

import hashlib
import json

import pytest
from precis.core.chat.sent_prompts import NotRebuilt, keep_sent, kept_before, sent_prompt, sent_settings
from precis.core.chat.session import ChatSession
from precis.core.cli.main import main
from precis.core.context.engine import ContextEngine, Prompt
from precis.core.context.prompt_parts import RECALLED, SUMMARY, prompt_parts
from precis.core.context.sent_record import RESTATE_AFTER, PromptSettings, SentRecord, fingerprint, rebuild, sent_record
from precis.core.model.messages import Message
from precis.core.providers.base import CancelToken
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.settings import SUMMARIZATION_KEY
from precis.core.storage.chats import restore_engine
from precis.core.storage.store import attach_engine, open_store

FACTS = [
    "The orders database has 40 tables; order_lines holds 90 million rows and is copied in batches of ten thousand.",
    "Kestrel is the name of the new cluster; it runs in the Frankfurt region on twelve nodes.",
    "Readers move first, writers last, and the old cluster stays read-only for a week after the move.",
    "The copy of the invoices table failed twice on a foreign key to customers, fixed by copying customers first.",
    "Marta owns the rollback plan: a DNS switch back to the old cluster within five minutes.",
    "The weekend of the move is the 14th; the freeze on schema changes starts on the 7th.",
]

# What makes each message long enough that a summary of it saves room.
FILLER = (" We went through it in the planning meeting, and the team agreed to write it into the runbook, with the"
          " owners of each step named and the checks before and after each one listed in the order they run.") * 3


def ask(session: ChatSession, question: str, sent: list[list[int]]) -> Message:
    session.add_messages([Message(role="user", content=question)])
    placeholder = Message(role="assistant", content="", incomplete=True)
    result = session.reply(placeholder, on_text=lambda _piece: None, cancel=CancelToken())
    assert result.problem is None
    return result.message


def rebuilt_tokens(session: ChatSession, store, chat_id: str, reply: Message, provider) -> list[int]:
    """The tokens of the prompt `reply`'s record rebuilds, as the model process would read them."""
    engine = session.engine
    position = engine.archive.position[reply.id]
    record = SentRecord.decode(reply.sent, kept_before(engine.messages, position))
    settings = PromptSettings.from_json(store.prompt_setup(chat_id, record.settings))
    _, prompt = rebuild(record, settings, engine.messages[:position], list(engine.records), engine.counter)
    return provider.prompt_tokens(prompt.messages)


@pytest.mark.model
def test_each_replys_record_rebuilds_the_tokens_sent_through_summaries_recall_edits_and_undo(tmp_path, local_provider,
                                                                                       monkeypatch, capsys):
    sent: list[list[int]] = []
    read = local_provider.prompt_tokens

    def spied(messages, *args, **kwargs):  # what stream_chat hands the model process
        tokens = read(messages, *args, **kwargs)
        sent.append(tokens)
        return tokens

    monkeypatch.setattr(local_provider, "prompt_tokens", spied)
    with open_store(tmp_path) as store:
        store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 2})
        chat_id = store.create_chat("move", settings={"context_window": 2048, "reserve_output": 16,
                                                      "system_prompt": "Answer in one short sentence."})
        session = ChatSession(store, chat_id, local_provider)
        session.max_reply_tokens = 16
        session.build_engine(estimate=False)
        replies: list[tuple[Message, list[int]]] = []
        for n, fact in enumerate(FACTS):
            if n == 4:
                session.summarize_now()
            replies.append((ask(session, fact + FILLER, sent), sent[-1]))
        replies.append((ask(session, "Which region does the Kestrel cluster run in?", sent), sent[-1]))
        engine = session.engine
        last_parts, _ = sent_prompt(store, chat_id, engine, replies[-1][0].id)
        kinds = {part.kind for part in last_parts}
        assert SUMMARY in kinds and RECALLED in kinds, kinds

        for reply, tokens in replies:
            assert rebuilt_tokens(session, store, chat_id, reply, local_provider) == tokens
        before = [sent_prompt(store, chat_id, engine, reply.id) for reply, _ in replies]

        # An edit of the question takes its reply along as a version; paged back, the reply shows what it was sent.
        question = engine.messages[-2]
        session.edit_last(question.id, "Which region is Kestrel in?")
        edited = session.reply(Message(role="assistant", content="", incomplete=True), on_text=lambda _p: None,
                               cancel=CancelToken()).message
        assert sent_prompt(store, chat_id, session.engine, edited.id)[0][-2].text == "Which region is Kestrel in?"
        session.show_version(question.id, 0)
        assert sent_prompt(store, chat_id, session.engine, replies[-1][0].id) == before[-1]

        # Later summaries and their undo change the next prompt, not what earlier replies were written from.
        session.summarize_now()
        session.undo_last()
        session.undo_last()
        reopened = ChatSession(store, chat_id, local_provider)
        reopened.build_engine(estimate=False)
        try:
            for (reply, tokens), parts in zip(replies, before, strict=True):
                assert sent_prompt(store, chat_id, reopened.engine, reply.id) == parts
                assert rebuilt_tokens(reopened, store, chat_id, reply, local_provider) == tokens
            numbers = {m.id: n for n, m in enumerate(reopened.engine.messages, 1)}
        finally:
            reopened.close()
        session.close()

    # The command line shows the same, found by the number `precis history` gives the reply.
    reply, _ = replies[-1]
    assert main(["--data-dir", str(tmp_path), "prompt", "move", "--reply", str(numbers[reply.id]), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["parts"] == [part.as_json() for part in before[-1][0]]
    assert printed["tokens"] == before[-1][1]


def test_a_reply_without_a_record_says_so(tmp_path, capsys):
    with open_store(tmp_path) as store:
        chat_id = store.create_chat("imported")
        question, answer = Message(role="user", content="Hello?"), Message(role="assistant", content="Hi.")
        store.add_messages(chat_id, [question, answer])
        session = ChatSession(store, chat_id, OpenAICompatProvider(base_url="http://127.0.0.1:9/v1", model="m"))
        session.build_engine()
        with pytest.raises(NotRebuilt, match="written before"):
            sent_prompt(store, chat_id, session.engine, answer.id)
        with pytest.raises(NotRebuilt, match="message 1 is the user's, not a reply"):
            sent_prompt(store, chat_id, session.engine, question.id)
        session.close()

    # The command line: each refusal says what is wrong, a message it cannot find is bad input (exit 2).
    for reply, code, said in (("2", 1, "this reply was written before Precis kept"), ("1", 1, "message 1 is the user's"),
                              ("3", 2, "no message 3 in this conversation: its messages are numbered 1 to 2"),
                              ("abc", 2, "no message 'abc' in this conversation")):
        assert main(["--data-dir", str(tmp_path), "prompt", "imported", "--reply", reply]) == code
        error = capsys.readouterr().err
        assert error.startswith(f"precis prompt: {said}"), error


def old_form(engine: ContextEngine, prompt: Prompt, settings_key: str) -> tuple[str, str, str]:
    """A reply's record as Precis kept it before the compact form, with its setup's key and JSON: written here as
    that Precis wrote them (context/old_record.py reads them)."""
    position = engine.archive.position
    setup = json.dumps({"chain": [r.id for r in engine.chain()], "settings": settings_key,
                        "pinned": sorted(engine.archive.pinned_ids, key=position.__getitem__)},
                       sort_keys=True, separators=(",", ":"))
    key = hashlib.sha256(setup.encode("utf-8")).hexdigest()[:16]
    runs: list[list[int]] = []  # [first, more]
    for place in map(position.__getitem__, engine.recaller.chosen):
        if runs and place == sum(runs[-1]) + 1:
            runs[-1][1] += 1
        else:
            runs.append([place, 0])
    places = ",".join(base36(first) + (f"+{more}" if more else "") for first, more in runs)
    return f"c={fingerprint(prompt.messages):x};s={key};f={engine.counter.factor!r};r={places}", key, setup


def base36(number: int) -> str:
    return (base36(number // 36) if number >= 36 else "") + "0123456789abcdefghijklmnopqrstuvwxyz"[number % 36]


def test_replies_kept_in_the_old_form_still_show_what_was_sent_and_the_next_one_leans_on_none(tmp_path):
    with open_store(tmp_path) as store:
        store.set_setting(SUMMARIZATION_KEY, {"mode": "rule", "keep_recent": 2})
        chat_id = store.create_chat("move", settings={"context_window": 1400, "reserve_output": 128})
        engine, _ = restore_engine(store, chat_id, default_window=1400)
        attach_engine(store, chat_id, engine)

        def add(message: Message) -> None:
            store.add_message(chat_id, message)
            engine.append(message, auto=False)

        for n, fact in enumerate(FACTS):
            add(Message(role="user", content=fact + FILLER))
            add(Message(role="assistant", content=f"Noted, {n}."))
        engine.summarize_now()
        engine.set_pinned(engine.messages[-1].id, True)  # the record names it; the chat, reopened, has no pin
        expected, replies = [], []
        for question in ("Which region does the Kestrel cluster run in?", "Who owns the rollback plan?"):
            add(Message(role="user", content=question))
            prompt = engine.assemble()
            assert any(item.kind == "recalled" for item in prompt.items)
            expected.append(prompt_parts(engine, prompt))
            if not replies:
                _, settings = sent_record(engine, prompt)
                sent, key, setup = old_form(engine, prompt, settings.key)
                store.keep_prompt_setup(chat_id, {key: setup, settings.key: settings.as_json()})
            else:
                sent = keep_sent(store, chat_id, engine, prompt)
                assert SentRecord.decode(sent, []) == sent_record(engine, prompt)[0]  # says everything itself
            replies.append(Message(role="assistant", content="Frankfurt.", sent=sent))
            add(replies[-1])

    with open_store(tmp_path) as store:
        reopened, _ = restore_engine(store, chat_id, default_window=1400)
        assert [sent_prompt(store, chat_id, reopened, reply.id) for reply in replies] == expected
        assert [sent_settings(store, chat_id, reopened, reply.id) for reply in replies] == [settings] * 2


def test_reading_a_record_reads_a_bounded_number_of_records_before_it(tmp_path):
    with open_store(tmp_path) as store:
        chat_id = store.create_chat("long")
        engine, _ = restore_engine(store, chat_id, default_window=8192)
        for n in range(3 * RESTATE_AFTER):
            engine.append(Message(role="user", content=f"question {n}"))
            engine.append(Message(role="assistant", content=f"answer {n}",
                                  sent=keep_sent(store, chat_id, engine, engine.assemble())))
        for end, reply in enumerate(engine.messages):
            if reply.role == "assistant":
                _, leaned_on = SentRecord.read(reply.sent, kept_before(engine.messages, end))
                assert leaned_on <= RESTATE_AFTER
