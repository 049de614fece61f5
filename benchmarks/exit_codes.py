"""How the one-line summaries of commands in real mini-swe-agent sessions mark their exit codes.

mini-swe-agent (the SWE-bench harness) has no tool calls: the model writes one ```bash block, and the harness answers
with `<returncode>N</returncode>` and the output. Each such pair becomes a `bash` call and its result, and its
one-line summary is checked against the code the harness wrote: a non-zero code must come out ❌, a zero code never
❌. The true code is read here with a regex of this file's own, never by the summaries' reader.

    python -m benchmarks.exit_codes DIR_OR_FILES...   # *.traj.json files of mini-swe-agent runs

Prints, per code (zero, non-zero, none), how many lines came out ✓, ❌ and ?, and how many said the code wrongly.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

from precis.core.model.messages import Message, ToolCall
from precis.core.summary.tool_output import one_line

# mini-swe-agent's action regex (its default `action_regex`) and observation head.
_ACTION = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
_RETURNCODE = re.compile(r"\A\s*(?:<exception>.*?</exception>\s*)?<returncode>(-?\d+)</returncode>", re.DOTALL)
_EXIT_FIELD = re.compile(r"\| Exit: (-?\d+|\?) \|")


def command_pairs(trajectory: dict) -> list[tuple[str, str]]:
    """(command, observation) for every assistant message with one bash block answered by the harness."""
    messages = trajectory.get("messages") or []
    pairs = []
    for message, answer in zip(messages, messages[1:], strict=False):
        if message.get("role") != "assistant" or answer.get("role") != "user":
            continue
        actions = _ACTION.findall(str(message.get("content") or ""))
        observation = str(answer.get("content") or "")
        if len(actions) == 1 and ("<returncode>" in observation or "timed out" in observation):
            pairs.append((actions[0].strip(), observation))
    return pairs


def tally(files: list[Path]) -> tuple[Counter[tuple[str, str]], Counter[str], int]:
    """(code class, mark) counts; lines whose `Exit:` field differs from the true code, by code class; sessions."""
    marks: Counter[tuple[str, str]] = Counter()
    wrong_exit: Counter[str] = Counter()
    for path in files:
        for number, (command, observation) in enumerate(command_pairs(json.loads(path.read_text("utf-8")))):
            found = _RETURNCODE.match(observation)
            code = int(found.group(1)) if found else None
            kind = "none" if code is None else "zero" if code == 0 else "non-zero"
            call = ToolCall(id=f"c{number}", name="bash", arguments={"command": command})
            line = one_line(call, Message(role="tool", name="bash", tool_call_id=call.id, content=observation))
            marks[(kind, line[1])] += 1
            shown = _EXIT_FIELD.search(line)
            if (shown.group(1) if shown else "?") != ("?" if code is None else str(code)):
                wrong_exit[kind] += 1
    return marks, wrong_exit, len(files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", type=Path, help="*.traj.json files or folders holding them")
    args = parser.parse_args()
    files = sorted(f for p in args.paths for f in ([p] if p.is_file() else p.rglob("*.traj.json")))
    if not files:
        sys.exit("no *.traj.json file in " + ", ".join(map(str, args.paths)))
    marks, wrong_exit, sessions = tally(files)
    print(f"{sessions} sessions")
    print(f"{'code':<10}{'lines':>7}{'✓':>7}{'❌':>7}{'?':>7}{'Exit wrong':>12}")
    for kind in ("non-zero", "zero", "none"):
        counts = [marks[(kind, mark)] for mark in "✓❌?"]
        print(f"{kind:<10}{sum(counts):>7}{counts[0]:>7}{counts[1]:>7}{counts[2]:>7}{wrong_exit[kind]:>12}")


if __name__ == "__main__":
    main()
