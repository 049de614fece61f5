"""The fidelity yardstick must not grade the summarizers with their own rules: it imports nothing from precis."""

import ast
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.gold import check, gold_facts, normalize_answer, reply_holds_answer

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
YARDSTICK = ("fidelity.py", "answers.py", "gold.py", "locomo_convert.py", "miniswe_convert.py")


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


def test_yardstick_imports_nothing_from_precis():
    for name in YARDSTICK:
        modules = imported_modules(BENCHMARKS / name)
        assert not [m for m in modules if m.split(".")[0] in ("precis", "core", "gui") or m.startswith(".")], name
        local = {m for m in modules if m.startswith("benchmarks")}
        assert local <= {"benchmarks.gold", "benchmarks.fidelity", "benchmarks.answers"}, name


def test_a_failed_command_is_kept_only_with_its_outcome():
    messages = [{"role": "user", "content": "Please rebuild the parser and rerun the failing tests"},
                {"role": "assistant", "content": "", "name": "Bash", "tool_args": {"command": "pytest tests/test_parse.py"}},
                {"role": "tool", "name": "Bash", "content": "E   ImportError: no module\nExit code 1"}]
    facts = gold_facts(messages)
    kept, total, missing = check(facts, "ran `pytest tests/test_parse.py` (exit 1): ImportError; user: rebuild the "
                                        "parser, rerun failing tests")
    assert total == {"files": 1, "commands": 1, "errors": 1, "requests": 1, "state": 2}
    assert kept == total
    kept, _, missing = check(facts, "ran pytest tests/test_parse.py")
    assert kept["commands"] == 0 and missing["errors"] == ["ImportError"] and kept["files"] == 1


def test_errors_are_those_of_commands_run_not_names_in_a_file_read():
    messages = [{"role": "assistant", "content": "", "name": "Read", "tool_args": {"file_path": "/p/app.ex"}},
                {"role": "tool", "name": "Read", "content": "  rescue\n    ArgumentError -> :error"},
                {"role": "assistant", "content": "", "name": "Bash", "tool_args": {"command": "mix test"}},
                {"role": "tool", "name": "Bash", "content": "** (BadMapError) expected a map\nExit code 1"}]
    assert [f.label for f in gold_facts(messages) if f.kind == "errors"] == ["BadMapError"]


def test_a_file_only_named_in_the_users_or_the_assistants_text_is_a_gold_file():
    messages = [{"role": "user", "content": "The crash is in lib/app/router.ex"},
                {"role": "assistant", "content": "I will look at config/prod.exs first."},
                {"role": "tool", "name": "Bash", "content": "see deps/plug/lib/plug.ex"}]
    files = [f.label for f in gold_facts(messages) if f.kind == "files"]
    assert files == ["router.ex", "prod.exs"]  # a tool's output is not the session naming a file


def test_answers_match_without_case_or_punctuation():
    assert normalize_answer("7 May, 2023.") in normalize_answer("Caroline went on 7 may 2023 to the group")
    assert normalize_answer("May") not in normalize_answer("she maybe went")


def test_a_reply_counts_when_it_holds_the_answers_words():
    assert reply_holds_answer("7 May 2023", "Caroline went to the group on May 7, 2023.")
    assert reply_holds_answer("The sunset", "She painted a sunset by the lake")
    assert reply_holds_answer("Psychology, counseling certification", "a counseling certification in psychology")
    assert not reply_holds_answer("7 May 2023", "Caroline went to the group in June 2023.")
    assert not reply_holds_answer("May", "She maybe went")  # a word, not a part of one
    assert not reply_holds_answer("Psychology, counseling certification", "She wants to study psychology")
    assert not reply_holds_answer("", "anything at all")


@given(st.lists(st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True), min_size=1, max_size=5), st.text(max_size=40))
def test_a_reply_holding_the_answer_counts_and_one_without_a_word_of_it_does_not(answer_words, noise):
    answer = " ".join(answer_words)
    if set(answer_words) <= {"a", "an", "the"}:
        return
    assert reply_holds_answer(answer, f"{noise} {answer.upper()}. {noise}")
    missing = next(w for w in answer_words if w not in ("a", "an", "the"))
    reply = " ".join(w for w in f"{noise} {answer}".lower().split() if missing not in normalize_answer(w).split())
    assert not reply_holds_answer(answer, reply)


def test_locomo_conversion_numbers_lines_as_the_shared_conversations_do():
    from benchmarks.locomo_convert import convert

    sample = {"conversation": {"speaker_a": "Ann", "speaker_b": "Bo",
                               "session_1_date_time": "1:56 pm on 8 May, 2023",
                               "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog."},
                                             {"speaker": "Bo", "dia_id": "D1:2", "text": "Look!",
                                              "blip_caption": "a photo of a cat"}],
                               "session_2_date_time": "2 pm on 9 May, 2023", "session_2": [],
                               "session_3_date_time": "3 pm on 1 June, 2023",
                               "session_3": [{"speaker": "Bo", "dia_id": "D3:1", "text": "Mine is Max."}]},
              "session_summary": {"session_1_summary": "Ann adopted a dog."},
              "qa": [{"question": "Pets?", "answer": 2, "evidence": ["D3:1; D1:1"], "category": 1},
                     {"question": "Cat?", "evidence": ["D:1:2"], "category": 5, "adversarial_answer": "no"}]}
    messages, questions, summaries = convert(sample)
    assert [m["content"] for m in messages] == [
        "Session 1 - 1:56 pm on 8 May, 2023", "Ann: I adopted a dog.", "Bo: Look! [shares an image: a photo of a cat]",
        "Session 3 - 3 pm on 1 June, 2023", "Bo: Mine is Max."]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "system", "assistant"]
    assert questions[0]["answer"] == "2" and questions[0]["evidence_message_indices"] == [1, 4]
    assert questions[1]["answer"] is None and questions[1]["evidence_message_indices"] == [2]
    assert summaries == [{"session": 1, "first_message_index": 0, "last_message_index": 2,
                          "summary": "Ann adopted a dog."}]
