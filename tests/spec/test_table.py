"""The requirement table in tests/spec/README.md points at tests that exist and check something: every
`file::function` it names is a function of that file, every file it names exists, every row marked `test` names at
least one test, and every test it names asserts. For a few key rows, a reviewer's check: the rule the row states,
broken on purpose, makes the test the row names fail."""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
TABLE = TESTS / "spec" / "README.md"

ROW = re.compile(r"^\| (\d{3}\.\d+\w?) \| (.*) \| (test|deviation|open) \| (.*) \|$")
# A file (`core/test_engine.py`, or `spec/test_001…` for the module of a document), then `::name` (a name ending in
# `…` is shortened); `::name` alone is another function of the file named before it in the same cell.
REFERENCE = re.compile(r"((?:[\w-]+/)*[\w-]+(?:\.py|…))?::(\w+)(…)?|((?:[\w-]+/)*[\w-]+\.py)\b")


def rows() -> list[tuple[str, str, str]]:
    found = [ROW.match(line) for line in TABLE.read_text(encoding="utf-8").splitlines()]
    return [(m[1], m[3], m[4]) for m in found if m]


def resolve(name: str) -> Path | None:
    """A table path: relative to tests/ (as the table says), else to the repository; `spec/test_001…` by number."""
    if name.endswith("…"):
        matches = sorted((TESTS / name[:-1]).parent.glob(Path(name[:-1]).name + "_*.py"))
        return matches[0] if len(matches) == 1 else None
    for base in (TESTS, ROOT):
        if (base / name).is_file():
            return base / name
    return None


def defines(path: Path, function: str, shortened: bool) -> bool:
    end = "" if shortened else r"\b"
    pattern = rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(function)}{end}"
    return re.search(pattern, path.read_text(encoding="utf-8"), re.MULTILINE) is not None


def named_tests(where: str) -> list[tuple[Path, str]]:
    """The test functions a cell names, with their files (a shortened name: each function it begins)."""
    found, current = [], None
    for match in REFERENCE.finditer(where):
        path_name, function, shortened, bare_file = match.groups()
        if bare_file or path_name:
            current = resolve(bare_file or path_name)
        if bare_file or current is None or not function.startswith("test_"):
            continue
        rest = r"\w*" if shortened else ""
        pattern = rf"^\s*(?:async\s+)?def\s+({re.escape(function)}{rest})\b"
        found += [(current, name) for name in re.findall(pattern, current.read_text(encoding="utf-8"), re.MULTILINE)]
    return found


def broken_references(where: str) -> tuple[list[str], int]:
    """(what does not resolve, how many test functions the cell names)."""
    broken, tests, current = [], 0, None
    for match in REFERENCE.finditer(where):
        path_name, function, shortened, bare_file = match.groups()
        if bare_file:
            if resolve(bare_file) is None:
                broken.append(bare_file)
            current = resolve(bare_file)
            continue
        if path_name:
            current = resolve(path_name)
            if current is None:
                broken.append(path_name)
                continue
        if current is None:
            broken.append(f"::{function} (no file before it)")
        elif not defines(current, function, bool(shortened)):
            broken.append(f"{current.relative_to(ROOT)}::{function}")
        elif function.startswith("test_"):
            tests += 1
    return broken, tests


def test_the_table_lists_every_document():
    numbers = [number for number, _, _ in rows()]
    assert {n.split(".")[0] for n in numbers} == {"000", "001", "002", "003", "004"}
    assert len(numbers) == len(set(numbers)), "a requirement number is used twice"


def test_every_reference_in_the_table_resolves_and_every_tested_row_names_a_test():
    problems = []
    for number, status, where in rows():
        broken, tests = broken_references(where)
        problems += [f"{number}: {item}" for item in broken]
        if status == "test" and tests == 0:
            problems.append(f"{number}: marked test but names no test function")
    assert problems == []


def test_the_checker_finds_a_missing_function_and_a_missing_file():
    # The checker itself, on references that cannot resolve.
    assert broken_references("core/test_engine.py::test_no_such_test") == (
        ["tests/core/test_engine.py::test_no_such_test"], 0)
    assert broken_references("core/test_no_such_file.py::test_x; ::test_y") == (
        ["core/test_no_such_file.py", "::test_y (no file before it)"], 0)
    assert broken_references("spec/test_001…::test_001_configuration, ::test_001_a_summary_over_its_cap…") == ([], 2)


def asserts(path: Path, function: str) -> bool:
    """Whether the test function holds an assert or a pytest.raises (a test that cannot fail checks nothing)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function)
    return any(isinstance(n, ast.Assert) or isinstance(n, ast.Attribute) and n.attr == "raises" for n in ast.walk(node))


def test_every_named_test_asserts_something():
    silent = [f"{number}: {path.name}::{function}" for number, status, where in rows() if status == "test"
              for path, function in named_tests(where) if not asserts(path, function)]
    assert silent == []


# ----- the reviewer's check: break the rule a row states, and its named test fails ------------------------------

@dataclass(frozen=True)
class Break:
    """A row, one test it names (file stem and function) and how to break, with monkeypatch, what the row says."""

    row: str
    module: str
    test: str
    breaks: Callable[[pytest.MonkeyPatch], None]


def _wrap(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, wrapper: Callable) -> None:
    monkeypatch.setattr(owner, name, wrapper(getattr(owner, name)))


def _never_disarmed(monkeypatch):
    """004.4 broken: the policy re-arms at once, whatever the usage (no hysteresis)."""
    from precis.core.context.summarizing import Summarization

    def always_armed(due):
        def broken(self, ratio, next_message=False):
            self.armed = True
            return due(self, ratio, next_message)
        return broken
    _wrap(monkeypatch, Summarization, "_due", always_armed)


def _emergency_waits_for_the_cooldown(monkeypatch):
    """004.8 broken: after a first summary, an overflow waits for the cooldown like any trigger."""
    from precis.core.context.summarizing import Summarization

    def waits(due):
        def broken(self, ratio, next_message=False):
            reason, armed = due(self, ratio, next_message)
            cooling = self.archive.chain and self.since_summary < self.setup.policy.cooldown_messages
            return (None if reason == "overflow" and cooling else reason), armed
        return broken
    _wrap(monkeypatch, Summarization, "_due", waits)


def _fifty_messages_trigger(monkeypatch):
    """003.19's document rule put in: past 50 messages, whatever their size, summarize all but the recent tail."""
    from precis.core.context.summarizing import Summarization

    def by_count(due):
        def broken(self, ratio, next_message=False):
            reason, armed = due(self, ratio, next_message)
            return (reason or ("threshold" if len(self.archive.visible()) > 50 else None)), armed
        return broken
    _wrap(monkeypatch, Summarization, "_due", by_count)
    monkeypatch.setattr(Summarization, "_target_keep", lambda self: self.setup.policy.keep_recent)


def _second_pass_by_the_model(monkeypatch):
    """004.35 broken: the second pass asks the chat's summarizer (the model) again."""
    from precis.core.context.summarizing import Summarization

    def chats_summarizer(summarize):
        def broken(self, reason, instructions=None, up_to=None, summarizer=None):
            return summarize(self, reason, instructions, up_to)
        return broken
    _wrap(monkeypatch, Summarization, "_summarize", chats_summarizer)


def _no_meta_header(monkeypatch):
    """004.37 broken: the request goes without its meta header."""
    from precis.core.summary import summarizers

    monkeypatch.setattr(summarizers, "meta_header", lambda request: "")


def _whole_tool_outputs_sent(monkeypatch):
    """004.34 broken: the summarizer reads each tool output whole, not its one line."""
    from precis.core.summary import summarizers

    monkeypatch.setattr(summarizers, "one_line", lambda call, message, **_: message.content)


def _invented_decisions(monkeypatch):
    """004.33 broken: where the model gives no decisions, some are made up."""
    from precis.core.summary import summarizers

    def invents(draft):
        def broken(self, request, out):
            made = draft(self, request, out)
            made.facets.decisions = made.facets.decisions or ["Chose: the approach discussed."]
            return made
        return broken
    _wrap(monkeypatch, summarizers.LLMSummarizer, "_draft", invents)


BREAKS = [
    Break("004.4", "test_004_policy_and_record", "test_004_hysteresis_rearms_only_below_the_reset_ratio",
          _never_disarmed),
    Break("004.8", "test_004_policy_and_record", "test_004_emergency_at_the_window_ignores_the_cooldown",
          _emergency_waits_for_the_cooldown),
    Break("003.19", "test_003_session_summaries", "test_003_the_trigger_is_a_share_of_the_window_not_fifty_messages",
          _fifty_messages_trigger),
    Break("004.35", "test_004_policy_and_record", "test_004_a_second_pass_asks_the_model_nothing",
          _second_pass_by_the_model),
    Break("004.37", "test_004_policy_and_record", "test_004_the_summarizer_request_opens_with_the_meta_header",
          _no_meta_header),
    Break("004.34", "test_004_policy_and_record", "test_004_a_large_tool_output_does_not_bloat_the_summary",
          _whole_tool_outputs_sent),
    Break("004.33", "test_004_policy_and_record", "test_004_no_decisions_gives_empty_arrays_not_invented_ones",
          _invented_decisions),
]


@pytest.mark.parametrize("check", BREAKS, ids=lambda check: check.row)
def test_a_key_rows_test_fails_when_its_rule_is_broken(check: Break, monkeypatch):
    where = {number: cell for number, _, cell in rows()}[check.row]
    assert (TESTS / "spec" / f"{check.module}.py", check.test) in named_tests(where), "the row names the test"
    test = getattr(importlib.import_module(f"tests.spec.{check.module}"), check.test)
    test()  # it passes as the code is ...
    check.breaks(monkeypatch)
    with pytest.raises(AssertionError):  # ... and fails on an assertion with the rule broken
        test()
