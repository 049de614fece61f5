"""The model using tools through the chat core (core/chat/tool_loop.py): a real store, real workspace tools on a
temporary folder, and the OpenAI-compatible provider over loopback. The model is the scripted server, a stand-in: a
real model does not call read_file, then execute_bash, then answer, on demand."""

from __future__ import annotations

import io
import json
import threading

import pytest
from precis.core.chat.session import ChatSession
from precis.core.chat.tool_loop import ALLOW_IN_CHAT, ALLOW_ONCE, DENY, ToolLoop
from precis.core.context.engine import ToolsTooLarge
from precis.core.model.messages import Message
from precis.core.providers.base import CancelToken
from precis.core.providers.openai_compat import OpenAICompatProvider
from precis.core.storage.store import open_store
from precis.core.summary.tool_output import one_line
from precis.core.tools.toolbox import Toolbox
from precis.core.tools.workspace import Workspace

from tests.providers.scripted_server import FINISH, delta, stream
from tests.providers.test_tool_calls import CALLS_FINISH, call_delta
from tests.pseudo_terminal import typed_at_a_terminal


def calls(*made: tuple[str, str, dict]) -> list[str]:
    """A reply making these calls (id, tool, arguments)."""
    return [*(call_delta(n, call_id=call_id, name=name, arguments=json.dumps(arguments))
              for n, (call_id, name, arguments) in enumerate(made)), CALLS_FINISH, "data: [DONE]"]


def answer(text: str) -> list[str]:
    return [delta(text), FINISH, "data: [DONE]"]


def chat(store, server, workspace, asked: list, decisions: list[str], **loop) -> tuple[ChatSession, ToolLoop]:
    chat_id = store.create_chat("tools", settings={"context_window": 8192})  # no request asks the server its window
    session = ChatSession(store, chat_id, OpenAICompatProvider(server.base_url, "test-model", "sk-test"))
    session.build_engine(estimate=False)
    session.add_messages([Message(role="user", content="What does main.py print? Then save a note.")])

    def ask(call, preview):
        asked.append((call.name, preview))
        return decisions.pop(0)

    return session, ToolLoop(session, Toolbox(Workspace(workspace)), ask, **loop)


def run(loop: ToolLoop, cancel: CancelToken | None = None):
    texts: list[str] = []
    return loop.answer(cancel=cancel or CancelToken(), on_text=lambda _p, piece: texts.append(piece)), texts


def test_reads_run_at_once_writes_ask_and_a_denied_call_never_runs(tmp_path, server, workspace):
    server.steps = [
        stream(calls(("c1", "read_file", {"path": "main.py"}))),
        stream(calls(("c2", "execute_bash", {"command": "echo done > note.txt"}))),
        stream(answer("It prints the working folder. I could not save the note.")),
    ]
    asked: list = []
    with open_store(tmp_path / "data") as store:
        session, loop = chat(store, server, workspace, asked, [DENY])
        turn, texts = run(loop)
        assert turn.ended == "" and "".join(texts).startswith("It prints the working folder")
        # The read ran without asking; the command asked, showing the command, and was denied: it never ran.
        assert [(s.call.name, s.asked, s.outcome.ok) for s in turn.steps] == [
            ("read_file", False, True), ("execute_bash", True, False)]
        assert asked == [("execute_bash", f"$ echo done > note.txt\n(in {workspace})")]
        assert not (workspace / "note.txt").exists()
        # The model read the file's text, then that the call was denied; each result answers its call.
        second, third = server.requests[1][2]["messages"], server.requests[2][2]["messages"]
        assert second[-1] == {"role": "tool", "tool_call_id": "c1", "content": turn.steps[0].result.content}
        assert "print(os.getcwd())" in second[-1]["content"]
        assert third[-1]["content"] == "Error: not run: the user denied this call"
        # Its one-liner says so, without the "Exit: ? | Output: 1 line" of a command that ran.
        assert one_line(turn.steps[1].call, turn.steps[1].result) == \
            "[❌ execute_bash: Command: echo done > note.txt | Not run: the user denied this call]"
        assert {t["function"]["name"] for t in server.requests[0][2]["tools"]} >= {"read_file", "execute_bash"}
        # Stored as messages, in order: the chat reopened holds the whole turn.
        stored = store.load_messages(session.chat_id)
        assert [(m.role, [c.name for c in m.tool_calls], m.tool_call_id) for m in stored] == [
            ("user", [], None), ("assistant", ["read_file"], None), ("tool", [], "c1"),
            ("assistant", ["execute_bash"], None), ("tool", [], "c2"), ("assistant", [], None)]
        # The tool definitions count in the prompt, as a kind of their own.
        assert session.snapshot().usage.by_kind["tools"] > 0


def test_allowed_in_this_chat_asks_once(tmp_path, server, workspace):
    server.steps = [stream(calls(("c1", "create_file", {"path": "a.txt", "content": "one\n"}))),
                    stream(calls(("c2", "create_file", {"path": "b.txt", "content": "two\n"}))),
                    stream(answer("Both files are made."))]
    asked: list = []
    with open_store(tmp_path / "data") as store:
        _session, loop = chat(store, server, workspace, asked, [ALLOW_IN_CHAT])
        turn, _ = run(loop)
    assert [name for name, _ in asked] == ["create_file"] and "+one" in asked[0][1]  # the diff, before writing
    assert (workspace / "a.txt").read_text() == "one\n" and (workspace / "b.txt").read_text() == "two\n"
    assert [s.asked for s in turn.steps] == [True, False]


def test_allowed_in_this_chat_lasts_for_the_chat_reopened_until_taken_back(tmp_path, server, workspace):
    def make(name: str) -> list[str]:
        return calls((name, "create_file", {"path": f"{name}.txt", "content": f"{name}\n"}))

    server.steps = [stream(make("a")), stream(answer("Made a.")), stream(make("b")), stream(answer("Made b.")),
                    stream(make("c")), stream(answer("Not made."))]
    asked: list = []

    def reopened(store, chat_id: str, message: str) -> ToolLoop:
        """The chat opened again in a new session, as after a restart, with a message to answer."""
        session = ChatSession(store, chat_id, OpenAICompatProvider(server.base_url, "test-model", "sk-test"))
        session.build_engine(estimate=False)
        session.add_messages([Message(role="user", content=message)])
        return ToolLoop(session, Toolbox(Workspace(workspace)),
                        lambda call, preview: (asked.append((call.name, preview)), DENY)[1])

    with open_store(tmp_path / "data") as store:
        session, loop = chat(store, server, workspace, asked, [ALLOW_IN_CHAT])
        run(loop)
        chat_id = session.chat_id
    with open_store(tmp_path / "data") as store:  # Precis started again
        assert store.get_chat(chat_id).settings.allowed_tools == ["create_file"]
        turn, _ = run(reopened(store, chat_id, "Make b."))
        assert [s.asked for s in turn.steps] == [False] and (workspace / "b.txt").exists()
        # Taken back (Settings → This chat): the tool asks again.
        settings = store.get_chat(chat_id).settings
        store.update_chat_settings(chat_id, settings.model_copy(update={"allowed_tools": []}))
        turn, _ = run(reopened(store, chat_id, "Make c."))
    assert [s.asked for s in turn.steps] == [True] and not (workspace / "c.txt").exists()
    assert [name for name, _ in asked] == ["create_file", "create_file"]  # the first card, then the one taken back


def test_the_step_limit_ends_the_turn_and_says_so(tmp_path, server, workspace):
    server.steps = [stream(calls((f"c{n}", "read_file", {"path": "main.py"}))) for n in range(4)]
    with open_store(tmp_path / "data") as store:
        session, loop = chat(store, server, workspace, [], [], max_steps=3)
        turn, _ = run(loop)
        assert turn.ended.startswith("the step limit was reached: 3 tool calls")
        assert [s.outcome.ok for s in turn.steps] == [True, True, True, False]
        assert "limit of 3 tool calls" in turn.steps[-1].result.content
        assert len(server.requests) == 4  # the model is not called again past the limit
        # Every call has its result: the chat can go on with any provider.
        messages = store.load_messages(session.chat_id)
        assert {c.id for m in messages for c in m.tool_calls} == {m.tool_call_id for m in messages if m.role == "tool"}


def test_stop_while_a_tool_runs_ends_the_loop_and_answers_every_call(tmp_path, server, workspace):
    server.steps = [stream(calls(("c1", "execute_bash", {"command": "sleep 30"}),
                                 ("c2", "read_file", {"path": "main.py"})))]
    cancel = CancelToken()

    def ask(_call, _preview):
        threading.Timer(0.5, cancel.cancel).start()  # Stop, pressed while the command runs
        return ALLOW_ONCE

    with open_store(tmp_path / "data") as store:
        session, loop = chat(store, server, workspace, [], [])
        loop.ask = ask
        turn, _ = run(loop, cancel)
        assert turn.ended == "stopped" and len(server.requests) == 1
        first, second = turn.steps
        assert first.outcome.seconds < 10 and not first.outcome.ok
        assert second.result.content == "Error: not run: the user stopped the answer"
        assert [m.role for m in store.load_messages(session.chat_id)] == ["user", "assistant", "tool", "tool"]


def test_tools_too_large_for_the_window_are_not_sent(tmp_path, server, workspace):
    with open_store(tmp_path / "data") as store:
        session, loop = chat(store, server, workspace, [], [])
        store.update_chat_settings(session.chat_id, session.settings.model_copy(update={"context_window": 600,
                                                                                          "reserve_output": 64}))
        session.build_engine(estimate=False)
        with pytest.raises(ToolsTooLarge, match=r"the definitions of 6 tools take [\d,]+ tokens, more than half"):
            run(loop)
        assert server.requests == [] and session.tools == [] and session.snapshot().usage.by_kind["tools"] == 0


@pytest.mark.parametrize("answer_given, made", [("n", False), ("y", True)])
def test_the_terminal_chat_asks_y_n_and_prints_each_step(tmp_path, server, workspace, answer_given, made):
    from precis.core.cli.chat import TurnOptions, terminal_chat

    server.steps = [stream(calls(("c1", "execute_bash", {"command": "echo hi > note.txt"}))),
                    stream(answer("Done, as far as I was let."))]
    options = TurnOptions(temperature=0.0, context_tokens=8192, data_dir=str(tmp_path / "data"),
                          workspace=str(workspace))
    out = io.StringIO()
    provider = OpenAICompatProvider(server.base_url, "test-model", "sk-test")
    with typed_at_a_terminal(f"Save a note.\n{answer_given}\n") as stdin:  # asked only at a terminal
        assert terminal_chat(provider, options, stdin, out, out) == 0
    text = out.getvalue()
    assert f"[The model wants to run execute_bash, in {workspace}.]\n$ echo hi > note.txt\n(in {workspace})\nAllow it?" in text
    assert (workspace / "note.txt").exists() == made
    step = next(line for line in text.splitlines() if "[✓ execute_bash" in line or "[❌ execute_bash" in line)
    assert ("✓" in step) == made and step.endswith(" s")
    assert "Done, as far as I was let." in text


def test_the_terminal_asks_in_the_consent_cards_words(tmp_path, server, workspace):
    """It said "wants to run create_file" of a call replacing a file, where the window's card said so."""
    from precis.core.cli.chat import TurnOptions, terminal_chat

    server.steps = [stream(calls(("c1", "create_file", {"path": "main.py", "content": "print(1)\nprint(2)\n"}),
                                 ("c2", "create_file", {"path": "new.py", "content": "print(3)\n"}))),
                    stream(answer("Written."))]
    options = TurnOptions(temperature=0.0, context_tokens=8192, data_dir=str(tmp_path / "data"),
                          workspace=str(workspace))
    out = io.StringIO()
    provider = OpenAICompatProvider(server.base_url, "test-model", "sk-test")
    with typed_at_a_terminal("Rewrite main.py and add new.py.\nn\nn\n") as stdin:
        assert terminal_chat(provider, options, stdin, out, out) == 0
    asked = [line for line in out.getvalue().splitlines() if "wants to" in line]
    assert asked == [f"[The model wants to replace main.py (2 lines), in {workspace}.]",
                     f"[The model wants to create new.py (1 line), in {workspace}.]"]


def test_use_makes_the_first_reply_call_the_tool_named(tmp_path, server, workspace):
    server.steps = [stream(calls(("c1", "read_file", {"path": "main.py"}))), stream(answer("It prints the folder."))]
    with open_store(tmp_path / "data") as store:
        _session, loop = chat(store, server, workspace, [], [])
        with pytest.raises(ValueError, match="there is no tool called 'read_files' here; the tools are: read_file"):
            loop.answer(cancel=CancelToken(), on_text=lambda _p, _piece: None, force="read_files")
        assert server.requests == []
        turn = loop.answer(cancel=CancelToken(), on_text=lambda _p, _piece: None, force="read_file")
    first, second = (body for _time, _path, body in server.requests)
    assert first["tool_choice"] == "required" and [t["function"]["name"] for t in first["tools"]] == ["read_file"]
    assert second["tool_choice"] == "auto" and len(second["tools"]) > 1  # the model answers with what the tool gave, as it sees fit
    assert [s.call.name for s in turn.steps] == ["read_file"] and turn.ended == ""


def test_a_forced_reply_without_the_call_is_said(tmp_path, server, workspace):
    # A server that does not hold the model to the call (llama.cpp lets text come first: docs/model.md).
    server.steps = [stream(answer("I would rather just answer."))]
    with open_store(tmp_path / "data") as store:
        _session, loop = chat(store, server, workspace, [], [])
        turn = loop.answer(cancel=CancelToken(), on_text=lambda _p, _piece: None, force="read_file")
    assert turn.steps == [] and turn.ended == "the model answered without calling read_file, which /use asked for"


@pytest.mark.model
def test_the_embedded_model_told_to_use_a_tool_reads_the_file_and_answers(tmp_path, workspace, local_provider):
    from precis.core.cli.chat import TurnOptions, terminal_chat

    options = TurnOptions(temperature=0.0, max_tokens=48, data_dir=str(tmp_path / "data"), workspace=str(workspace))
    out = io.StringIO()
    assert terminal_chat(local_provider, options, io.StringIO("/use read_file What is in main.py?\n"), out,
                         out) == 0  # piped: the step on stderr
    text = out.getvalue()
    assert "[✓ read_file" in text or "[❌ read_file" in text  # the call ran, its one line printed
    with open_store(tmp_path / "data") as store:
        [chat_info] = store.list_chats()
        messages = store.load_messages(chat_info.id)
    assert [m.role for m in messages][:3] == ["user", "assistant", "tool"]
    assert messages[1].tool_calls[0].name == "read_file" and isinstance(messages[1].tool_calls[0].arguments["path"], str)
    assert messages[-1].role == "assistant" and not messages[-1].tool_calls  # then it answered


def test_parallel_calls_run_up_to_the_limit_and_the_rest_are_answered(tmp_path, server, workspace):
    server.steps = [stream(calls(*((f"c{n}", "read_file", {"path": "main.py"}) for n in range(3))))]
    with open_store(tmp_path / "data") as store:
        _session, loop = chat(store, server, workspace, [], [], max_steps=2)
        turn, _ = run(loop)
    assert [s.outcome.ok for s in turn.steps] == [True, True, False] and turn.ended.startswith("the step limit")
    assert len(server.requests) == 1


def raw_call(call_id: str, name: str, arguments: str) -> list[str]:
    """A reply making one call whose arguments are this text, JSON or not."""
    return [call_delta(0, call_id=call_id, name=name, arguments=arguments), CALLS_FINISH, "data: [DONE]"]


def test_a_call_that_cannot_run_is_answered_with_its_error_without_asking(tmp_path, server, workspace):
    outside = tmp_path / "outside.py"
    server.steps = [
        stream(raw_call("c1", "create_file", '{"path": "note.txt", "content": ')),  # cut off: not JSON
        stream(calls(("c2", "execute_bash", {"command": 3}))),  # not the schema's type
        stream(calls(("c3", "create_file", {"path": str(outside), "content": "x"}))),  # outside the folder
        stream(calls(("c4", "edit_file", {"path": "main.py", "old_text": "absent", "new_text": "x"}))),
        stream(calls(("c5", "delete_file", {"path": "main.py"}))),  # no such tool
        stream(calls(("c6", "execute_bash", {"command": "echo ran > ran.txt"}))),  # this one can run: it asks
        stream(answer("I could not do it.")),
    ]
    asked: list = []
    with open_store(tmp_path / "data") as store:
        _session, loop = chat(store, server, workspace, asked, [DENY])
        turn, _ = run(loop)
    assert [name for name, _preview in asked] == ["execute_bash"]  # only the call that could run was asked about
    assert [(s.call.name, s.asked, s.outcome.ok) for s in turn.steps] == [
        ("create_file", False, False), ("execute_bash", False, False), ("create_file", False, False),
        ("edit_file", False, False), ("delete_file", False, False), ("execute_bash", True, False)]
    errors = [s.result.content for s in turn.steps[:5]]
    assert errors[0].startswith("Error: the arguments for create_file were not valid JSON")
    assert errors[1].startswith("Error: bad arguments for execute_bash: command: 3 is not of type 'string'")
    assert errors[2] == f"Error: create_file: {outside} is outside the workspace folder {workspace} (paths, and the " \
                        "symbolic links in them, must stay inside it)"
    assert "old_text was not found in main.py" in errors[3]
    assert errors[4].startswith("Error: there is no tool called 'delete_file'")
    # Each error went back to the model as its call's result, and nothing was written.
    assert [body["messages"][-1]["content"] for _t, _p, body in server.requests[1:6]] == errors
    assert not outside.exists() and not (workspace / "note.txt").exists() and not (workspace / "ran.txt").exists()


def test_the_terminal_chat_does_not_ask_about_a_call_outside_the_workspace(tmp_path, server, workspace):
    from precis.core.cli.chat import TurnOptions, terminal_chat

    outside = tmp_path / "elsewhere.py"
    server.steps = [stream(calls(("c1", "create_file", {"path": str(outside), "content": "x"}))),
                    stream(answer("That folder is not mine."))]
    options = TurnOptions(context_tokens=8192, data_dir=str(tmp_path / "data"), workspace=str(workspace))
    out = io.StringIO()
    assert terminal_chat(OpenAICompatProvider(server.base_url, "test-model", "sk-test"), options,
                         io.StringIO("Write elsewhere.py.\n/quit\n"), out, out) == 0  # a question: on stderr
    text = out.getvalue()
    assert "wants to" not in text and "That folder is not mine." in text
    assert f"{outside} is outside the workspace folder" in server.requests[1][2]["messages"][-1]["content"]
    assert not outside.exists()


def test_the_workspace_given_to_precis_chat_stays_with_the_chat(tmp_path, server, workspace, monkeypatch):
    """`precis chat --workspace DIR`, then `precis chat --chat ID` without it: the model still has DIR's tools, and
    /run and /grep work there, as a window's chat with a workspace folder does (Settings → This chat)."""
    from precis.core.cli.chat import TurnOptions, terminal_chat

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(workspace.parent)  # given relative, as typed in a shell; kept whole
    data = str(tmp_path / "data")
    provider = OpenAICompatProvider(server.base_url, "test-model", "sk-test")
    server.steps = [stream(answer("Noted."))]
    first = TurnOptions(context_tokens=8192, data_dir=data, workspace=workspace.name)
    assert terminal_chat(provider, first, io.StringIO("Hello.\n"), io.StringIO(), io.StringIO()) == 0
    with open_store(data) as store:
        [kept] = store.list_chats()
        assert store.get_chat(kept.id).settings.workspace == str(workspace)  # as the window's settings hold it
    monkeypatch.chdir(elsewhere)
    server.steps = [stream(calls(("c1", "read_file", {"path": "main.py"}))), stream(answer("It prints the folder."))]
    out = io.StringIO()
    again = TurnOptions(context_tokens=8192, data_dir=data, chat=kept.id)
    assert terminal_chat(provider, again, io.StringIO("/run pwd\n/grep getcwd\nWhat does main.py do?\n"), out,
                         io.StringIO()) == 0
    text = out.getvalue()
    assert f"{workspace}\n[exit code: 0]" in text  # /run ran in the chat's folder, not where precis was started
    assert "main.py:2: print(os.getcwd())" in text
    assert {t["function"]["name"] for t in server.requests[1][2]["tools"]} >= {"read_file", "execute_bash"}
    assert "print(os.getcwd())" in server.requests[2][2]["messages"][-1]["content"]  # read_file ran in it too


def test_a_workspace_that_is_not_there_is_refused_before_any_chat_is_made(tmp_path, server):
    from precis.core.cli.chat import TurnOptions, terminal_chat

    options = TurnOptions(data_dir=str(tmp_path / "data"), workspace=str(tmp_path / "gone"))
    with pytest.raises(ValueError, match=f"--workspace: there is no folder {tmp_path / 'gone'}"):
        terminal_chat(OpenAICompatProvider(server.base_url, "m", "sk-test"), options, io.StringIO("Hi.\n"),
                      io.StringIO(), io.StringIO())
    with open_store(tmp_path / "data") as store:
        assert store.list_chats() == []
