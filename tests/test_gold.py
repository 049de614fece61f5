"""The yardstick's own rules (benchmarks/gold.py), which share nothing with what they measure."""

from __future__ import annotations

from benchmarks.gold import gold_facts


def session(command: str, output: str) -> list[dict]:
    return [{"role": "user", "content": "Fix the crash in the parser please"},
            {"role": "assistant", "content": "", "tool_name": "bash", "tool_args": {"command": command}},
            {"role": "tool", "content": output}]


def errors(command: str, output: str) -> set[str]:
    return {f.label for f in gold_facts(session(command, output)) if f.kind == "errors"}


def test_an_error_a_command_hit_is_a_fact_and_one_a_file_shows_is_not():
    traceback = "<returncode>1</returncode>\nTraceback (most recent call last):\nKeyError: 'name'"
    assert errors("cd /repo && python -m pytest tests/test_parser.py", traceback) == {"KeyError"}
    source = "<returncode>0</returncode>\n    except KeyError:\n        raise ParseError('bad')"
    for viewing in ("cat parser.py", "cd /repo && grep -n Error parser.py | head -20", "sed -n 1,40p parser.py",
                    "git diff", "nl -ba parser.py | sed -n 10,30p"):
        assert errors(viewing, source) == set(), viewing
    assert errors("python parser.py", source) == {"KeyError", "ParseError"}
