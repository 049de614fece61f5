"""mini-swe-agent sessions become interchange transcripts that Precis replays: the held-out coding sessions of the
fidelity benchmark (docs/fidelity.md)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from precis.core.cli.main import main as precis
from precis.core.storage.interchange import read_transcript
from precis.core.summary.tool_output import one_line

from benchmarks.miniswe_convert import convert
from benchmarks.miniswe_convert import main as convert_main
from tests.conftest import DATA

SESSION = DATA / "miniswe" / "django__django-15103.traj.json"
RETURNCODE = re.compile(r"\A<returncode>(-?\d+)</returncode>")


def raw_messages(path: Path = SESSION) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["messages"]


def converted(out: Path, name: str = "django__django-15103") -> list[dict]:
    return [json.loads(line) for line in (out / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]


def test_each_command_becomes_a_bash_call_answered_by_the_harness_output_as_sent(tmp_path):
    assert convert_main([str(SESSION.parent), str(tmp_path)]) == 0
    raw, lines = raw_messages(), converted(tmp_path)
    assert len(lines) == len(raw)  # one line a message, in order: indices mean the same in both
    calls = 0
    for before, message, original in zip([None, *lines], lines, raw, strict=False):
        if message["role"] == "tool":
            calls += 1
            assert message["name"] == "bash" and message["content"] == original["content"]
            assert before is not None and before["role"] == "assistant" and before["name"] == "bash"
        elif message["name"] == "bash":  # the call: its command is the reply's one bash block, its text the rest
            command = message["tool_args"]["command"]
            assert f"```bash\n{command}\n```" in original["content"] and command not in message["content"]
            assert message["content"].startswith("THOUGHT:")
        else:  # the system prompt, the task, the replies the harness refused and its complaints: as sent
            assert (message["role"], message["content"]) == (original["role"], original["content"])
    refused = [m for m in raw if m["content"].startswith("Please always provide EXACTLY ONE action")]
    assert len(refused) == 2 and calls == len(raw) // 2 - 1 - len(refused)


def test_precis_pairs_each_result_with_its_command_and_reads_its_exit_code(tmp_path):
    convert_main([str(SESSION), str(tmp_path)])
    messages = read_transcript(tmp_path / "django__django-15103.jsonl")
    calls = {call.id: call for m in messages for call in m.tool_calls}
    results = [m for m in messages if m.role == "tool"]
    assert len(results) == len(calls) and {m.tool_call_id for m in results} == set(calls)
    failed = 0
    for result in results:
        call = calls[result.tool_call_id]
        code = RETURNCODE.match(result.content)
        line = one_line(call, result)
        if code and code.group(1) != "0":
            failed += 1
            assert line.startswith("[❌") and f"Exit: {code.group(1)}" in line, line
        elif code:
            assert line.startswith("[✓"), line
    assert failed == 2  # `python3 update_html.py` (2) and the first `sed -i` on the docs (1)


def test_precis_compact_replays_the_converted_session(tmp_path, capsys):
    convert_main([str(SESSION), str(tmp_path)])
    path = tmp_path / "django__django-15103.jsonl"
    capsys.readouterr()
    assert precis(["compact", str(path), "--context-tokens", "4096", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["stats"]["messages"] == len(raw_messages())
    assert result["summaries"] and result["archived"]  # long enough to be summarized at 4k
    assert result["context"][-1]["content"] == raw_messages()[-1]["content"]  # the submitted diff, the latest


def test_the_git_mirror_reads_as_the_directory_does(tmp_path):
    work = tmp_path / "work"
    (work / "trajs" / "one").mkdir(parents=True)
    shutil.copy(SESSION, work / "trajs" / "one" / SESSION.name)
    (work / "README.md").write_text("not a trajectory")

    def git(*args: str, cwd: Path = work) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                       capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "trajectories")
    git("clone", "-q", "--bare", str(work), str(tmp_path / "mirror.git"), cwd=tmp_path)
    assert convert_main([str(tmp_path / "mirror.git"), str(tmp_path / "from_mirror")]) == 0
    assert convert_main([str(work), str(tmp_path / "from_dir")]) == 0
    assert [p.name for p in (tmp_path / "from_mirror").iterdir()] == ["django__django-15103.jsonl"]
    assert converted(tmp_path / "from_mirror") == converted(tmp_path / "from_dir")


def test_what_cannot_be_converted_is_named_with_why_and_the_rest_converts(tmp_path, capsys):
    source = tmp_path / "in"
    source.mkdir()
    shutil.copy(SESSION, source / SESSION.name)
    (source / "cut.traj.json").write_text('{"messages": [{"role": "user", "con', encoding="utf-8")
    (source / "parts.traj.json").write_text(json.dumps({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}))
    (source / "info.traj.json").write_text(json.dumps({"info": {}}))
    (source / "tool.traj.json").write_text(json.dumps({"messages": [{"role": "tool", "content": "x"}]}))
    assert convert_main([str(source), str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert "converted 1 of 5 trajectories" in captured.out
    errors = captured.err
    assert "could not convert cut.traj.json: not JSON (Unterminated string" in errors
    assert "could not convert parts.traj.json: message 0: content is a list, not text" in errors
    assert "could not convert info.traj.json: no list of messages (found keys 'info')" in errors
    assert "could not convert tool.traj.json: message 0: role 'tool' is not one of system, user, assistant" in errors
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["django__django-15103.jsonl"]
    (source / SESSION.name).unlink()
    assert convert_main([str(source), str(tmp_path / "none")]) == 1


def test_longest_keeps_the_sessions_with_the_most_characters(tmp_path, capsys):
    source = tmp_path / "in"
    source.mkdir()
    shutil.copy(SESSION, source / SESSION.name)
    # A shorter session with a name that sorts first: the choice is by size, not by name.
    (source / "a_short.traj.json").write_text(json.dumps({"messages": raw_messages()[:4]}))
    assert convert_main([str(source), str(tmp_path / "out"), "--longest", "1"]) == 0
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["django__django-15103.jsonl"]
    assert "converted 1 of 2 trajectories (the 1 longest)" in capsys.readouterr().out


reply = st.builds(lambda thought, blocks: thought + "".join(f"\n```bash\n{b}\n```" for b in blocks),
                  st.text(st.characters(blacklist_characters="`"), max_size=20),
                  st.lists(st.from_regex(r"[a-z][a-z ./-]{0,15}", fullmatch=True), max_size=3))


@given(st.lists(st.tuples(reply, st.text(max_size=20)), max_size=8))
def test_every_message_is_kept_and_only_a_single_block_becomes_a_call(turns):
    raw = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for assistant, answer in turns:
        raw += [{"role": "assistant", "content": assistant}, {"role": "user", "content": answer}]
    out = convert({"messages": raw})
    assert [m["content"] for m in out if m["role"] != "assistant"] == [m["content"] for m in raw
                                                                       if m["role"] != "assistant"]
    for n, (assistant, _) in enumerate(turns):
        call, answer = out[2 + 2 * n], out[3 + 2 * n]
        single = assistant.count("```bash\n") == 1
        assert (call["name"] == "bash") == single and answer["role"] == ("tool" if single else "user")
