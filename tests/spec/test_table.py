"""The requirement table in tests/spec/README.md points at tests that exist: every `file::function` it names is a
function of that file, every file it names exists, and every row marked `test` names at least one test."""

from __future__ import annotations

import re
from pathlib import Path

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
