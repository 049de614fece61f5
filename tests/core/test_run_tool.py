"""/run with commands that never end, flood their output or leave processes behind: bounded, and nothing lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from precis.core import tools

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
        from precis.core.tools import run_shell
        output, code = run_shell("echo $$ > {tmp_path}/pid; yes 0123456789abcdefghij", timeout=10)
        peak_kb = re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)
        print(len(output), code, int(peak_kb) // 1024)
        print(output[-120:].splitlines()[-1])
    """)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    first, note = probe.stdout.splitlines()
    length, code, peak_mb = first.split()
    assert int(length) <= tools.MAX_TOOL_OUTPUT_CHARS + 200 and code == "None"
    assert int(peak_mb) < 150, f"peak {peak_mb} MB while reading an endless producer"
    assert "output passed 200,000 bytes; the command was stopped" in note
    assert gone_within(int((tmp_path / "pid").read_text()), seconds=10)


def test_a_timeout_keeps_what_was_printed_and_kills_the_group(tmp_path):
    output, code = tools.run_shell(f"echo before; sleep 30 & echo $! > {tmp_path}/pid; wait", timeout=1)
    assert code is None
    assert output.startswith("before\n") and output.endswith("[timed out after 1 s; the command was stopped]")
    assert gone_within(int((tmp_path / "pid").read_text()), seconds=10)


def test_a_detached_background_process_does_not_hold_the_result(tmp_path):
    started = time.monotonic()
    output, code = tools.run_shell(
        f"setsid sh -c 'echo $$ > {tmp_path}/pid; exec sleep 30' & sleep 0.2; echo started", timeout=20)
    took = time.monotonic() - started
    pid = int((tmp_path / "pid").read_text())
    try:
        assert code == 0 and output.startswith("started\n")
        assert "started in the background still holds its output and was left running" in output
        assert took < 10  # not the 20 s timeout: the result came when the shell ended
    finally:
        os.kill(pid, signal.SIGKILL)


def test_run_messages_carry_the_stop_note():
    _, result = tools.run_command_messages("echo partial; sleep 30", timeout=1)
    assert result.content.startswith("partial\n[timed out after 1 s")


def test_a_capped_run_message_still_says_why_it_stopped():
    """The message the chat keeps is capped too: its end (the stop note and exit line) survives the cap."""
    _, result = tools.run_command_messages("yes 0123456789abcdefghij", timeout=20)
    assert len(result.content) <= tools.MAX_TOOL_OUTPUT_CHARS + 100
    assert result.content.startswith("0123456789abcdefghij\n")
    assert "[output passed 200,000 bytes; the command was stopped]" in result.content[-300:]
    assert "characters not kept" in result.content
