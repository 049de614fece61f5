"""`precis chat` with its input piped, in its own process over real pipes: every input line is a message, never the
answer to a question about a tool call. A scripted "y" (or "yes please…") meant as the next message approved a call
the script never saw. A call that needs consent is not run unless it was allowed up front (`--allow all`, or the
tools allowed in the chat). The model is the scripted server on loopback, a stand-in: a real model does not call
execute_bash on demand."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from precis.core.cli.chat_tools import NO_ONE_TO_ASK
from precis.core.storage.store import open_store

from tests.providers.scripted_server import stream
from tests.providers.test_tool_loop import answer, calls
from tests.pseudo_terminal import ROOT

SAVE = calls(("c1", "execute_bash", {"command": "echo ran > note.txt"}))


def piped_chat(server, tmp_path, *argv: str, lines: str) -> subprocess.CompletedProcess:
    env = {name: value for name, value in os.environ.items() if name != "OPENAI_API_KEY"}
    return subprocess.run([sys.executable, "-m", "precis.core.cli.main", "chat", "--provider", "openai", "--base-url",
                           server.base_url, "--model", "m", "--data-dir", str(tmp_path / "data"), "--context-tokens",
                           "8192", *argv], cwd=ROOT, input=lines, capture_output=True, text=True, env=env,
                          timeout=120)


def sent(server, request: int) -> dict:
    """The last message of the server's `request`th request (0-based)."""
    return server.requests[request][2]["messages"][-1]


def test_a_piped_chat_never_takes_a_line_as_consent_and_sends_it_as_a_message(server, tmp_path, workspace):
    server.steps = [stream(SAVE), stream(answer("I was not let.")), stream(answer("Got y.")),
                    stream(answer("Nothing ran."))]
    done = piped_chat(server, tmp_path, "--workspace", str(workspace),
                      lines="Save a note.\ny\nyes please summarize\n")
    assert done.returncode == 0, done.stderr
    assert not (workspace / "note.txt").exists()
    # Standard output holds the replies alone; the call and why it did not run are on standard error.
    assert done.stdout == "I was not let.\nGot y.\nNothing ran.\n"
    assert f"[The model wants to run execute_bash, in {workspace}.]\n$ echo ran > note.txt" in done.stderr
    assert f"Not run: {NO_ONE_TO_ASK}" in done.stderr and "Allow it?" not in done.stderr
    # The model was told why, and each line after the message went to it as a message of its own.
    assert sent(server, 1) == {"role": "tool", "tool_call_id": "c1", "content": f"Error: not run: {NO_ONE_TO_ASK}"}
    assert sent(server, 2) == {"role": "user", "content": "y"}
    assert sent(server, 3) == {"role": "user", "content": "yes please summarize"}
    assert len(server.requests) == 4


def test_one_message_with_a_piped_yes_does_not_run_the_call(server, tmp_path, workspace):
    """`echo y | precis chat --workspace DIR "…"`: the piped y is not an answer either."""
    server.steps = [stream(SAVE), stream(answer("I was not let."))]
    done = piped_chat(server, tmp_path, "--workspace", str(workspace), "Save a note.", lines="y\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "I was not let.\n" and f"Not run: {NO_ONE_TO_ASK}" in done.stderr
    assert not (workspace / "note.txt").exists()
    assert sent(server, 1)["content"] == f"Error: not run: {NO_ONE_TO_ASK}"


@pytest.mark.parametrize("allowance", ["--allow all", "the chat's allowed tools"])
def test_a_call_allowed_up_front_runs_in_a_piped_chat(server, tmp_path, workspace, allowance):
    if allowance == "--allow all":
        argv = ["--workspace", str(workspace), "--allow", "all"]
    else:  # "a" answered at a terminal earlier, or the window's "Allow in this chat"
        with open_store(tmp_path / "data") as store:
            chat = store.create_chat("allowed", {"workspace": str(workspace), "allowed_tools": ["execute_bash"]})
        argv = ["--chat", chat]
    server.steps = [stream(SAVE), stream(answer("Saved.")), stream(answer("Got y."))]
    done = piped_chat(server, tmp_path, *argv, lines="Save a note.\ny\n")
    assert done.returncode == 0, done.stderr
    assert (workspace / "note.txt").read_text() == "ran\n"
    assert done.stdout == "Saved.\nGot y.\n" and "wants to" not in done.stderr
    assert sent(server, 1)["role"] == "tool" and "not run" not in sent(server, 1)["content"]
    assert sent(server, 2) == {"role": "user", "content": "y"}
