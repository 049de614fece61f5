"""Importing and exporting chats through a real store: every shared transcript, OpenAI JSON, Claude Code JSONL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.model.records import CoveredMessage, SummaryRecord
from precis.core.storage.exporters import export_jsonl, export_markdown, export_openai, write_export
from precis.core.storage.importers import ImportFailed, detect_format, import_file, parse_file
from precis.core.storage.interchange import read_transcript
from precis.core.storage.store import open_store

from tests.conftest import CLAUDE_CODE_RAW, TRANSCRIPTS


def shape(messages: list[Message]) -> list[tuple]:
    """What a round trip must keep: role, content, tool name and arguments, and which call a result answers."""
    calls = {c.id: i for i, m in enumerate(messages) for c in m.tool_calls}
    return [(m.role, m.content, m.name if m.role == "tool" else None, [(c.name, c.arguments) for c in m.tool_calls],
             calls.get(m.tool_call_id) if m.role == "tool" else None) for m in messages]


@pytest.fixture
def store(tmp_path):
    with open_store(tmp_path / "data") as s:
        yield s


@pytest.mark.slow
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name)
def test_every_shared_transcript_round_trips_through_import_and_export(store, tmp_path, path):
    original = read_transcript(path)
    chat = import_file(store, path).chat_id
    stored = store.load_messages(chat)
    assert shape(stored) == shape(original)
    exported = tmp_path / "export.jsonl"
    exported.write_text("".join(export_jsonl(stored)), encoding="utf-8")
    again = store.load_messages(import_file(store, exported).chat_id)
    assert again == stored  # ids, times and flags too
    openai = tmp_path / "export.json"
    openai.write_text("".join(export_openai(stored)), encoding="utf-8")
    assert shape(store.load_messages(import_file(store, openai).chat_id)) == shape(stored)


def test_claude_code_session_imports_with_every_tool_call_paired(store):
    assert detect_format(CLAUDE_CODE_RAW, CLAUDE_CODE_RAW.read_bytes()) == "claude-code"
    chat = import_file(store, CLAUDE_CODE_RAW).chat_id
    messages = store.load_messages(chat)
    calls = {c.id: c.name for m in messages for c in m.tool_calls}
    results = [m for m in messages if m.role == "tool"]
    assert len(calls) == 242 and len(results) == 242
    assert {r.tool_call_id: r.name for r in results} == calls
    # Each result comes after its call.
    position = {c.id: i for i, m in enumerate(messages) for c in m.tool_calls}
    assert all(position[r.tool_call_id] < messages.index(r) for r in results)
    # Progress, snapshot, meta and thinking lines are not conversation.
    assert not any("local-command-caveat" in m.content for m in messages)
    assert messages[0].content.startswith("Work on bead spotter-4te")


def test_claude_code_compaction_becomes_a_summary_record_archiving_what_came_before(store):
    chat = import_file(store, CLAUDE_CODE_RAW).chat_id
    messages = store.load_messages(chat)
    [record] = store.load_records(chat)
    assert record.status == "active" and record.mode == "llm"
    assert record.text.startswith("This session is being continued from a previous conversation")
    assert record.tokens_before == 142431
    assert not any(m.content.startswith("This session is being continued") for m in messages)
    covered = {c.id for c in record.covered}
    archived = store.archived_by(chat)
    assert set(archived) == covered and set(archived.values()) == {record.id}
    # Everything before the compaction is covered, nothing after it.
    first_after = next(i for i, m in enumerate(messages) if m.id not in covered)
    assert len(covered) == first_after > 300
    assert all(m.id not in covered for m in messages[first_after:])
    assert all(c.sha256 == m.sha256() for c, m in zip(record.covered, messages, strict=False))


def test_openai_chat_json_with_tool_calls_and_a_bare_list(store, tmp_path):
    conversation = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [{"type": "text", "text": "list files"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "oops"},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py\nb.py"},
        {"role": "assistant", "content": "Two files."},
    ]
    for document in ({"messages": conversation}, conversation):
        path = tmp_path / "chat.json"
        path.write_text(json.dumps(document, indent=2))
        messages = store.load_messages(import_file(store, path).chat_id)
        assert [m.role for m in messages] == ["system", "user", "assistant", "tool", "tool", "assistant"]
        assert messages[1].content == "list files"
        assert [c.arguments for c in messages[2].tool_calls] == [{"command": "ls"}, {"raw": "not json"}]
        assert [(m.tool_call_id, m.name) for m in messages[3:5]] == [("call_2", "bash"), ("call_1", "bash")]
        exported = json.loads("".join(export_openai(messages)))["messages"]
        assert exported[2]["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"command": "ls"}'}


def test_openai_chat_json_whose_other_fields_mention_messages(store, tmp_path):
    """The chat's own "messages" array is read, not the first place the word appears (a title quoting it, a nested
    "messages" key); the top-level key given twice is refused, naming the line of the second."""
    path = tmp_path / "chat.json"
    head = '{"title": "\\"messages\\": [", "meta": {"messages": [0]},\n "messages": [\n  {"role": "user", "content": "kept"},\n'
    path.write_text(head + '  {"role": "robot"}\n]}\n', encoding="utf-8")
    with pytest.raises(ImportFailed, match=r"chat.json, line 4: field 'role'"):
        import_file(store, path)
    path.write_text(head + '  {"role": "assistant", "content": "too"}\n]}\n', encoding="utf-8")
    chat = import_file(store, path).chat_id
    assert [(m.role, m.content) for m in store.load_messages(chat)] == [("user", "kept"), ("assistant", "too")]
    path.write_text(head + '  {"role": "assistant", "content": "too"}\n],\n "messages": []}\n', encoding="utf-8")
    with pytest.raises(ImportFailed, match=r"chat.json, line 6: field 'messages' appears more than once"):
        import_file(store, path)


@pytest.mark.parametrize("fmt, text, line, field", [
    ("jsonl", '{"role": "user", "content": "ok"}\n{"role": "robot", "content": "x"}\n', 2, "role"),
    ("jsonl", '{"role": "user", "content": "ok"}\n\n{"role": "user", "content": 5}\n', 3, "content"),
    ("jsonl", '{"role": "user", "content": "ok"}\n{"role": "user", "content": "x"\n', 2, "not valid JSON"),
    ("openai", '{"messages": [\n  {"role": "user", "content": "hi"},\n  {"role": "wizard"}\n]}', 3, "role"),
    ("openai", '[\n {"role": "assistant", "tool_calls": [{"id": "c"}]}\n]', 2, "function.name"),
    ("claude-code", '{"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}\n'
                    '{"type": "assistant", "uuid": "u2", "message": {"content": [{"type": "tool_use"}]}}\n',
     2, "tool_use"),
])
def test_a_bad_line_names_file_line_and_field_and_nothing_is_imported(store, tmp_path, fmt, text, line, field):
    path = tmp_path / f"bad.{fmt}"
    path.write_text(text)
    with pytest.raises(ImportFailed) as info:
        import_file(store, path)
    message = str(info.value)
    assert str(path) in message and f"line {line}" in message and field in message
    assert message.endswith("Nothing was imported.")
    assert store.list_chats() == []


def test_non_utf8_bytes_and_a_10mb_message_import(store, tmp_path):
    path = tmp_path / "odd.jsonl"
    big = "z" * 10_000_000
    path.write_bytes(b'{"role": "user", "content": "caf\xe9 \xff\xfe bytes"}\n'
                     + json.dumps({"role": "assistant", "content": big}).encode() + b"\n")
    messages = store.load_messages(import_file(store, path).chat_id)
    assert messages[0].content == "caf\ufffd \ufffd\ufffd bytes"
    assert messages[1].content == big


def test_unknown_format_is_refused(store, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\n")
    with pytest.raises(ImportFailed, match="line 1: not a known chat format"):
        import_file(store, path)


@pytest.mark.parametrize("fmt", ["auto", "jsonl", "openai", "claude-code"])
def test_an_empty_file_is_refused_as_empty(tmp_path, capsys, fmt):
    """An empty file was 'line 1: not a known chat format', or with --format jsonl an empty chat, imported."""
    data = str(tmp_path / "data")
    for name, content in (("empty.jsonl", b""), ("blank.jsonl", b"\xef\xbb\xbf\n  \n")):
        path = tmp_path / name
        path.write_bytes(content)
        assert main(["--data-dir", data, "import", "--format", fmt, str(path)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and str(path) in err and "the file is empty, there is no chat in it" in err
        assert "not a known chat format" not in err
    with open_store(data) as store:
        assert store.list_chats() == []


def test_a_file_with_no_messages_in_the_format_chosen_is_refused(tmp_path, capsys):
    """An OpenAI chat JSON or a SWE-agent transcript imported with --format claude-code was an empty chat (0 msgs),
    as was '{"messages": []}'; a line without a role read as interchange JSONL said "got None"."""
    data = str(tmp_path / "data")
    openai = tmp_path / "chat.json"
    openai.write_text('{"messages": [{"role": "user", "content": "What does the tide table say?"}]}')
    empty = tmp_path / "empty.json"
    empty.write_text('{"messages": []}')
    cases = [(openai, "claude-code", "no chat messages in it, read as a Claude Code session (--format auto tells"),
             (TRANSCRIPTS[0], "claude-code", "no chat messages in it, read as a Claude Code session"),
             (empty, "auto", "no chat messages in it, read as OpenAI chat JSON. Nothing was imported."),
             (openai, "jsonl", "line 1: not a chat message: each line of interchange JSONL has a 'role' and its "
                               "'content' (this one has 'messages')")]
    for path, fmt, told in cases:
        assert main(["--data-dir", data, "import", "--format", fmt, str(path)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and f"{path}, line 1: " in err and told in err, err
    with open_store(data) as store:
        assert store.list_chats() == []
    assert main(["--data-dir", data, "import", str(openai)]) == 0  # the format told from the file: imported


def test_markdown_export_places_a_fold_after_its_summaries_messages_and_counts_them():
    """A fold covers no message itself: it was placed at the chat's end as '0 messages' in its newest summary's mode."""
    messages = [Message(role="user", content=f"note {i}") for i in range(6)]
    first = SummaryRecord(text="s1", mode="llm", status="merged",
                          covered=[CoveredMessage(id=m.id, sha256=m.sha256()) for m in messages[:2]])
    second = SummaryRecord(text="s2", mode="llm", status="merged",
                           covered=[CoveredMessage(id=m.id, sha256=m.sha256()) for m in messages[2:4]])
    fold = SummaryRecord(text="folded", mode="llm", merged_ids=[first.id, second.id])
    text = "".join(export_markdown("t", messages, [first, second, fold]))
    head = "> **Summary** (depth 1, 4 messages, fold, "
    assert text.count(head) == 1
    assert text.index("note 3") < text.index(head) < text.index("note 4")
    assert "(depth 1, 2 messages, llm, " in text  # its summaries, marked merged, after their own messages


@pytest.mark.slow
def test_markdown_export_shows_summaries_as_such(store):
    chat = import_file(store, CLAUDE_CODE_RAW).chat_id
    messages, records = store.load_messages(chat), store.load_records(chat)
    text = "".join(export_markdown("Session", messages, records))
    assert text.startswith("# Session\n")
    assert text.count("> **Summary** (depth 1, 404 messages, llm, 142431 →") == 1
    assert "> This session is being continued" in text
    # The summary sits right after the last message it covers.
    last_covered = messages[len(records[0].covered) - 1]
    assert text.index("> **Summary**") > text.index(last_covered.content[-40:] if last_covered.content else "###")
    assert text.count("**Tool call** `Bash`") == sum(1 for m in messages for c in m.tool_calls if c.name == "Bash")


def test_parse_does_not_need_a_store_and_keeps_titles(tmp_path):
    parsed = parse_file(CLAUDE_CODE_RAW, "claude-code")
    assert parsed.title.startswith("Work on bead spotter-4te")
    path = Path(TRANSCRIPTS[0])
    assert parse_file(path).title == path.stem


def test_each_claude_code_compaction_folds_in_the_one_before(store, tmp_path):
    """A session compacted three times: three records in a chain, each covering what came since the one before;
    the newest (active) hides every message before it; what followed stays visible."""
    lines = []
    for i in range(8):
        if i in (2, 4, 6):
            lines += [{"type": "system", "subtype": "compact_boundary", "compactMetadata": {"preTokens": 100 * i}},
                      {"type": "user", "uuid": f"c{i}", "isCompactSummary": True,
                       "message": {"role": "user", "content": f"This session is being continued ... part {i}"}}]
        kind = ("user", "assistant")[i % 2]
        lines.append({"type": kind, "uuid": f"m{i}", "message": {"role": kind, "content": f"message {i}"}})
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    chat = import_file(store, path).chat_id
    messages = store.load_messages(chat)
    assert [m.id for m in messages] == [f"m{i}" for i in range(8)]
    records = store.load_records(chat)
    assert [(r.status, r.tokens_before, [c.id for c in r.covered]) for r in records] == [
        ("merged", 200, ["m0", "m1"]), ("merged", 400, ["m2", "m3"]), ("active", 600, ["m4", "m5"])]
    assert [r.merged_ids for r in records] == [[], [records[0].id], [records[1].id]]
    assert store.archived_by(chat) == {f"m{i}": records[2].id for i in range(6)}


@pytest.mark.parametrize("path", [*TRANSCRIPTS, CLAUDE_CODE_RAW], ids=lambda p: p.name)
def test_export_then_import_gives_back_the_whole_chat(tmp_path, capsys, path):
    """Messages, the summary chain and the archive survive `precis export --format jsonl` and `precis import`."""
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "import", str(path)]) == 0
    chat = capsys.readouterr().out.strip()
    exported = tmp_path / "export.jsonl"
    assert main(["--data-dir", data, "export", chat, "--format", "jsonl", "-o", str(exported)]) == 0
    assert main(["--data-dir", data, "import", str(exported)]) == 0
    again = capsys.readouterr().out.strip()
    with open_store(data) as store:
        assert store.load_messages(again) == store.load_messages(chat)
        assert store.load_records(again) == store.load_records(chat)
        assert store.archived_by(again) == store.archived_by(chat)
        if path == CLAUDE_CODE_RAW:  # Claude Code's compaction travels as the summary it is
            [record] = store.load_records(again)
            assert record.text.startswith("This session is being continued") and len(store.archived_by(again)) == 404
    # A plain reader (role, content, name, tool_args) still reads every line as a message.
    assert len(read_transcript(exported)) == len(exported.read_text().splitlines())


def test_an_archive_mark_naming_a_missing_summary_is_bad_input(store, tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n{"role": "user", "content": "x", "archived_by": "s1"}\n')
    with pytest.raises(ImportFailed, match="line 2: field 'archived_by' names summary 's1'"):
        import_file(store, path)
    assert store.list_chats() == []


def test_non_utf8_bytes_are_counted_with_their_first_line(tmp_path, capsys):
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b'{"role": "user", "content": "fine \xef\xbf\xbd already"}\n'
                     b'{"role": "user", "content": "caf\xe9 and \xff\xfe"}\n{"role": "assistant", "content": "\x80"}\n')
    code = main(["--data-dir", str(tmp_path / "data"), "import", str(path)])
    out, err = capsys.readouterr()
    assert code == 0 and out.strip()
    assert "4 byte sequences that are not UTF-8 replaced with U+FFFD (first on line 2)" in err
    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(b'{"role": "user", "content": "caf\xc3\xa9 \xef\xbf\xbd"}\n')
    assert main(["--data-dir", str(tmp_path / "data"), "import", str(clean)]) == 0
    assert "UTF-8" not in capsys.readouterr().err


def test_an_export_that_fails_while_it_is_made_leaves_the_earlier_file_alone(tmp_path):
    """An export is written as it is made; the failure is injected into the making (a fake piece-maker), since a
    real format does not fail on demand."""
    target = tmp_path / "chat.md"
    target.write_text("the earlier export\n", encoding="utf-8")

    def pieces():
        yield "# half a chat\n"
        raise RuntimeError("the making failed")

    with pytest.raises(RuntimeError, match="the making failed"):
        write_export(pieces(), target)
    assert target.read_text(encoding="utf-8") == "the earlier export\n"
    assert list(tmp_path.glob("*chat.md*")) == [target]


def test_a_blank_title_given_on_import_is_no_title(store, tmp_path):
    """`precis import FILE --title "   "` listed the chat with a blank name."""
    path = tmp_path / "harbour survey.jsonl"
    path.write_text('{"role": "user", "content": "Tide tables for May?"}\n')
    for title, kept in (("   ", "harbour survey"), ("", "harbour survey"), ("  Tides  ", "Tides")):
        assert store.get_chat(import_file(store, path, title=title).chat_id).title == kept


def test_a_file_imported_in_the_wrong_format_says_what_it_looks_like(tmp_path, capsys):
    """--format names a format the file is not in: the error says what it was read as and what the file looks
    like, not only 'line 2: not valid JSON (Extra data at column 1)', which reads as a broken file."""
    data = str(tmp_path / "data")
    interchange = next(p for p in TRANSCRIPTS if p.name == "sweagent_1.jsonl")
    for path, fmt, looks_like in ((CLAUDE_CODE_RAW, "openai", "a Claude Code session"),
                                  (CLAUDE_CODE_RAW, "jsonl", "a Claude Code session"),
                                  (interchange, "openai", "interchange JSONL")):
        assert main(["--data-dir", data, "import", str(path), "--format", fmt]) == 2
        err = capsys.readouterr().err
        assert f"it looks like {looks_like} (--format auto reads it)" in err and "Nothing was imported" in err
    with open_store(data) as store:
        assert store.list_chats() == []
    # A file that is in the format named keeps its own error alone.
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": 5}\n')
    assert main(["--data-dir", data, "import", str(bad), "--format", "jsonl"]) == 2
    assert "looks like" not in capsys.readouterr().err


def precis(*argv: str | bytes) -> subprocess.CompletedProcess:
    """The real command in a process of its own: its arguments may be bytes that are not UTF-8, as a shell gives."""
    return subprocess.run([sys.executable, "-m", "precis.core.cli.main", *argv], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("fmt, text, line, field", [
    ("jsonl", '{"role": "user", "content": "ok"}\n{"role": "user", "content": "bad \\ud800 half"}\n', 2, "'content'"),
    ("jsonl", '{"role": "assistant", "content": "", "name": "bash", "tool_args": {"cmd": "x\\uDC00"}}\n', 1,
     "'tool_args.cmd'"),
    ("openai", '{"messages": [\n  {"role": "user", "content": "hi \\ud83d\\ude00"},\n'
               '  {"role": "user", "content": [{"type": "text", "text": "\\ud800"}]}\n]}', 3, "'content[0].text'"),
    ("openai", '[{"role": "user", "content": "run it"},\n {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", '
               '"type": "function", "function": {"name": "bash", "arguments": "{\\"cmd\\": \\"\\\\ud800\\"}"}}]}]', 2,
     "'tool_calls[0].function.arguments.cmd'"),
    ("claude-code", '{"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}\n'
                    '{"type": "assistant", "uuid": "u2", "message": {"content": [{"type": "text", "text": "\\udfff"}]}}\n',
     2, "'message.content[0].text'"),
])
@pytest.mark.slow
def test_a_lone_surrogate_is_bad_input_naming_its_line_and_nothing_is_written(tmp_path, fmt, text, line, field):
    """A \\ud800 escape without its pair is no character: importing it was a traceback and exit 1 (the store
    cannot encode it). A pair (an emoji) is one character and fine."""
    data = tmp_path / "data"
    path = tmp_path / f"half.{fmt}"
    path.write_text(text)
    done = precis("--data-dir", str(data), "import", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{path}, line {line}: field {field} holds a lone surrogate" in done.stderr
    assert "Nothing was imported." in done.stderr and done.stdout == ""
    with open_store(data) as store:
        assert store.list_chats() == []


@pytest.mark.slow
def test_a_title_that_is_not_utf8_is_bad_input_and_nothing_is_written(tmp_path):
    data = tmp_path / "data"
    path = tmp_path / "fine.jsonl"
    path.write_text('{"role": "user", "content": "Tide tables for May?"}\n')
    done = precis("--data-dir", str(data), "import", str(path), "--title", b"caf\xe9 notes")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "Invalid value for '--title': not valid UTF-8: the byte 0xe9 at character 4 is not a character" in done.stderr
    with open_store(data) as store:
        assert store.list_chats() == []
    searched = precis("--data-dir", str(data), "search", b"caf\xe9")
    assert searched.returncode == 2 and "Invalid value for 'TEXT': not valid UTF-8" in searched.stderr
    named = precis("--data-dir", str(data), "context", b"caf\xe9")  # said: no chat with id or title 'caf\udce9'
    assert named.returncode == 2 and "Invalid value for 'CHAT': not valid UTF-8: the byte 0xe9" in named.stderr


@pytest.mark.parametrize("message", ['{"role": "user"}', '{"role": "user", "content": null}',
                                     '{"role": "tool", "tool_call_id": "c1"}'])
def test_an_openai_message_without_its_text_is_bad_input(store, tmp_path, message):
    """A user message with no content imported silently as an empty message. A reply may be empty."""
    path = tmp_path / "chat.json"
    path.write_text('{"messages": [\n  {"role": "assistant", "content": null},\n  ' + message + '\n]}')
    role = json.loads(message)["role"]
    with pytest.raises(ImportFailed, match=rf"chat.json, line 3: a {role} message needs its text in field 'content'"):
        import_file(store, path)
    assert store.list_chats() == []


@pytest.mark.slow
def test_an_export_killed_mid_write_leaves_no_part_file_once_the_next_export_is_done(tmp_path):
    """A killed export's `.chat.md.*.part` stayed for good; another export still writing its own is left alone."""
    data = tmp_path / "data"
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "Tide tables for May?"}\n')
    chat = precis("--data-dir", str(data), "import", str(path)).stdout.strip()
    target = tmp_path / "chat.md"
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from precis.core.storage.exporters import write_export
        def pieces():
            yield "# half a chat\\n"
            print("writing", flush=True)
            time.sleep(60)
        write_export(pieces(), {str(target)!r})
    """)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline() == "writing\n"
    writer.kill()
    writer.wait()
    [abandoned] = tmp_path.glob(".chat.md.*.part")
    still_writing = tmp_path / f".chat.md.{os.getpid()}.abcdefgh.part"
    still_writing.write_text("another export of this process, not done yet")

    done = precis("--data-dir", str(data), "export", chat, "--format", "md", "-o", str(target))
    assert done.returncode == 0, done.stderr
    assert target.read_text() == "# chat\n\n### User\n\nTide tables for May?\n"
    assert not abandoned.exists() and still_writing.exists()
