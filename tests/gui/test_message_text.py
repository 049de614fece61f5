"""The one line a tool result's row shows, folded (gui/message_text.py)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from precis.core.tools.workspace import Workspace
from precis.gui.message_text import first_line_and_count


def test_a_json_answer_shows_its_first_line_that_says_something():
    # mcp-server-time's answer, as its server writes it: the row read "← ✓ get_current_time  {".
    answer = json.dumps({"timezone": "Asia/Tokyo", "datetime": "2026-11-28T15:30:58+09:00", "day_of_week": "Saturday",
                         "is_dst": False}, indent=2)
    assert first_line_and_count(answer) == ('"timezone": "Asia/Tokyo",', 6)
    assert first_line_and_count("  \n}\n") == ("}", 1)  # nothing but punctuation: still shown
    assert first_line_and_count(" \n ") == ("(no output)", 0)


def test_a_harness_tag_before_the_output_is_not_its_first_line():
    # A mini-swe-agent session's rows read "← ✓ bash  <returncode>0</returncode>".
    output = "<returncode>0</returncode>\n<output>\nRan 47 tests in 1.2s\n\nOK\n</output>"
    assert first_line_and_count(output) == ("Ran 47 tests in 1.2s", 6)
    assert first_line_and_count("<returncode>1</returncode>\n<output_head>\nTraceback (most recent call last):")[0] \
        == "Traceback (most recent call last):"
    # An empty output is not its closing tag.
    assert first_line_and_count("<returncode>0</returncode>\n<output>\n</output>")[0] == "(no output)"


@given(st.lists(st.text(alphabet=st.sampled_from("{}[]() ,.:-ab1\t"), max_size=12), max_size=8))
def test_the_line_shown_is_one_of_the_outputs_and_has_a_word_when_any_has(lines):
    text = "\n".join(lines)
    shown, _total = first_line_and_count(text)
    kept = [line.strip() for line in lines if line.strip()]
    assert shown in kept if kept else shown == "(no output)"
    if any(any(c.isalnum() for c in line) for line in kept):
        assert any(c.isalnum() for c in shown)


def test_a_downloads_progress_meter_is_not_its_line_and_a_command_named_for_its_program_reads_once():
    """Imported SWE-agent rows read "← ✓ curl  % Total % Received % Xferd ..." under "→ curl  curl -X POST ..."."""
    from precis.core.model.messages import Message, ToolCall
    from precis.gui.message_text import tool_call_line

    output = ("  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"
              "                                 Dload  Upload   Total   Spent    Left  Speed\n"
              "100    38  100    38    0     0   1900      0 --:--:-- --:--:-- --:--:--  1900\n"
              "flag{not_here}\n")
    assert first_line_and_count(output) == ("flag{not_here}", 4)
    assert first_line_and_count("1 file changed, 2 insertions(+)\n") == ("1 file changed, 2 insertions(+)", 1)
    call = Message(role="assistant", tool_calls=(ToolCall("c1", "curl", {"command": "curl -X POST http://h/f"}),
                                                ToolCall("c2", "bash", {"command": "ls -la"})))
    assert tool_call_line(call) == "curl  -X POST http://h/f\nbash  ls -la"


def test_a_command_stopped_at_a_limit_shows_why_on_its_row(tmp_path):
    # `seq 1 100000` through execute_bash: the row read "✗ execute_bash  Error: 1", the reason 35,000 lines below.
    outcome = Workspace(tmp_path).execute_bash("yes 1 | head -c 300000")
    assert not outcome.ok
    first, _ = first_line_and_count(outcome.output)
    assert "[output passed 200,000 bytes; the command was stopped]" in first
