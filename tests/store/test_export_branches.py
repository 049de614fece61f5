"""An edited or regenerated message's branches (the messages that followed an earlier version) travel in Precis
JSONL, in the `branches` key of its line: an import gives back every branch, so switching versions afterwards shows
what it showed before the export; a reader that ignores the key reads the conversation shown; a malformed key is
refused naming file, line and field, with nothing imported; a secret in a branch is redacted. A real store, the real
commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.storage.exporters import export_chat, write_export
from precis.core.storage.importers import import_file
from precis.core.storage.store import Store, open_store

from benchmarks.fidelity import read_jsonl

OPENAI_KEY = "sk-proj-4fJ9xQ2mZ8rT1vW6yB3nK7pL0sD5hG2aC9eU"


def conversations(store: Store, chat_id: str, start: int = 0) -> list:
    """Every conversation switching versions can show, from place `start` on, as a tree: the messages in order
    (role, id, text), and at the first message with versions, for each version what follows it when it is shown.
    Switches back to the version shown before, so the chat is left as it was."""
    messages = store.load_messages(chat_id)
    versions = store.versions(chat_id)
    for place in range(start, len(messages)):
        message, kept = messages[place], versions.get(messages[place].id)
        if kept is None:
            continue
        following = []
        for position in range(len(kept.texts)):
            store.show_version(chat_id, message, position)
            following.append(conversations(store, chat_id, place + 1))
        store.show_version(chat_id, message, kept.shown)
        shown_before = [(m.role, m.id, m.content) for m in messages[start:place]]
        return [*shown_before, (message.role, message.id, kept.texts, kept.shown, following)]
    return [(m.role, m.id, m.content) for m in messages[start:]]


def edit(store: Store, chat_id: str, message: Message, text: str) -> None:
    """A new version of the message, as the window's Edit and Regenerate keep one: the text it had first, if it has
    no version yet, then the new one; what followed it goes with the earlier version."""
    if message.id not in store.versions(chat_id):
        store.save_version(chat_id, message)
    store.save_version(chat_id, message.with_changes(content=text))


def apply(store: Store, chat_id: str, steps: list[tuple[str, int, str]]) -> None:
    for kind, pick, text in steps:
        messages = store.load_messages(chat_id)
        if kind == "send" or not messages:
            role = "user" if len(messages) % 2 == 0 else "assistant"
            store.add_message(chat_id, Message(role=role, content=text))
        elif kind == "edit":
            edit(store, chat_id, messages[pick % len(messages)], text)
        else:
            versions = store.versions(chat_id)
            switchable = [m for m in messages if m.id in versions]
            if switchable:
                message = switchable[pick % len(switchable)]
                store.show_version(chat_id, message, pick % len(versions[message.id].texts))


steps_strategy = st.lists(st.tuples(st.sampled_from(["send", "send", "edit", "switch"]), st.integers(0, 99),
                                    st.text(alphabet="ab .", min_size=1, max_size=6)), min_size=1, max_size=14)


@given(steps=steps_strategy)
def test_every_branch_survives_export_and_import(tmp_path_factory, steps):
    """Messages sent, edited and regenerated at random places, versions switched: after export and import, every
    version of every message shows the same following messages, branches of branches too."""
    data, target = tmp_path_factory.mktemp("data"), tmp_path_factory.mktemp("files") / "chat.jsonl"
    with open_store(data) as store:
        chat_id = store.create_chat("Branches")
        apply(store, chat_id, steps)
        before = conversations(store, chat_id)
        write_export(export_chat(store, chat_id, "jsonl").pieces, target)
        imported = import_file(store, target).chat_id
        assert conversations(store, imported) == before
        # A reader that ignores `branches` sees one line a message of the conversation shown.
        assert [(line["role"], line["content"]) for line in read_jsonl(target)] == [
            (m.role, m.content) for m in store.load_messages(chat_id)]


def test_a_branch_of_a_branch_survives_export_and_import(tmp_path):
    """A reply edited, then the question before it: the reply's earlier branch is inside the question's."""
    question, answer = Message(role="user", content="Name a colour."), Message(role="assistant", content="Red.")
    more, reply = Message(role="user", content="Another?"), Message(role="assistant", content="Blue.")
    with open_store(tmp_path / "data") as store:
        chat_id = store.import_chat("Colours", [question, answer, more, reply])
        edit(store, chat_id, more, "A darker one?")
        store.add_message(chat_id, Message(role="assistant", content="Navy."))
        edit(store, chat_id, question, "Name a fruit.")
        target = tmp_path / "colours.jsonl"
        write_export(export_chat(store, chat_id, "jsonl").pieces, target)
        imported = import_file(store, target).chat_id
        assert [m.content for m in store.load_messages(imported)] == ["Name a fruit."]
        assert [m.content for m in store.show_version(imported, question, 0)] == [
            "Name a colour.", "Red.", "A darker one?", "Navy."]
        assert [m.content for m in store.show_version(imported, more, 0)] == ["Another?", "Blue."]

def chat_with_a_branch(store: Store, first_answer: str) -> tuple[str, Message]:
    """A question answered, then edited (the window's Edit) and answered again: the first answer is the branch of
    the question's first version."""
    question = Message(role="user", content="Which ferry leaves first?")
    chat_id = store.import_chat("Ferries", [question, Message(role="assistant", content=first_answer)])
    edit(store, chat_id, question, "Which ferry leaves last?")
    store.add_message(chat_id, Message(role="assistant", content="The 22:15."))
    return chat_id, question


def test_a_reader_ignoring_the_key_reads_the_conversation_shown(tmp_path):
    with open_store(tmp_path / "data") as store:
        chat_id, _ = chat_with_a_branch(store, "The 7:10.")
        target = tmp_path / "ferries.jsonl"
        write_export(export_chat(store, chat_id, "jsonl").pieces, target)
    lines = read_jsonl(target)
    assert [(line["role"], line["content"]) for line in lines] == [("user", "Which ferry leaves last?"),
                                                                   ("assistant", "The 22:15.")]
    assert "The 7:10." in target.read_text(encoding="utf-8")  # in the question's `branches`, not a line
    assert lines[0]["branches"][0][0]["content"] == "The 7:10." and lines[0]["branches"][1] is None


def test_a_secret_in_a_branch_is_redacted_and_the_redacted_branch_imports(tmp_path, capsys):
    data = tmp_path / "data"
    with open_store(data) as store:
        chat_id, _ = chat_with_a_branch(store, f"Use API key: {OPENAI_KEY} to book it.")
    target = tmp_path / "ferries.jsonl"
    assert main(["--data-dir", str(data), "export", chat_id, "--format", "jsonl", "-o", str(target)]) == 0
    assert "1 secret redacted" in capsys.readouterr().err
    text = target.read_text(encoding="utf-8")
    assert OPENAI_KEY not in text and "[REDACTED:" in text
    with open_store(data) as store:
        imported = import_file(store, target).chat_id
        question = store.load_messages(imported)[0]
        question_first, answer = store.show_version(imported, question, 0)
        assert question_first.content == "Which ferry leaves first?"
        assert OPENAI_KEY not in answer.content and "[REDACTED:" in answer.content


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


QUESTION = {"role": "user", "content": "Which ferry leaves last?", "versions": ["Which ferry leaves first?",
                                                                                 "Which ferry leaves last?"],
            "version_shown": 1}
ANSWER = {"role": "assistant", "content": "The 22:15.", "id": "answer-2"}


@pytest.mark.parametrize(("branches", "field", "says"), [
    ({"x": 1}, "'branches'", "an entry for each of the 2 versions"),
    ([[{"role": "assistant", "content": "The 7:10."}]], "'branches'", "an entry for each of the 2 versions"),
    (["The 7:10.", None], "'branches[0]'", "list of message records or null"),
    ([None, [{"role": "assistant", "content": "The 7:10."}]], "'branches[1]'", "must be null"),
    ([[{"role": "captain", "content": "The 7:10."}], None], "'branches[0][0]'", "field 'role' must be one of"),
    ([[{"role": "assistant", "content": 7}], None], "'branches[0][0]'", "field 'content' must be a string"),
    ([[{"role": "assistant", "content": "B", "versions": ["A"], "version_shown": 0}], None],
     "'branches[0][0].versions'", "is not the message's 'content'"),
    ([[{"role": "assistant", "content": "B", "versions": ["A", "B"], "version_shown": 1, "branches": [7, None]}],
      None], "'branches[0][0].branches[0]'", "list of message records or null"),
    ([[{"role": "assistant", "content": "The 7:10.", "id": "answer-2"}], None], "'branches[0][0].id'",
     "repeats 'answer-2'"),
])
def test_a_malformed_branch_key_is_refused_naming_file_line_and_field(tmp_path, capsys, branches, field, says):
    source = _write(tmp_path / "bad.jsonl", [{"role": "system", "content": "Be brief."},
                                            {**QUESTION, "branches": branches}, ANSWER])
    data = tmp_path / "data"
    code = main(["--data-dir", str(data), "import", str(source)])
    err = capsys.readouterr().err
    assert code != 0
    assert f"{source}, line 2: field {field}" in err and says in err and "Nothing was imported" in err
    with open_store(data) as store:
        assert store.list_chats() == []


def test_branches_without_versions_are_refused(tmp_path, capsys):
    source = _write(tmp_path / "bad.jsonl", [{"role": "user", "content": "Hi.", "branches": [None]}])
    assert main(["--data-dir", str(tmp_path / "data"), "import", str(source)]) != 0
    err = capsys.readouterr().err
    assert f"{source}, line 1: field 'branches' needs the message's 'versions'" in err


def test_a_hand_written_branch_imports_and_its_tool_result_answers_its_call(tmp_path):
    """A file written by another tool: a branch without ids, whose tool result names no call id."""
    branch = [{"role": "assistant", "content": "", "name": "shell", "tool_args": {"command": "ferries --first"}},
              {"role": "tool", "content": "07:10 Harbour", "name": "shell"},
              {"role": "assistant", "content": "The 7:10."}]
    source = _write(tmp_path / "hand.jsonl", [{**QUESTION, "branches": [branch, None]}, ANSWER])
    with open_store(tmp_path / "data") as store:
        chat_id = import_file(store, source).chat_id
        question = store.load_messages(chat_id)[0]
        shown = store.show_version(chat_id, question, 0)
        assert [m.content for m in shown] == ["Which ferry leaves first?", "", "07:10 Harbour", "The 7:10."]
        assert shown[2].tool_call_id == shown[1].tool_calls[0].id
        assert [m.content for m in store.show_version(chat_id, question, 1)] == ["Which ferry leaves last?",
                                                                                 "The 22:15."]


def test_markdown_shows_an_edited_message_s_earlier_version_with_what_followed_it(tmp_path, capsys):
    """Markdown carried the version shown alone: the reply to the message as first sent (its branch) was in the
    JSONL export only. It is folded under the message, redacted as the rest."""
    data = tmp_path / "data"
    with open_store(data) as store:
        chat_id = store.create_chat("Ferries")
        question = Message(role="user", content=f"Which ferry leaves first? My key is {OPENAI_KEY}")
        store.add_messages(chat_id, [question, Message(role="assistant", content="The 7:10 to Vashon.")])
        edit(store, chat_id, question, "Which ferry leaves last?")
        store.add_message(chat_id, Message(role="assistant", content="The 23:55 to Bremerton."))
    assert main(["--data-dir", str(data), "export", chat_id, "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert OPENAI_KEY not in out
    shown = out.index("### User (version 2 of 2)\n\nWhich ferry leaves last?")
    earlier = out.index("<details>\n<summary>Version 1 of 2, and 1 message that followed it</summary>\n\n"
                        "Which ferry leaves first? My key is [REDACTED:")
    branch_reply = out.index("### Assistant\n\nThe 7:10 to Vashon.\n\n</details>")
    reply_now = out.index("### Assistant\n\nThe 23:55 to Bremerton.")
    assert shown < earlier < branch_reply < reply_now
