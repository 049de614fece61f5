"""The toolbox a chat's loop uses: the model's mistakes come back as outcomes it can act on, and MCP tools join the
workspace's under names that stay unique."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from precis.core.chat.tool_loop import tool_result
from precis.core.model.messages import ToolCall
from precis.core.summary.tool_output import one_line
from precis.core.tools.mcp_config import ServerConfig
from precis.core.tools.mcp_servers import McpServers
from precis.core.tools.toolbox import Toolbox
from precis.core.tools.workspace import Workspace

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")


@pytest.fixture
def box(tmp_path):
    (tmp_path / "notes.txt").write_text("one\n")
    return Toolbox(Workspace(tmp_path))


def test_the_models_mistakes_are_outcomes_saying_what_to_change(box):
    unknown = box.run(ToolCall(id="1", name="delete_everything", arguments={}))
    assert not unknown.ok and "no tool called 'delete_everything'" in unknown.output and "read_file" in unknown.output
    garbled = box.run(ToolCall(id="2", name="read_file", arguments={"_unparsed": '{"path": "notes.txt"'}))
    assert not garbled.ok and "not valid JSON" in garbled.output and '{"path": "notes.txt"' in garbled.output
    missing = box.run(ToolCall(id="3", name="read_file", arguments={}))
    assert not missing.ok and "bad arguments for read_file" in missing.output and "'path' is a required" in missing.output
    wrong_type = box.run(ToolCall(id="4", name="read_file", arguments={"path": "notes.txt", "offset": "ten"}))
    assert not wrong_type.ok and "offset: 'ten' is not of type 'integer'" in wrong_type.output
    extra = box.run(ToolCall(id="5", name="edit_file", arguments={"path": "notes.txt", "old": "one", "new": "two"}))
    assert not extra.ok and "bad arguments for edit_file" in extra.output
    gone = box.run(ToolCall(id="6", name="read_file", arguments={"path": "nowhere.txt"}))
    assert not gone.ok and gone.output == "read_file: nowhere.txt: no such file"
    # Each of these is known before the call runs: the loop answers it without asking the user.
    assert box.problem(ToolCall(id="7", name="edit_file", arguments={"_unparsed": "{"})).startswith(
        "the arguments for edit_file were not valid JSON")
    assert box.problem(ToolCall(id="8", name="list_files", arguments={"path": "/"})).startswith(
        "list_files: / is outside the workspace folder")
    assert box.problem(ToolCall(id="9", name="read_file", arguments={"path": "notes.txt"})) == ""
    assert box.needs_consent("delete_everything")


def test_without_a_workspace_no_workspace_tool_is_offered(tmp_path):
    box = Toolbox()
    assert box.specs() == []
    outcome = box.run(ToolCall(id="1", name="read_file", arguments={"path": "x"}))
    assert not outcome.ok and "no tool called 'read_file'" in outcome.output


def test_mcp_tools_join_the_workspace_tools_under_unique_names(tmp_path):
    servers = [ServerConfig("time", command=TIME_SERVER), ServerConfig("clock", command=TIME_SERVER)]
    with McpServers(servers) as running:
        assert running.wait_started(120)
        box = Toolbox(Workspace(tmp_path), running)
        specs = {spec.name: spec for spec in box.specs()}
        assert {"read_file", "list_files", "search_files", "execute_bash", "create_file", "edit_file"} <= set(specs)
        # Both servers offer get_current_time: each is called by its server's name.
        assert {"time_get_current_time", "clock_get_current_time", "time_convert_time"} <= set(specs)
        assert specs["clock_get_current_time"].source == "clock" and specs["clock_get_current_time"].read_only
        assert not box.needs_consent("clock_get_current_time")
        call = ToolCall(id="1", name="clock_get_current_time", arguments={"timezone": "Europe/Paris"})
        assert box.preview(call) == "clock: get_current_time(timezone='Europe/Paris')"
        assert box.question(call) == "The model wants to run clock_get_current_time, from the MCP server 'clock'."
        outcome = box.run(call)
        assert outcome.ok and '"timezone": "Europe/Paris"' in outcome.output and outcome.seconds > 0
        refused = box.run(ToolCall(id="2", name="time_get_current_time", arguments={"zone": "UTC"}))
        assert not refused.ok and "'timezone' is a required property" in refused.output
        # A server's error that says "Error executing tool …" itself is not labelled "Error: " again.
        nowhere = ToolCall(id="4", name="clock_get_current_time", arguments={"timezone": "Nowhere/Nope"})
        failed = tool_result(nowhere, box.run(nowhere))
        assert failed.content.startswith("Error executing tool get_current_time: Invalid timezone")
        assert one_line(nowhere, failed).startswith("[❌ clock_get_current_time: Input: timezone=Nowhere/Nope | "
                                                    "Error executing tool get_current_time: Invalid timezone")

        only_clock = Toolbox(None, running, enabled_servers={"clock"})
        assert {spec.name for spec in only_clock.specs()} == {"get_current_time", "convert_time"}

        # Switched off in Settings → Tools: one tool of a server, all of another's, a workspace tool.
        switched = Toolbox(Workspace(tmp_path), running, disabled={"time/convert_time", "clock/*", "execute_bash"})
        offered = {spec.name for spec in switched.specs()}
        assert "get_current_time" in offered and not offered & {"convert_time", "time_convert_time", "execute_bash",
                                                                 "clock_get_current_time"}
        off = switched.run(ToolCall(id="3", name="execute_bash", arguments={"command": "touch made"}))
        assert not off.ok and not (tmp_path / "made").exists()


def test_a_wrong_file_name_comes_back_with_the_names_like_it(box, tmp_path):
    """A small model asks for "notes" or "Notes.TXT" where notes.txt is: the error names what is there, so its next
    call can be right, and the call's one line in the chat and its summaries reads the error once."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print(1)\n")
    for guess in ("notes", "Notes.TXT", "note.txt"):
        outcome = box.run(ToolCall(id="1", name="read_file", arguments={"path": guess}))
        assert not outcome.ok and outcome.output == f"read_file: {guess}: no such file; in that folder: notes.txt"
    in_sub = box.run(ToolCall(id="2", name="read_file", arguments={"path": "src/mian.py"}))
    assert in_sub.output.endswith("no such file; in that folder: main.py")
    no_folder = box.run(ToolCall(id="3", name="read_file", arguments={"path": "lib/main.py"}))
    assert no_folder.output == "read_file: lib/main.py: no such file; no folder lib either"
    call = ToolCall(id="4", name="read_file", arguments={"path": "notes"})
    line = one_line(call, tool_result(call, box.run(call)))
    assert line == "[❌ read_file: File: notes | Error: read_file: notes: no such file; in that folder: notes.txt]"


def test_a_commands_timeout_is_whole_seconds_within_bounds_and_shown_on_the_card_when_not_the_usual(box):
    """As a free number the embedded model wrote `1.0000000122000000183514237…` until its reply's limit, or asked
    for 0.001 s, which the card did not show."""
    from precis.core.providers.call_schema import forced_call_schema
    from precis.core.settings import RUN_TIMEOUT_SECONDS

    def bash(**arguments) -> ToolCall:
        return ToolCall(id="t", name="execute_bash", arguments={"command": "make test", **arguments})

    for odd in (0.001, 1.5, 0, 601):
        assert box.problem(bash(timeout=odd)).startswith("bad arguments for execute_bash"), odd
    for fine in (1, 120, 600, 30.0):  # 30.0 is a whole number, as JSON has it
        assert box.problem(bash(timeout=fine)) == "", fine
    # The grammar the embedded model is held to writes only those: an integer of at most 3 digits.
    grammar = forced_call_schema(next(s for s in box.specs() if s.name == "execute_bash").parameters, 512)
    assert {key: grammar["properties"]["timeout"][key] for key in ("type", "minimum", "maximum")} == {
        "type": "integer", "minimum": 1, "maximum": 600}
    # The card says a timeout that is not the usual one; the usual one goes without saying.
    assert "stopped after 120 s" in box.preview(bash(timeout=120))
    assert "stopped after 1 s" in box.preview(bash(timeout=1))
    assert "stopped after" not in box.preview(bash()) + box.preview(bash(timeout=RUN_TIMEOUT_SECONDS))


def test_creating_over_a_file_that_is_there_says_it_replaces_it_on_the_card_and_in_the_one_liner(box):
    """The card said "wants to run create_file", and the one-liner "Lines written: 1", of a call that replaced a
    file whole."""
    over = ToolCall(id="r", name="create_file", arguments={"path": "notes.txt", "content": "two\nthree\n"})
    new = ToolCall(id="n", name="create_file", arguments={"path": "new.txt", "content": "one\n"})
    folder = box.workspace.root
    assert box.question(over) == f"The model wants to replace notes.txt (2 lines), in {folder}."
    assert box.question(new) == f"The model wants to create new.txt (1 line), in {folder}."
    bash = ToolCall(id="b", name="execute_bash", arguments={"command": "ls"})
    assert box.question(bash) == f"The model wants to run execute_bash, in {folder}."
    replaced, created = tool_result(over, box.run(over)), tool_result(new, box.run(new))
    assert "Replaced: notes.txt" in one_line(over, replaced) and "Lines written: 2" in one_line(over, replaced)
    assert "File: new.txt" in one_line(new, created) and "Replaced" not in one_line(new, created)
