"""Slash commands: parsing, hints for bad input, and the tool messages /run, /grep and attachments produce."""

from __future__ import annotations

import re
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from precis.core.chat import commands as slash
from precis.core.providers.base import CancelToken
from precis.core.settings import ChatSettings
from precis.core.tools import bounded as tools


def test_ordinary_text_and_escaped_slashes_are_messages():
    assert slash.parse("hello /context") is None
    assert slash.parse("//context is a word") is None
    assert slash.unescape("//context is a word") == "/context is a word"


def test_commands_parse_with_their_argument():
    assert slash.parse("/summarize keep the file names") == slash.SlashCommand("summarize", "keep the file names")
    assert slash.parse("  /CONTEXT ") == slash.SlashCommand("context", "")
    assert slash.parse("/run ls -la /tmp") == slash.SlashCommand("run", "ls -la /tmp")


@pytest.mark.parametrize(("typed", "meant"), [
    ("hlep", "/help"), ("sumarize", "/summarize"), ("contxt", "/context"), ("undo", "/undo-summary"),
    ("rgep", "/grep"), ("HISTRY", "/history"), ("unpn", "/unpin"),
])
def test_a_mistyped_command_is_answered_in_one_line_with_the_command_it_is_close_to(typed, meant):
    """Before, the suggestion compared the first two letters (/hlep: none) and the ~30 lines of /help followed."""
    with pytest.raises(slash.SlashError) as refused:
        slash.parse(f"/{typed} now")
    said = str(refused.value)
    assert said.startswith(f"Unknown command /{typed}. Did you mean {meant}")
    assert "/help lists the commands" in said and "\n" not in said
    assert not any(command.help in said for command in slash.slash_commands())  # the list is not repeated


def test_a_name_like_no_command_is_told_where_the_commands_are_and_how_to_send_a_slash():
    with pytest.raises(slash.SlashError) as refused:
        slash.parse("/usr/bin/env is where python lives")
    assert str(refused.value) == ("Unknown command /usr/bin/env. /help lists the commands; // starts a message with a "
                                  "slash.")


@given(typed=st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=14))
def test_whatever_is_mistyped_the_answer_is_one_line_naming_it_and_only_commands_that_exist(typed):
    if typed in slash.REGISTRY and slash.REGISTRY[typed].slash:
        return
    with pytest.raises(slash.SlashError) as refused:
        slash.parse(f"/{typed}")
    said = str(refused.value)
    assert said.startswith(f"Unknown command /{typed}.") and "\n" not in said
    suggested = re.findall(r"/([a-z-]+)", said.partition("Did you mean ")[2].partition("?")[0])
    assert len(suggested) <= slash.MOST_SUGGESTED
    assert all(slash.REGISTRY[name].slash for name in suggested)


def test_incomplete_commands_get_a_hint():
    with pytest.raises(slash.SlashError, match="/run needs CMD"):
        slash.parse("/run   ")
    with pytest.raises(tools.ToolInputError, match="bad pattern"):
        tools.grep("(", ".")


@pytest.mark.parametrize("command", slash.slash_commands(), ids=lambda command: command.name)
def test_each_usage_line_says_what_its_command_takes(command):
    """A usage line without an argument is a command that takes none (`/context all` did as /context, the word
    silently dropped); [ARG] may be left out; ARG may not."""
    if not command.argument:
        with pytest.raises(slash.SlashError, match=f"/{command.name} takes nothing after it, not 'all'"):
            slash.parse(f"/{command.name} all")
    elif command.needs_argument:
        with pytest.raises(slash.SlashError, match=re.escape(f"/{command.name} needs {command.argument}:")):
            slash.parse(f"/{command.name}")
    else:
        assert slash.parse(f"/{command.name}") == slash.SlashCommand(command.name, "")
    if command.argument:
        assert slash.parse(f"/{command.name} 2") == slash.SlashCommand(command.name, "2")


def test_run_adds_the_output_and_exit_code_as_a_bash_tool_exchange(tmp_path):
    call, result = tools.run_command_messages("echo out; echo err >&2; exit 2", cwd=tmp_path)
    assert call.role == "assistant" and call.tool_calls[0].name == "bash"
    assert call.tool_calls[0].arguments == {"command": "echo out; echo err >&2; exit 2"}
    assert result.role == "tool" and result.name == "bash" and result.tool_call_id == call.tool_calls[0].id
    assert result.content == "out\nerr\n[exit code: 2]"


def test_cancel_kills_the_command_and_everything_it_started(tmp_path):
    cancel = CancelToken()
    started = tmp_path / "started"

    def cancel_once_started() -> None:  # not after a fixed time: a loaded machine may not have started it yet
        while not started.exists():
            time.sleep(0.05)
        cancel.cancel()
    threading.Thread(target=cancel_once_started, daemon=True).start()
    result = tools.run_shell(f"echo started; sleep 30 & sleep 30 & touch {started}; wait", cancel=cancel, timeout=60)
    assert result.exit_code is None and result.cancelled and result.output == "started\n"
    lines = tools.format_command_output(result).splitlines()
    assert lines[0] == "started" and lines[-1] == "[cancelled]"
    assert lines[1].startswith("[ended 2 processes it started: sleep 30 (pid ") and len(lines) == 3


def test_grep_lists_matches_with_file_and_line(tmp_path):
    (tmp_path / "a.py").write_text("import os\nTODO fix\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("nothing\nTODO again\nTODO twice\n")
    (tmp_path / "bin.dat").write_bytes(b"\0TODO")
    call, result = slash.tool_messages("grep", f"TODO {tmp_path}", CancelToken(), ChatSettings())
    assert call.tool_calls[0].name == "grep" and call.tool_calls[0].arguments == {"pattern": "TODO", "path": str(tmp_path)}
    assert result.content.splitlines() == [
        "a.py:2: TODO fix", "sub/b.txt:2: TODO again", "sub/b.txt:3: TODO twice", "3 matches in 2 files"]


def test_attached_files_become_read_file_exchanges_and_binary_files_are_refused(tmp_path):
    text = tmp_path / "notes.md"
    text.write_text("# Notes\nünïcode\n")
    call, result = tools.read_file_messages(text)
    assert call.tool_calls[0].name == "read_file" and call.tool_calls[0].arguments == {"path": str(text)}
    assert result.content == "# Notes\nünïcode\n"
    binary = tmp_path / "image.png"
    binary.write_bytes(b"\x89PNG\0\0")
    with pytest.raises(ValueError, match="image.png: looks like a binary file"):
        tools.read_file_messages(binary)


def test_one_registration_puts_a_command_in_parsing_help_completion_and_the_menus(monkeypatch):
    monkeypatch.setattr(slash, "REGISTRY", dict(slash.REGISTRY))
    slash.register("recap", "Recap the chat", "say what happened so far", argument="TOPIC", menu="Chat")
    assert slash.parse("/recap the tests") == slash.SlashCommand("recap", "the tests")
    with pytest.raises(slash.SlashError, match="/recap needs TOPIC: say what happened so far"):
        slash.parse("/recap")
    assert "/recap TOPIC" in slash.help_text() and slash.help_text().endswith("say what happened so far")
    assert [c.name for c in slash.completions("/rec")] == ["recap"]
    assert slash.menus()["Chat"][-1].title == "Recap the chat"
    with pytest.raises(ValueError, match="registered twice"):
        slash.register("recap", "again", "again")


def test_menu_only_commands_are_not_slash_commands():
    assert slash.REGISTRY["quit"].menu == "File"
    with pytest.raises(slash.SlashError, match="Unknown command /quit"):
        slash.parse("/quit")
    assert "/quit" not in slash.help_text() and "/help" in slash.help_text()
    assert [c.name for c in slash.completions("/s")] == ["summarize"]
