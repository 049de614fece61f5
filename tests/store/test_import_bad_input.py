"""Files that are not what `precis import` and `precis compact` expect: each is read as far as it can be, or refused
naming the file and line, with exit code 2 and nothing stored."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from precis.core.cli.main import main
from precis.core.storage.importers import ImportFailed, import_file, parse_file
from precis.core.storage.store import open_store


def _chat_lines(chat: list[tuple[str, str]]) -> str:
    return "".join(json.dumps({"role": role, "content": content}, ensure_ascii=False) + "\n" for role, content in chat)


_CHATS = st.lists(st.tuples(st.sampled_from(["user", "assistant"]),
                            st.text(st.characters(blacklist_categories=["Cs"]), max_size=30)), min_size=1, max_size=5)


@given(chat=_CHATS, codec=st.sampled_from(["utf-16", "utf-16-le", "utf-16-be", "utf-32"]))
def test_utf16_or_utf32_text_with_its_byte_order_mark_reads_as_its_utf8_form(chat, codec):
    """PowerShell's `>` writes UTF-16 with a byte-order mark: such a file was 'line 1: not a known chat format'."""
    text = _chat_lines(chat)
    mark = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}.get(codec, b"")  # "utf-16"/"utf-32" write their own
    with tempfile.TemporaryDirectory() as folder:
        wide, narrow = Path(folder) / "wide.jsonl", Path(folder) / "narrow.jsonl"
        wide.write_bytes(mark + text.encode(codec))
        narrow.write_bytes(text.encode("utf-8"))
        read = parse_file(wide)
        assert [(m.role, m.content) for m in read.messages] == [(m.role, m.content) for m in
                                                                 parse_file(narrow).messages] == chat
        assert read.notices() == []


@pytest.mark.parametrize("separator", ["\u2028", "\x85"])
def test_a_first_message_holding_a_unicode_line_separator_is_told_as_interchange(tmp_path, separator):
    """The format was told from the first line as str.splitlines cut it: at U+2028 (text pasted from a web page) or
    U+0085, both kept raw in JSON strings, so the file was 'field 'messages' must be a list of messages'."""
    path = tmp_path / "chat.jsonl"
    chat = [("user", f"one{separator}two"), ("assistant", "three")]
    path.write_text(_chat_lines(chat), encoding="utf-8")
    assert [(m.role, m.content) for m in parse_file(path).messages] == chat


@pytest.mark.parametrize("content, line, said", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 3, "not a text file: byte 9 is NUL"),
    ('{"role": "user", "content": "hi"}\n'.encode("utf-16-le"), 1,
     "UTF-16 text without a byte-order mark, which is not read: save the file as UTF-8"),
    (b"\xff\xfe" + '{"role": "user", "content": "hi"}\n\n'.encode("utf-16-le") + b"\x00\xd8\x0a\x00", 3,
     "not valid UTF-16 text, though the file starts with UTF-16's byte-order mark"),
])
def test_a_file_that_is_not_text_is_refused_as_such_by_import_and_compact(tmp_path, capsys, content, line, said):
    """A PNG, or UTF-16 without its mark, was 'line 1: not valid JSON (Expecting value at column 1)' with --format
    jsonl, and 'not a known chat format' without."""
    path = tmp_path / "chat.jsonl"
    path.write_bytes(content)
    data = str(tmp_path / "data")
    for fmt in ("auto", "jsonl", "openai", "claude-code"):
        assert main(["--data-dir", data, "import", "--format", fmt, str(path)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and f"{path}, line {line}: {said}" in err, err
    assert main(["compact", str(path)]) == 2
    assert f"precis compact: {path}, line {line}: {said}" in capsys.readouterr().err
    with open_store(data) as store:
        assert store.list_chats() == []


SESSION = [{"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "Fix the parser"}},
           {"type": "assistant", "uuid": "u2", "sessionId": "s",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Looking at it"}]}},
           {"type": "user", "uuid": "u3", "sessionId": "s", "message": {"role": "user", "content": "and the tests"}}]


def test_a_claude_code_session_still_being_written_imports_all_but_its_unfinished_line(tmp_path, capsys):
    """Claude Code appends a line at a time; a live session's file was refused whole: 'line 3: not valid JSON
    (Unterminated string…)'."""
    lines = [json.dumps(entry) for entry in SESSION]
    path = tmp_path / "live.jsonl"
    path.write_text(lines[0] + "\n" + lines[1] + "\n" + lines[2][:50])
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "import", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "line 3, the last, is unfinished (as in a session still being written) and was left out" in err
    with open_store(data) as store:
        assert [(m.role, m.content) for m in store.load_messages(out.strip())] == [
            ("user", "Fix the parser"), ("assistant", "Looking at it")]
    assert main(["compact", str(path)]) == 0
    assert "line 3, the last, is unfinished" in capsys.readouterr().err


@pytest.mark.parametrize("ending", ["\n", ""])
def test_a_broken_line_that_is_not_an_unfinished_last_one_is_still_refused(tmp_path, ending):
    """Only a last line without its newline is taken for one being written: a broken line before it, or a last line
    with its newline, is a broken file."""
    lines = [json.dumps(entry) for entry in SESSION]
    path = tmp_path / "broken.jsonl"
    path.write_text(lines[0] + "\n" + lines[1][:50] + "\n" + lines[2] + ending)
    with open_store(tmp_path / "data") as store:
        with pytest.raises(ImportFailed, match="broken.jsonl, line 2: not valid JSON"):
            import_file(store, path)
        path.write_text(lines[0] + "\n" + lines[1][:50] + "\n")
        with pytest.raises(ImportFailed, match="broken.jsonl, line 2: not valid JSON"):
            import_file(store, path)
        assert store.list_chats() == []


@pytest.mark.parametrize("line", ['{"role": "user", "content": null}', '{"role": "user"}',
                                  '{"role": "tool", "name": "bash", "content": null}', '{"role": "system"}'])
def test_an_interchange_message_without_its_text_is_bad_input(tmp_path, line):
    """A user message with "content": null imported as an empty message, where an OpenAI chat file's was refused.
    A reply without text (a call) is a reply."""
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "assistant", "content": null, "name": "bash", "tool_args": {"command": "ls"}}\n'
                    + line + "\n")
    role = json.loads(line)["role"]
    with open_store(tmp_path / "data") as store:
        with pytest.raises(ImportFailed, match=rf"chat.jsonl, line 2: a {role} message needs its text in field "
                                               r"'content' \(it has none\)"):
            import_file(store, path)
        assert store.list_chats() == []
