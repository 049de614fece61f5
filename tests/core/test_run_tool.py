"""/run with commands that never end, flood their output or leave processes behind: bounded, and nothing lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from precis.core.chat.commands import tool_messages
from precis.core.providers.base import CancelToken
from precis.core.settings import ChatSettings
from precis.core.tools import bounded as tools

ROOT = Path(__file__).resolve().parents[2]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]


def gone_within(pid: int, seconds: float) -> bool:
    """Whether the process ends within `seconds`: a killed process must be scheduled to exit, which a loaded machine
    can delay past a fixed pause."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_an_endless_producer_is_capped_while_reading_and_killed(tmp_path):
    # In its own process, so the peak memory measured (VmHWM, which starts afresh at exec unlike ru_maxrss) is that
    # of the reading side alone.
    probe = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import re
        from pathlib import Path
        from precis.core.tools.bounded import run_shell
        result = run_shell("echo $$ > {tmp_path}/pid; yes 0123456789abcdefghij", timeout=10)
        peak_kb = re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)
        print(len(result.output), result.exit_code, int(peak_kb) // 1024)
        print(result.notes[0])
    """)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    first, note = probe.stdout.splitlines()
    length, code, peak_mb = first.split()
    assert int(length) <= tools.MAX_TOOL_OUTPUT_CHARS + 200 and code == "None"
    assert int(peak_mb) < 150, f"peak {peak_mb} MB while reading an endless producer"
    assert "output passed 200,000 bytes; the command was stopped" in note
    assert gone_within(int((tmp_path / "pid").read_text()), seconds=10)


def test_a_timeout_keeps_what_was_printed_and_kills_the_group_naming_what_it_ended(tmp_path):
    # 5 s: the shell must reach its `wait` before the limit, also on a machine whose cores are busy elsewhere.
    result = tools.run_shell(f"echo before; sleep 30 & echo $! > {tmp_path}/pid; wait", timeout=5)
    pid = int((tmp_path / "pid").read_text())
    assert result.exit_code is None and result.output == "before\n"
    assert result.notes == ("[timed out after 5 s; the command was stopped]",
                            f"[ended 1 process it started: sleep 30 (pid {pid})]")
    assert gone_within(pid, seconds=10)


def test_a_background_process_that_left_the_session_is_ended_when_the_command_ends(tmp_path):
    """`setsid sh -c 'sleep 97' &` reported exit 0 and kept running past the time limit."""
    started = time.monotonic()
    result = tools.run_shell(
        f"setsid sh -c 'echo $$ > {tmp_path}/pid; exec sleep 97' & sleep 0.5; echo started", timeout=20)
    pid = int((tmp_path / "pid").read_text())
    try:
        assert result.exit_code == 0 and result.output == "started\n"
        assert result.notes == (f"[ended 1 process the command left running: sleep 97 (pid {pid})]",)
        assert time.monotonic() - started < 10  # not the 20 s timeout: the result came when the shell ended
        assert gone_within(pid, seconds=10)
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_background_process_that_closed_its_output_is_ended_too(tmp_path):
    result = tools.run_shell(f"setsid sh -c 'echo $$ > {tmp_path}/pid; exec sleep 97' >/dev/null 2>&1 & sleep 0.5",
                             timeout=20)
    pid = int((tmp_path / "pid").read_text())
    assert result.exit_code == 0 and result.notes == (f"[ended 1 process the command left running: sleep 97 (pid {pid})]",)
    assert gone_within(pid, seconds=10)


def test_a_command_that_closes_its_output_is_still_waited_for():
    result = tools.run_shell("exec >&- 2>&-; sleep 1; exit 3", timeout=20)
    assert result.exit_code == 3 and result.notes == ()


def test_memory_is_limited_for_each_process_and_the_limit_can_be_raised():
    """A 2 GB allocation succeeded. (bytes(n) asks for zeroed memory it does not touch: the test stays quick.)"""
    allocate = f"{sys.executable} -c 'bytes(2_000_000_000)'"
    refused = tools.run_shell(allocate, timeout=60)
    assert refused.exit_code == 1 and "MemoryError" in refused.output
    assert tools.run_shell(allocate, timeout=60, memory_mb=4096).exit_code == 0


def test_a_command_with_more_processes_than_its_limit_is_stopped_with_all_of_them(tmp_path):
    """300 background processes started."""
    result = tools.run_shell(f"for i in $(seq 300); do sleep 60 & echo $! >> {tmp_path}/pids; done; wait",
                             timeout=60, processes=50)
    assert result.exit_code is None
    assert result.notes[0] == "[more than 50 processes at once; the command was stopped]"
    assert result.notes[1].startswith("[ended ") and " processes it started: sleep 60 (pid " in result.notes[1]
    for pid in map(int, (tmp_path / "pids").read_text().split()):
        assert gone_within(pid, seconds=10)


def test_run_messages_carry_the_stop_note_and_no_cancel():
    """After its time limit /run printed '[timed out...]' and '[cancelled]', which the user had not done."""
    _, result = tools.run_command_messages("echo partial; sleep 30", timeout=1)
    lines = result.content.splitlines()
    assert lines[:2] == ["[timed out after 1 s; the command was stopped]", "partial"]
    assert lines[2].startswith("[ended 1 process it started: sleep 30 (pid ") and len(lines) == 3


def test_a_capped_run_message_still_says_why_it_stopped():
    """The message the chat keeps is capped too, and says first why the command stopped: its first line is what the
    chat's row shows (it showed the output's first line, a screenful from the reason)."""
    _, result = tools.run_command_messages("yes 0123456789abcdefghij", timeout=20)
    assert len(result.content) <= tools.MAX_TOOL_OUTPUT_CHARS + 100
    assert result.content.startswith("[output passed 200,000 bytes; the command was stopped]\n0123456789abcdefghij\n")
    assert "characters not kept" in result.content


def test_run_in_a_chat_whose_workspace_folder_is_gone_says_so_and_runs_nothing(tmp_path):
    gone = tmp_path / "gone"
    settings = ChatSettings(workspace=str(gone))
    for name, argument in (("run", f"touch {tmp_path / 'ran'}"), ("grep", "x")):
        with pytest.raises(tools.ToolInputError, match=f"/{name} works in the chat's workspace folder, but there is "
                                                       f"no folder {gone}"):
            tool_messages(name, argument, CancelToken(), settings)
    assert not (tmp_path / "ran").exists()
