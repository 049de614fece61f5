"""Convert mini-swe-agent trajectories (`*.traj.json`) into the interchange files of tests/data/transcripts/.

Used to get held-out coding sessions for the fidelity benchmark: real SWE-bench runs nobody tuned on.
Usage: python -m benchmarks.miniswe_convert MIRROR_OR_DIR OUT_DIR [--longest N]

MIRROR_OR_DIR is a bare git directory (its HEAD is read, no work tree needed), a directory searched for
`*.traj.json`, or one such file. --longest N keeps the N sessions with the most characters of message text,
a rule that needs no look at how Precis does on them.

mini-swe-agent has no tool calls: the model writes one ```bash block a message, and the harness answers as the
user with `<returncode>N</returncode>` and the output (or a timeout, or, for the final submit, the diff). Each such
pair becomes an assistant message calling `bash` with {"command": ...} (its text is the thought, the block taken
out) and the `tool` message answering it, the harness's text unchanged. An assistant message with no block or
several is refused by the harness; it stays text, and the harness's complaint stays a user message, as sent.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

# mini-swe-agent's default `action_regex` (as benchmarks/exit_codes.py reads it).
ACTION = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
ROLES = ("system", "user", "assistant")
SUFFIX = ".traj.json"


class Unconvertible(ValueError):
    """A trajectory that cannot be converted; the message says what and where."""


def _message(role: str, content: str, name: str | None = None, tool_args: dict | None = None) -> dict:
    return {"role": role, "content": content, "name": name, "tool_args": tool_args}


def trajectory_messages(trajectory: object) -> list[dict]:
    """The messages of a trajectory: its "messages" (format mini-swe-agent-1), or the list an older run saved."""
    messages = trajectory.get("messages") if isinstance(trajectory, dict) else trajectory
    if not isinstance(messages, list) or not messages:
        shown = f"keys {', '.join(map(repr, trajectory))}" if isinstance(trajectory, dict) else type(trajectory).__name__
        raise Unconvertible(f"no list of messages (found {shown})")
    for number, message in enumerate(messages):
        if not isinstance(message, dict):
            raise Unconvertible(f"message {number} is a {type(message).__name__}, not an object")
        if message.get("role") not in ROLES:
            raise Unconvertible(f"message {number}: role {message.get('role')!r} is not one of {', '.join(ROLES)}")
        if not isinstance(message.get("content"), str):
            raise Unconvertible(f"message {number}: content is a {type(message.get('content')).__name__}, not text")
    return messages


def convert(trajectory: object) -> list[dict]:
    """The interchange messages of one trajectory; Unconvertible says what is wrong with it."""
    messages = trajectory_messages(trajectory)
    out: list[dict] = []
    answers_call = False  # whether this message is the harness's answer to the previous one's command
    for message in messages:
        role, content = message["role"], message["content"]
        if answers_call and role == "user":
            out.append(_message("tool", content, "bash"))
            answers_call = False
            continue
        actions = ACTION.findall(content) if role == "assistant" else []
        answers_call = len(actions) == 1
        if answers_call:
            thought = ACTION.sub("", content).strip()
            out.append(_message("assistant", thought, "bash", {"command": actions[0].strip()}))
        else:
            out.append(_message(role, content))
    return out


def characters(trajectory: object) -> int:
    """Characters of message text: the size --longest ranks by."""
    return sum(len(m["content"]) for m in trajectory_messages(trajectory))


def _read_mirror(git_dir: Path) -> Iterator[tuple[str, bytes]]:
    """(path, bytes) of every *.traj.json at HEAD of a bare git directory."""
    def git(*args: str, given: bytes | None = None) -> bytes:
        done = subprocess.run(["git", f"--git-dir={git_dir}", *args], input=given, capture_output=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"miniswe_convert: git {' '.join(args)} in {git_dir} failed: "
                             f"{done.stderr.decode(errors='replace').strip()}")
        return done.stdout

    rows = [line.split("\t", 1) for line in git("ls-tree", "-r", "-z", "HEAD").decode().split("\0") if line]
    blobs = [(path, head.split()[2]) for head, path in rows if path.endswith(SUFFIX) and head.split()[1] == "blob"]
    print(f"{git_dir} at {git('rev-parse', '--short', 'HEAD').decode().strip()}: {len(blobs)} *{SUFFIX} files",
          file=sys.stderr)
    # One `git cat-file --batch` for all: "<sha> blob <size>\n<bytes>\n" per object, in the order asked.
    stream = git("cat-file", "--batch", given="".join(f"{sha}\n" for _, sha in blobs).encode())
    at = 0
    for path, _ in blobs:
        header_end = stream.index(b"\n", at)
        size = int(stream[at:header_end].split()[2])
        yield path, stream[header_end + 1:header_end + 1 + size]
        at = header_end + 1 + size + 1


def read_sources(source: Path) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of the trajectories in a bare git directory, a directory, or one file."""
    if source.is_dir() and (source / "HEAD").is_file() and (source / "objects").is_dir():
        yield from _read_mirror(source)
    elif source.is_dir():
        for path in sorted(source.rglob(f"*{SUFFIX}")):
            yield str(path.relative_to(source)), path.read_bytes()
    elif source.is_file():
        yield source.name, source.read_bytes()
    else:
        raise SystemExit(f"miniswe_convert: {source} is neither a git directory, a directory nor a file")


def load(sources: Iterator[tuple[str, bytes]]) -> tuple[dict[str, tuple[str, object]], list[str]]:
    """{output name: (source path, trajectory)} of the readable trajectories, and a line for each one that is not."""
    loaded: dict[str, tuple[str, object]] = {}
    failed = []
    for path, raw in sources:
        name = path.rsplit("/", 1)[-1].removesuffix(SUFFIX)
        try:
            trajectory = json.loads(raw.decode("utf-8"))
            trajectory_messages(trajectory)
        except UnicodeDecodeError as exc:
            failed.append(f"{path}: not UTF-8 (byte {exc.start})")
        except json.JSONDecodeError as exc:
            failed.append(f"{path}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})")
        except Unconvertible as exc:
            failed.append(f"{path}: {exc}")
        else:
            if name in loaded:
                failed.append(f"{path}: its name {name!r} is taken by {loaded[name][0]}")
            else:
                loaded[name] = (path, trajectory)
    return loaded, failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="bare git directory, directory of *.traj.json, or one file")
    parser.add_argument("out", type=Path, help="where to write NAME.jsonl, one per session")
    parser.add_argument("--longest", type=int, metavar="N", help="only the N sessions with the most characters")
    args = parser.parse_args(argv)
    if args.longest is not None and args.longest < 1:
        parser.error(f"--longest: must be at least 1, got {args.longest}")
    loaded, failed = load(read_sources(args.source))
    names = sorted(loaded)
    if args.longest is not None:
        names = sorted(names, key=lambda n: (-characters(loaded[n][1]), n))[:args.longest]
    args.out.mkdir(parents=True, exist_ok=True)
    calls = refused = 0
    for name in names:
        messages = convert(loaded[name][1])
        calls += sum(m["role"] == "tool" for m in messages)
        refused += sum(m["role"] == "assistant" and not m["name"] for m in messages)
        (args.out / f"{name}.jsonl").write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages),
                                                encoding="utf-8")
    chosen = f" (the {len(names)} longest)" if args.longest is not None else ""
    print(f"converted {len(names)} of {len(loaded) + len(failed)} trajectories{chosen} into {args.out}: {calls} "
          f"commands with their results; {refused} assistant messages without exactly one bash block kept as text")
    for line in failed:
        print(f"could not convert {line}", file=sys.stderr)
    return 1 if not names else 0


if __name__ == "__main__":
    sys.exit(main())
