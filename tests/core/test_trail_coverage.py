"""The trail-coverage check: facts come out of real transcripts, and a summary that drops one is caught."""

from __future__ import annotations

from functools import lru_cache

from precis.core.model.messages import Message, ToolCall
from precis.core.storage.interchange import read_transcript
from precis.core.summary.trail_coverage import KINDS, check_coverage, context_text, extract_facts, normalize_command

from tests.conftest import TRANSCRIPTS_DIR

CLAUDE_CODE = TRANSCRIPTS_DIR / "claudecode_session.jsonl"


@lru_cache(maxsize=None)
def transcript(name: str) -> tuple[Message, ...]:
    return tuple(read_transcript(TRANSCRIPTS_DIR / name))


def call(name: str, result: str = "", **arguments) -> list[Message]:
    """An assistant tool call and its result."""
    tool_call = ToolCall(id=f"call-{name}-{len(str(arguments))}-{hash(str(arguments)) & 0xffff}", name=name,
                         arguments=arguments)
    return [Message(role="assistant", tool_calls=(tool_call,)),
            Message(role="tool", name=name, tool_call_id=tool_call.id, content=result)]


def test_claude_code_reads_and_shell_commands_are_facts():
    messages = list(transcript("claudecode_session.jsonl")[:405])
    facts = extract_facts(messages)
    read_paths = {c.arguments["file_path"] for m in messages for c in m.tool_calls if c.name == "Read"}
    bash = {normalize_command(c.arguments["command"]) for m in messages for c in m.tool_calls if c.name == "Bash"}
    assert read_paths and read_paths <= set(facts["files"])
    commands = {label.rsplit(" (exit ", 1)[0] for label in facts["commands"]}
    assert bash <= commands
    # The one failed command of the session carries its exit code.
    assert [c for c in facts["commands"] if c.endswith("(exit 1)")] == [
        next(c for c in facts["commands"] if c.startswith("source spotter-plugin/scripts/lib/trace_context.sh"))]
    assert "BadMapError" in facts["errors"]
    assert facts["instructions"] and facts["instructions"][0].startswith("Work on bead spotter-4te")
    # A skill's body injected as a user message is not something the user asked.
    assert not any(i.startswith("Base directory for this skill") for i in facts["instructions"])


def test_swe_agent_editor_commands_name_files_not_shell_commands():
    facts = extract_facts(list(transcript("sweagent_3.jsonl")))
    assert {"setup.py", "reproduce.py", "src/marshmallow/fields.py"} <= set(facts["files"])
    assert "python reproduce.py" in facts["commands"]
    assert not any(c.startswith(("open", "create", "edit", "submit")) for c in facts["commands"])
    assert "TimeDelta" in facts["identifiers"]

    ctf = extract_facts(list(transcript("sweagent_1.jsonl")))
    assert "printenv.pl" in ctf["files"]  # from the editor command "create printenv.pl"
    assert not any(c.startswith("edit ") for c in ctf["commands"])


def test_facts_are_deduplicated():
    messages = [*call("Bash", "ok", command="pytest  -q"), *call("Bash", "ok", command="pytest -q 2>&1 | tail -20"),
                *call("Read", "x", file_path="/p/a.py"), *call("Read", "x", file_path="/p/a.py")]
    facts = extract_facts(messages)
    assert facts["commands"] == ["pytest -q"]
    assert facts["files"] == ["/p/a.py"]


# A small exchange whose facts are written out by hand, not read back from the code under test.
REQUEST = "The app crashes in `parse_config` when the config has no tool table. Please fix src/app/config.py."
EXCHANGE = [
    Message(role="user", content=REQUEST),
    *call("Read", "def parse_config(raw):\n    return raw['tool']\n", file_path="/repo/src/app/config.py"),
    *call("Bash", "E   KeyError: 'tool'\n1 failed in 0.02s\nexit code: 1", command="pytest -q tests/test_config.py"),
    # `target_file` names a file as `file_path` does (one list of file-argument keys for trail and check).
    *call("edit_file", "ok", target_file="/repo/src/app/loader.py", old_string="a", new_string="b"),
]


def test_facts_of_an_exchange_are_the_hand_written_ones():
    assert extract_facts(EXCHANGE) == {
        # The test file is only named, in the command run: a file the session knows of all the same.
        "files": ["src/app/config.py", "/repo/src/app/config.py", "tests/test_config.py", "/repo/src/app/loader.py"],
        "commands": ["pytest -q tests/test_config.py (exit 1)"],
        "errors": ["KeyError"],
        "identifiers": ["parse_config"],
        "instructions": [REQUEST[:79] + "…"],  # a label is clipped to 80 characters
    }


def test_a_summary_keeps_what_it_names_and_misses_the_rest():
    thin = check_coverage(EXCHANGE, "Edited src/app/loader.py after `pytest -q tests/test_config.py` failed (exit 1).")
    assert thin.kept == {"files": 2, "commands": 1, "errors": 0, "identifiers": 0, "instructions": 0}
    assert thin.total == {"files": 4, "commands": 1, "errors": 1, "identifiers": 1, "instructions": 1}
    assert thin.missing["errors"] == ["KeyError"] and thin.missing["identifiers"] == ["parse_config"]
    # "tests/test_config.py" does not name config.py.
    assert thin.missing["files"] == ["src/app/config.py", "config.py"]
    full = check_coverage(EXCHANGE, (
        "The app crashes in `parse_config` when the config has no tool table; fix src/app/config.py. "
        "Read /repo/src/app/config.py; `pytest -q tests/test_config.py` failed (exit 1) with KeyError; "
        "edited /repo/src/app/loader.py."))
    assert full.kept == full.total and set(full.total) == set(KINDS)


def test_a_removed_fact_is_reported_missing():
    messages = list(transcript("claudecode_session.jsonl")[:120])
    full = context_text(messages)
    before = check_coverage(messages, full)
    assert before.kept == before.total
    without = check_coverage(messages, full.replace("BadMapError", "an error"))
    assert without.kept["errors"] == before.kept["errors"] - 1
    assert without.missing["errors"] == ["BadMapError"]
    assert "missing: BadMapError" in without.describe()


def test_file_matches_full_path_or_its_folder_and_name():
    root = "/home/u/proj"
    messages = [*call("Read", "x", file_path=f"{root}/config/dev.exs"),
                *call("Edit", "ok", file_path=f"{root}/lib/app/telemetry/otel.ex"),
                *call("Read", "x", file_path=f"{root}/mix.exs"),
                *call("Read", "x", file_path=f"{root}/lib/app/application.ex")]

    def missing(text: str) -> list[str]:
        return check_coverage(messages, text).missing["files"]

    everything = f"read {root}/config/dev.exs, edited telemetry/otel.ex; mix.exs; app/application.ex"
    assert missing(everything) == []
    # Paths grouped by folder, as a compact artifact trail writes them.
    assert missing("config/: dev.exs, test.exs\nlib/app/telemetry/: otel.ex\nmix.exs app/application.ex") == []
    # A file name under another folder, or the folder on another line, is not the same file.
    # Missing files are named relative to the project (the folder most of them are in).
    assert "config/dev.exs" in missing("prod/dev.exs")
    assert "config/dev.exs" in missing("config/\ndev.exs")
    assert "lib/app/telemetry/otel.ex" in missing("otel.ex")


def test_bare_file_name_counts_only_at_the_project_root():
    messages = [*call("Read", "x", file_path="/srv/a/mix.exs"), *call("Read", "x", file_path="/srv/a/lib/x.ex"),
                *call("Read", "x", file_path="/srv/a/lib/y.ex"), *call("Read", "x", file_path="/etc/hosts.conf")]
    coverage = check_coverage(messages, "touched mix.exs, lib/x.ex, lib/y.ex and hosts.conf")
    assert coverage.missing["files"] == ["/etc/hosts.conf"]


def test_failed_command_needs_its_exit_code():
    messages = [*call("Bash", "Exit code 2\nFAILED tests/test_a.py::test_b - AssertionError", command="pytest -q"),
                *call("Bash", "all good", command="ruff check .")]
    facts = extract_facts(messages)
    assert facts["commands"] == ["pytest -q (exit 2)", "ruff check ."]
    assert set(facts["errors"]) == {"AssertionError", "tests/test_a.py::test_b"}

    def kept(text: str) -> int:
        return check_coverage(messages, text).kept["commands"]

    assert kept("ran `pytest -q` and `ruff check .`") == 1
    assert kept("- pytest -q (exit 2)\n- ruff check .") == 2
    assert kept("- pytest -q (exit 3)\n- ruff check .") == 1
    assert kept("ruff check . pytest -q, exit code 2") == 2


def test_exit_code_inside_the_command_is_not_its_result():
    messages = call("Bash", "Exit code 3", command='python -c "import sys; sys.exit(3)"')
    assert check_coverage(messages, 'python -c "import sys; sys.exit(3)"').kept["commands"] == 0
    assert check_coverage(messages, 'python -c "import sys; sys.exit(3)" exited with code 3').kept["commands"] == 1


def test_instruction_is_kept_when_most_of_its_words_are():
    messages = [Message(role="user", content="Please rename the parser module to tokenizer and keep the old "
                                             "import path working for plugins."),
                Message(role="user", content="<system-reminder>Todo list is empty</system-reminder>"),
                Message(role="assistant", content="Renaming now.")]
    facts = extract_facts(messages)
    assert len(facts["instructions"]) == 1  # the injected reminder is not an instruction

    def kept(text: str) -> int:
        return check_coverage(messages, text).kept["instructions"]

    assert kept("User asked: rename parser module -> tokenizer; old import path must keep working (plugins).") == 1
    assert kept("User asked to rename something.") == 0


def test_backticked_identifiers_and_errors_match_exactly():
    messages = [Message(role="user", content="Why does `load_config` raise KeyError? Not `x` or\n```\n`in_code`\n```"),
                Message(role="assistant", content="Because `CONFIG_PATH` is unset; see `load_config`.")]
    facts = extract_facts(messages)
    assert facts["identifiers"] == ["load_config", "CONFIG_PATH"]  # short and fenced ones skipped
    assert facts["errors"] == ["KeyError"]
    coverage = check_coverage(messages, "load_config fails with KeyError when config_path is unset")
    assert coverage.missing["identifiers"] == ["CONFIG_PATH"]
    assert coverage.kept["errors"] == 1


def test_claude_code_reference_summary_is_measurable():
    """Claude Code's own compaction (message 405) against the facts of messages 0..404: most files are kept (not
    all of those only named in commands: 24 of 30), most shell commands are not; this is the reference row of
    benchmarks/fidelity.py."""
    messages = list(transcript("claudecode_session.jsonl"))
    coverage = check_coverage(messages[:405], messages[405].content)
    assert coverage.kept["files"] >= coverage.total["files"] * 3 // 4
    assert coverage.kept["commands"] < coverage.total["commands"] // 2
    assert coverage.describe().startswith(f"files {coverage.kept['files']}/{coverage.total['files']}, commands")


def test_compiler_error_codes_are_errors():
    messages = call("Bash", "src/a.ts(3,1): error TS2345: Argument of type\nerror[E0308]: mismatched types",
                    command="npm run build")
    facts = extract_facts(messages)
    assert facts["errors"] == ["TS2345", "E0308"]
    assert check_coverage(messages, "build failed: TS2345 in src/a.ts").missing["errors"] == ["E0308"]


def test_an_exit_code_on_the_next_line_belongs_to_the_next_command():
    messages = [*call("Bash", "Exit code 1", command="git status"), *call("Bash", "Exit code 1", command="npm test")]
    coverage = check_coverage(messages, "- `git status`\n- `npm test` (exit 1)")
    assert coverage.missing["commands"] == ["git status (exit 1)"]


def test_a_missing_fact_never_shows_a_secret():
    covered = [Message(role="user", content="load the dump"),
               *call("Bash", "ok", command="mysql -u root -pS3cretPass42 appdb < dump.sql"),
               *call("Bash", "ok", command="curl -u admin:Tr0ub4dor3 https://api.example.com/v1")]
    coverage = check_coverage(covered, "nothing of it was kept")
    shown = coverage.describe(limit=20)
    assert coverage.missing["commands"] and "S3cretPass42" not in shown and "Tr0ub4dor3" not in shown
    assert "[REDACTED:password]" in shown
