"""The errors of a summary's trail keep the exception's message, quotes and all, where a command's output reports
it on a line of its own: a test runner's (unittest, pytest) or a script's that exited 0. Before, only the name was
kept there (`ValueError`), the message (`invalid literal for int() with base 10: 'abc'`) lost."""

from __future__ import annotations

from precis.core.model.messages import Message, ToolCall
from precis.core.model.tokens import TokenCounter
from precis.core.summary.facets import extract_facets
from precis.core.summary.summary_block import render_artifact_trail
from precis.core.summary.trail_coverage import check_coverage

COUNT = TokenCounter().count_text

# Django's test runner failing, as mini-swe-agent returns it: the first error line is the test's header, the
# exception is at the end of its traceback.
DJANGO_TESTS = """<returncode>1</returncode>
<output>
Testing against Django installed in '/testbed/django' with up to 8 processes
Found 1 test(s).
System check identified no issues (0 silenced).
E
======================================================================
ERROR: test_parse_quantity (utils_tests.test_numbers.ParseTests.test_parse_quantity)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/utils_tests/test_numbers.py", line 12, in test_parse_quantity
    self.assertEqual(parse_quantity("abc"), 0)
  File "/testbed/django/utils/numbers.py", line 40, in parse_quantity
    return int(value)
           ^^^^^^^^^^
ValueError: invalid literal for int() with base 10: 'abc'

----------------------------------------------------------------------
Ran 1 test in 0.002s

FAILED (errors=1)
</output>"""

# pytest 5 (SWE-bench's older repositories) prints no short summary: the exception is only on its `E` line.
PYTEST = """<returncode>1</returncode>
<output>
============================= test session starts ==============================
collected 1 item

tests/test_registry.py F                                                 [100%]

=================================== FAILURES ===================================
________________________________ test_lookup ___________________________________

    def test_lookup():
        registry = Registry()
>       assert registry["name"] == 1
E       KeyError: 'name'

tests/test_registry.py:6: KeyError
============================== 1 failed in 0.03s ===============================
</output>"""

# A reproduction script run through `tail`: the pipe's exit code is 0, the traceback is the script's.
REPRODUCE = """<returncode>0</returncode>
<output>
Traceback (most recent call last):
  File "/testbed/reproduce_issue.py", line 4, in <module>
    from django.db import models
  File "/testbed/django/db/models/constraints.py", line 30
    f"{self.__class__.__name__}.__init__() missing 1 required keyword-only "
    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
SyntaxError: invalid syntax. Perhaps you forgot a comma? The name 'if' stops it
</output>"""


def bash(index: int, command: str, output: str) -> list[Message]:
    call = ToolCall(id=f"bash-{index}", name="bash", arguments={"command": command})
    return [Message(role="assistant", content="THOUGHT: run it.", tool_calls=(call,)),
            Message(role="tool", name="bash", tool_call_id=call.id, content=output)]


def test_an_exception_a_test_runner_reports_keeps_its_message_with_its_quotes():
    messages = [*bash(1, "python tests/runtests.py utils_tests.test_numbers", DJANGO_TESTS),
                *bash(2, "python -m pytest tests/test_registry.py", PYTEST),
                *bash(3, "python reproduce_issue.py 2>&1 | tail -20", REPRODUCE)]
    facets = extract_facets(messages)
    expected = ["ValueError: invalid literal for int() with base 10: 'abc'", "KeyError: 'name'",
                "SyntaxError: invalid syntax. Perhaps you forgot a comma? The name 'if' stops it"]
    for line in expected:
        assert line in facets.errors
    assert not {"ValueError", "KeyError", "SyntaxError"} & set(facets.errors)  # no name left bare
    trail = render_artifact_trail(facets)
    assert all(f"- {line}" in trail.splitlines() for line in expected)
    assert check_coverage(messages, trail).missing["errors"] == []


def test_an_exception_line_is_bounded_like_other_error_lines():
    huge = "<returncode>1</returncode>\n<output>\nE\n=====\nERROR: test_a (t.T)\n-----\nKeyError: '" \
        + "k" * 5000 + "'\n</output>"
    facets = extract_facets(bash(1, "python -m unittest t", huge))
    line = next(e for e in facets.errors if e.startswith("KeyError: 'kkk"))
    assert len(line) <= 200


def test_a_dotted_exception_line_dropped_for_room_leaves_its_name():
    messages = [m for i in range(30) for m in bash(i, f"python check_{i}.py", "<returncode>0</returncode>\n<output>\nok\n</output>")]
    messages += bash(90, "python reproduce.py 2>&1 | tail -3", "<returncode>0</returncode>\n<output>\n"
                     "  File \"/testbed/django/db/backends/sqlite3/base.py\", line 328, in execute\n"
                     "    return super().execute(query, params)\n"
                     "django.db.utils.OperationalError: no such table: reproduce_app_thing\n</output>")
    facets = extract_facets(messages)
    assert "django.db.utils.OperationalError: no such table: reproduce_app_thing" in facets.errors
    roomy = render_artifact_trail(facets)
    short = render_artifact_trail(facets, COUNT(roomy) * 2 // 3, COUNT)
    assert "no such table" not in short and "Error names: OperationalError" in short


def test_an_exception_line_in_a_file_read_is_not_the_error_hit():
    call = ToolCall(id="read-1", name="Read", arguments={"file_path": "/p/docs/errors.md"})
    messages = [*bash(1, "python -m pytest tests/test_registry.py", PYTEST),
                Message(role="assistant", tool_calls=(call,)),
                Message(role="tool", name="Read", tool_call_id=call.id,
                        content="# Errors\n\nKeyError: 'user'\n\nis raised when the registry has no such user.\n")]
    errors = extract_facets(messages).errors
    assert "KeyError: 'name'" in errors and not any("'user'" in e for e in errors)


def test_a_bare_assert_is_listed_by_its_name_without_an_empty_message():
    bare = PYTEST.replace('assert registry["name"] == 1\nE       KeyError: \'name\'', "assert registry.ready\nE       "
                          "AssertionError: ").replace("tests/test_registry.py:6: KeyError",
                                                      "tests/test_registry.py:6: AssertionError")
    # Through a pipe (exit 0), with its module before it.
    dotted = "<returncode>0</returncode>\n<output>\nTraceback (most recent call last):\nfoo.bar.BadStateError:\n</output>"
    errors = extract_facets([*bash(1, "python -m pytest tests/test_registry.py", bare),
                             *bash(2, "python run.py 2>&1 | tail", dotted)]).errors
    assert "AssertionError" in errors and "BadStateError" in errors
    assert not any(e.endswith(":") for e in errors), errors
