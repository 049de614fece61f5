"""The storage commands through the real `precis` entry point and a real store."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys

import pytest
from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.storage.store import open_store

from tests.conftest import CLAUDE_CODE_RAW, TRANSCRIPTS


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_import_chats_export_search_and_context(tmp_path, capsys):
    data = str(tmp_path / "data")
    code, out, _ = run(capsys, "--data-dir", data, "import", str(CLAUDE_CODE_RAW))
    assert code == 0
    chat_id = out.strip()
    code, out, _ = run(capsys, "--data-dir", data, "import", str(TRANSCRIPTS[0]), "--format", "jsonl",
                       "--title", "second")
    assert code == 0

    code, out, _ = run(capsys, "--data-dir", data, "chats")
    assert code == 0 and chat_id in out and "646 msgs" in out and "second" in out

    target = tmp_path / "out.json"
    code, _, _ = run(capsys, "--data-dir", data, "export", chat_id[:8], "--format", "openai", "-o", str(target))
    assert code == 0 and len(json.loads(target.read_text())["messages"]) == 646
    code, out, _ = run(capsys, "--data-dir", data, "export", chat_id, "--format", "md")
    assert code == 0 and "> **Summary**" in out

    code, out, _ = run(capsys, "--data-dir", data, "search", "opentelemetry_bandit")
    assert code == 0 and "(archived)" in out

    code, out, _ = run(capsys, "--data-dir", data, "context", chat_id)
    assert code == 0
    assert "/ 7,680 tokens" in out and "summaries" in out and "tool outputs" in out
    assert "summary chain: 1" in out and "404 messages" in out and "142,431 → " in out
    # The lines by kind add up to the total above them (the reply's priming was in the total alone: 3 apart).
    total = int(re.search(r"context: ([\d,]+) /", out).group(1).replace(",", ""))
    kinds = list(re.finditer(r"^  (system prompt|tool definitions|summaries|recalled|messages|tool outputs) +([\d,]+) ",
                             out, re.MULTILINE))
    assert len(kinds) == 6 and sum(int(kind[2].replace(",", "")) for kind in kinds) == total
    assert len({kind.end(2) - kind.start() for kind in kinds}) == 1  # the counts in one column ("tool definitions" pushed its own)


@pytest.mark.slow
def test_errors_are_clear_and_nothing_is_imported(tmp_path, capsys):
    data = str(tmp_path / "data")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "fine"}\n{"role": "user", "content": []}\n')
    code, _, err = run(capsys, "--data-dir", data, "import", str(bad))
    assert code == 2 and "line 2" in err and "'content'" in err and "Nothing was imported" in err
    code, _, err = run(capsys, "--data-dir", data, "import", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "cannot read" in err
    # JSON Lines whose lines are not messages (the shared questions file): it said "line 2: not valid JSON (Extra
    # data at column 1)", as if the file were broken JSON.
    questions = tmp_path / "questions.jsonl"
    questions.write_text('{"question": "When?", "answer": "May"}\n{"question": "Where?", "answer": "Paris"}\n')
    for command in ("import", "compact"):
        code, _, err = run(capsys, "--data-dir", data, command, str(questions))
        assert code == 2 and f"{questions}, line 1: not a chat message" in err and "'role'" in err, err
        assert "not valid JSON" not in err
    code, _, err = run(capsys, "--data-dir", data, "export", "nope")
    assert code == 2 and "no chat" in err
    with open_store(data) as store:
        assert store.list_chats() == []


def test_a_data_folder_that_is_a_file_is_named_as_one(tmp_path, capsys):
    """It said 'cannot create the data folder X: File exists', as if the folder were there."""
    afile = tmp_path / "notes.txt"
    afile.write_text("not a folder")
    code, _, err = run(capsys, "--data-dir", str(afile), "chats")
    assert code == 1 and f"cannot create the data folder {afile}: it is a file, not a folder" in err


def test_data_dir_defaults_to_precis_home(isolated_home, capsys):
    code, out, _ = run(capsys, "import", str(TRANSCRIPTS[0]))
    assert code == 0
    with open_store() as store:
        assert [c.id for c in store.list_chats()] == [out.strip()]
    assert (isolated_home / "precis.db").exists()


@pytest.mark.slow
def test_data_dir_works_before_and_after_the_command(tmp_path, capsys):
    first, second = str(tmp_path / "first"), str(tmp_path / "second")
    code, out, _ = run(capsys, "import", str(TRANSCRIPTS[0]), "--title", "here", "--data-dir", first)
    assert code == 0
    for argv in (("--data-dir", first, "chats"), ("chats", "--data-dir", first),
                 ("--data-dir", second, "chats", "--data-dir", first)):  # after the command wins
        code, out, _ = run(capsys, *argv)
        assert code == 0 and "here" in out, argv
    code, out, _ = run(capsys, "--data-dir", second, "chats")
    assert code == 0 and "no chats yet" in out


def test_bad_input_exits_with_2_and_says_what(tmp_path, capsys):
    code, _, err = run(capsys, "nonsense")
    assert code == 2 and "No such command 'nonsense'" in err
    code, _, err = run(capsys, "export")
    assert code == 2 and "Missing argument 'CHAT'" in err
    code, _, err = run(capsys, "export", "x", "--format", "pdf")
    assert code == 2 and "'pdf' is not one of" in err
    code, _, err = run(capsys, "search", "x", "--limit", "many")
    assert code == 2 and "'many' is not a valid integer" in err
    # --limit 0 said "nothing found", a negative limit listed every hit, one past SQLite's integers was a traceback.
    for limit in ("0", "-1", "99999999999999999999"):
        code, _, err = run(capsys, "search", "x", "--limit", limit)
        assert code == 2 and f"Invalid value for '--limit': {limit} is not in the range 1<=x<=10000" in err
    # --max-tokens 0 or -3 gave replies of any length (and a chat stored with a negative reserve was refused with a
    # pydantic dump), 5 gave replies of 16 tokens; --context-tokens 0 was taken as unset, 50 refused with a pydantic
    # dump, as were values past the chat settings' ranges.
    replies, windows = "16<=x<=1000000", "256<=x<=10000000"
    for option, value, allowed in (("--max-tokens", "0", replies), ("--max-tokens", "-3", replies),
                                   ("--max-tokens", "5", replies),
                                   ("--max-tokens", "1000001", replies),
                                   ("--context-tokens", "0", windows), ("--context-tokens", "50", windows),
                                   ("--context-tokens", "99999999999999999999999", windows),
                                   ("--temperature", "-1.0", "0<=x<=2"), ("--temperature", "99.0", "0<=x<=2")):
        code, _, err = run(capsys, "chat", option, value, "hi")
        assert code == 2 and f"Invalid value for '{option}': {value} is not in the range {allowed}" in err, err


@pytest.mark.slow
def test_a_chat_or_message_that_does_not_exist_is_bad_input_in_every_command(tmp_path, capsys):
    data = str(tmp_path / "data")
    source = tmp_path / "k.jsonl"
    source.write_text("".join(f'{{"role": "user", "content": "note {i} about kiwis"}}\n' for i in range(12)))
    run(capsys, "--data-dir", data, "import", str(source))
    for argv in (["export", "nosuch"], ["context", "nosuch"], ["history", "nosuch"], ["summarize", "nosuch"],
                 ["undo-summary", "nosuch"], ["chat", "--chat", "nosuch", "--provider", "openai", "--base-url",
                                             "http://127.0.0.1:9/v1", "--model", "m"]):
        code, _, err = run(capsys, "--data-dir", data, *argv)
        assert code == 2 and "no chat with id or title 'nosuch'" in err, (argv, err)
    code, _, err = run(capsys, "--data-dir", data, "summarize", "k", "--up-to", "m-missing")
    assert code == 2 and "no message 'm-missing'" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_title_two_chats_share_is_refused_naming_both_and_an_empty_name_is_no_chat(tmp_path, capsys):
    """'sweagent_1' imported twice said "matches 2 chats; give more of the id" without the ids to choose from, and
    an empty name "'' matches 3 chats"."""
    data = str(tmp_path / "data")
    source = tmp_path / "kiwis.jsonl"
    source.write_text('{"role": "user", "content": "kiwis"}\n')
    ids = [run(capsys, "--data-dir", data, "import", str(source))[1].strip() for _ in range(2)]
    code, _, err = run(capsys, "--data-dir", data, "context", "kiwis")
    assert code == 2 and "'kiwis' matches 2 chats: " in err and "give more of the id" in err
    assert all(f"{chat_id[:12]} (kiwis)" in err for chat_id in ids)
    assert run(capsys, "--data-dir", data, "context", ids[0][:12])[0] == 0  # what it showed picks one
    code, _, err = run(capsys, "--data-dir", data, "history", "")
    assert code == 2 and "no chat given" in err and "matches" not in err


@pytest.mark.slow
def test_json_nested_too_deep_is_a_clear_error_naming_file_and_line(tmp_path, capsys):
    data = str(tmp_path / "data")
    deep = "[" * 100_000 + "]" * 100_000
    jsonl = tmp_path / "deep.jsonl"
    jsonl.write_text('{"role": "user", "content": "fine"}\n{"role": "user", "content": ' + deep + "}\n")
    openai = tmp_path / "deep.json"
    openai.write_text('{"messages": ' + deep + "}")
    for path, line in ((jsonl, 2), (openai, 1)):
        for fmt in ("auto", "jsonl" if path is jsonl else "openai"):
            code, _, err = run(capsys, "--data-dir", data, "import", str(path), "--format", fmt)
            assert code == 2 and "Traceback" not in err
            assert f"{path}, line {line}" in err and "nested too deeply" in err
    code, _, err = run(capsys, "compact", str(jsonl))
    assert code == 2 and f"{jsonl}, line 2" in err and "nested too deeply" in err


def test_an_export_is_private_to_its_owner_as_it_holds_the_whole_chat(tmp_path, capsys):
    """An export holds the chat's whole text (a key pasted into a message is redacted, but a password in prose
    redaction cannot tell may stay): a new export is readable by its owner alone, whatever the umask; an export
    written over a file keeps the mode the user gave that file."""
    data = str(tmp_path / "data")
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
    source = tmp_path / "pasted.jsonl"
    source.write_text(json.dumps({"role": "user", "content": f"my key is {key}, why does it fail?"}) + "\n")
    code, chat_id, _ = run(capsys, "--data-dir", data, "import", str(source))
    assert code == 0
    target = tmp_path / "shared" / "chat.md"
    target.parent.mkdir()
    old_umask = os.umask(0o022)
    try:
        assert run(capsys, "--data-dir", data, "export", chat_id.strip(), "--format", "md", "-o", str(target))[0] == 0
    finally:
        os.umask(old_umask)
    assert key not in target.read_text() and "my key is [REDACTED:openai_key]" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    target.chmod(0o644)  # the user means to share it
    target.write_text("an older export")
    assert run(capsys, "--data-dir", data, "export", chat_id.strip(), "--format", "md", "-o", str(target))[0] == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o644 and "[REDACTED:openai_key]" in target.read_text()
    assert [p.name for p in target.parent.iterdir()] == ["chat.md"]  # no temporary file left beside it


def test_a_search_with_no_word_in_it_is_bad_input(tmp_path, capsys):
    """'' or '!!!' said "nothing found for ''", as if the chats had been searched."""
    data = str(tmp_path / "data")
    for text in ("", "  ", "!?!", '"'):
        code, out, err = run(capsys, "--data-dir", data, "search", text)
        assert code == 2 and out == "" and f"no word to search for in {text!r}" in err
    code, out, _ = run(capsys, "--data-dir", data, "search", "kiwi?")
    assert code == 0 and "nothing found for 'kiwi?'" in out


@pytest.mark.slow
def test_messages_with_many_hits_are_searched_at_once(tmp_path):
    """SQLite's snippet() took time growing with the square of a message's hits: "word " x 200,000 took over 120 s
    in `precis search` (and in the window, which runs the same query), a 40,000-line log 8.8 s. (The time limit
    leaves a loaded machine room to start the command; 400,000 hits took minutes more than it.)"""
    data = tmp_path / "data"
    log = "\n".join(f"12:{n // 60 % 60:02d}:{n % 60:02d} worker {n % 8} wrote word batch {n}" for n in range(40_000))
    with open_store(data) as store:
        store.import_chat("many hits", [Message(role="user", content="word " * 400_000),
                                        Message(role="assistant", content=log)])
    done = subprocess.run([sys.executable, "-m", "precis.core.cli.main", "--data-dir", str(data), "search", "word"],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    snippets = sorted(line.split(maxsplit=4)[-1] for line in done.stdout.splitlines())
    assert snippets == ["12:00:00 worker 0 wrote [word] batch 0 12:00:01…",
                        "[word] [word] [word] [word] [word] [word] [word] [word] [word] [word] [word] [word]…"]
