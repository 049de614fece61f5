"""A ChatGPT or Claude.ai data export's conversations.json imports as a chat for each conversation (title, times,
the branch shown, other branches as versions), all or nothing, and says what it left out. The fixtures in
tests/data/exports were written by hand after public parsers of both exports (see tests/data/exports/README.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from precis.core.storage.importers import ImportFailed, detect_format, import_file
from precis.core.storage.store import open_store

EXPORTS = Path(__file__).resolve().parents[1] / "data" / "exports"
CHATGPT = EXPORTS / "chatgpt_conversations.json"
CLAUDE_AI = EXPORTS / "claude_ai_conversations.json"


def _chats(store) -> dict[str, list[tuple[str, str]]]:
    return {chat.title: [(m.role, m.content) for m in store.load_messages(chat.id)] for chat in store.list_chats()}


def test_chatgpt_export_imports_the_branch_shown_of_each_conversation_and_says_what_it_left_out(tmp_path):
    with open_store(tmp_path) as store:
        result = import_file(store, CHATGPT)
        chats = _chats(store)
        by_title = {chat.title: chat for chat in store.list_chats()}
    assert result.described() == "2 chats (7 messages); left out: 1 image, 1 tool output, 1 empty conversation"
    assert chats["Three days in Lisbon"] == [
        ("user", "Plan three days in Lisbon for me."),
        ("assistant", "Take it slow: Alfama and the castle on day one, Belem on day two, a day trip to Sintra on day "
                      "three."),
        ("user", "And where should I eat?"),
        ("assistant", "Try pasteis de nata in Belem and grilled sardines in Alfama.")]
    # The code the model ran is kept as text; its output (a tool run) and its hidden thoughts are not.
    assert chats["Reading a chart"] == [
        ("user", "[image]\nWhat is the average of the bars in this chart?"),
        ("assistant", "```python\nprint(sum([3, 5, 7]) / 3)\n```"),
        ("assistant", "The bars average 5.")]
    lisbon = by_title["Three days in Lisbon"]
    assert (lisbon.created_at, lisbon.updated_at) == (1717000000.0, 1717000600.5)
    assert result.chat_id == by_title["Reading a chart"].id  # the last changed opens
    assert set(result.chat_ids) == {chat.id for chat in by_title.values()}


def test_a_regenerated_chatgpt_reply_is_a_version_whose_branch_comes_back_when_shown(tmp_path):
    with open_store(tmp_path) as store:
        import_file(store, CHATGPT)
        chat = next(c for c in store.list_chats() if c.title == "Three days in Lisbon")
        reply = store.load_messages(chat.id)[1]
        kept = store.versions(chat.id)[reply.id]
        assert kept.texts == ("Day 1: Alfama. Day 2: Belem. Day 3: Sintra.", reply.content) and kept.shown == 1
        store.show_version(chat.id, reply, 0)
        assert [m.content for m in store.load_messages(chat.id)][1:] == [
            "Day 1: Alfama. Day 2: Belem. Day 3: Sintra.", "Too rushed, try again."]


def test_claude_ai_export_keeps_text_and_attachments_and_marks_files(tmp_path):
    with open_store(tmp_path) as store:
        result = import_file(store, CLAUDE_AI)
        chats = _chats(store)
    assert result.described() == ("2 chats (6 messages); left out: 1 file, 1 tool use, 1 tool result, "
                                   "1 empty conversation")
    assert chats["Haiku about autumn"] == [
        ("user", "Write a haiku about these notes.\n\n[attachment: notes.txt]\nLeaves fall. Cold mornings. Apples."),
        ("assistant", "Crisp apples ripen\nleaves let go in the cold dawn\nautumn breathes slower"),
        ("user", "Now one for this photo.\n\n[file: orchard.jpg]"),
        ("assistant", "Rows of laden trees\nthe ladder leans on the light\nbaskets fill with red")]
    # No name: titled from its first message, as a chat of Precis's own.
    assert chats["How do I reverse a list in Python?"][1] == ("assistant", "Use reversed(xs) or xs[::-1].")


@pytest.mark.parametrize(("fixture", "kind"), [(CHATGPT, "chatgpt"), (CLAUDE_AI, "claude-ai")])
def test_the_format_is_told_from_the_content_not_the_name(tmp_path, fixture, kind):
    renamed = tmp_path / "backup.txt"
    shutil.copy(fixture, renamed)
    assert detect_format(renamed, renamed.read_bytes()) == kind
    with open_store(tmp_path / "data") as store:
        assert len(import_file(store, renamed).chat_ids) == 2


def _broken(tmp_path: Path, fixture: Path, break_it) -> Path:
    conversations = json.loads(fixture.read_text(encoding="utf-8"))
    break_it(conversations)
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(conversations, indent=1), encoding="utf-8")
    return path


@pytest.mark.parametrize(("fixture", "break_it", "said"), [
    (CHATGPT, lambda c: c[1]["mapping"]["r2"]["message"]["author"].update(role="robot"),
     "conversation 2 ('Reading a chart'): field 'mapping.r2.message.author.role' must be user, assistant, system or "
     "tool, got 'robot'"),
    (CHATGPT, lambda c: c[0].update(current_node="gone"),
     "conversation 1 ('Three days in Lisbon'): field 'current_node' names node 'gone', which 'mapping' lacks"),
    (CLAUDE_AI, lambda c: c[1]["chat_messages"][1].update(sender="bot"),
     "conversation 2: field 'chat_messages[1].sender' must be human or assistant, got 'bot'"),
], ids=["role", "current_node", "sender"])
def test_bad_input_names_file_conversation_and_field_and_imports_nothing(tmp_path, fixture, break_it, said):
    path = _broken(tmp_path, fixture, break_it)
    with open_store(tmp_path / "data") as store:
        with pytest.raises(ImportFailed) as failed:
            import_file(store, path)
        assert store.list_chats() == []  # the conversations before the bad one were not stored either
    assert failed.value.source == str(path) and failed.value.problem == said
    assert failed.value.line > 1  # the line the conversation starts on, in an export laid out over many


def test_the_cli_prints_each_new_chat_id_and_the_report(tmp_path):
    done = subprocess.run([sys.executable, "-m", "precis.core.cli.main", "--data-dir", str(tmp_path), "import",
                           str(CHATGPT)], capture_output=True, text=True, check=True)
    with open_store(tmp_path) as store:
        assert sorted(done.stdout.split()) == sorted(chat.id for chat in store.list_chats())
    assert done.stderr.splitlines()[0] == ("precis import: imported 2 chats (7 messages); left out: 1 image, "
                                           "1 tool output, 1 empty conversation")


def _node(node_id: str, parent: str | None, role: str, text: str) -> dict:
    return {"id": node_id, "parent": parent, "children": [],
            "message": {"id": node_id, "author": {"role": role}, "create_time": None,
                        "content": {"content_type": "text", "parts": [text]}, "metadata": {}, "recipient": "all"}}


@st.composite
def _trees(draw):
    """A ChatGPT conversation tree of alternating user and assistant turns, each node's parent drawn at random
    (branches), and a random node as the current one."""
    mapping = {"root": {"id": "root", "parent": None, "children": [], "message": None}}
    depth = {"root": 0}
    for n in range(draw(st.integers(1, 12))):
        parent = draw(st.sampled_from(sorted(depth)))
        node_id = f"n{n}"
        depth[node_id] = depth[parent] + 1
        mapping[node_id] = _node(node_id, parent, "user" if depth[node_id] % 2 else "assistant", f"text {n}")
        mapping[parent]["children"].append(node_id)
    return mapping, draw(st.sampled_from(sorted(set(mapping) - {"root"})))


@settings(max_examples=40, deadline=None)
@given(tree=_trees())
def test_the_chat_is_the_path_to_the_current_node_and_every_sibling_a_version(tmp_path_factory, tree):
    mapping, current = tree
    path = tmp_path_factory.mktemp("tree") / "conversations.json"
    path.write_text(json.dumps([{"title": "t", "create_time": 1.0, "update_time": 2.0, "current_node": current,
                                 "mapping": mapping}]), encoding="utf-8")
    walk, node = [], current
    while node != "root":
        walk.append(node)
        node = mapping[node]["parent"]
    walk.reverse()
    with open_store(path.parent / "data") as store:
        chat_id = import_file(store, path).chat_id
        messages = store.load_messages(chat_id)
        versions = store.versions(chat_id)
    assert [m.content for m in messages] == [mapping[n]["message"]["content"]["parts"][0] for n in walk]
    for message, node in zip(messages, walk, strict=True):
        siblings = mapping[mapping[node]["parent"]]["children"]
        texts = tuple(mapping[s]["message"]["content"]["parts"][0] for s in siblings)
        assert (versions[message.id].texts if message.id in versions else (message.content,)) == texts
