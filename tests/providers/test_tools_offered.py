"""Whether each message offers the model the chat's tools (ChatSettings.offer_tools), on the real embedded model:
by default the built-in SmolLM2-135M is not offered them (it calls none unasked, and their definitions doubled its
time a reply: benchmarks/bench_unasked_calls.py), the terminal says so where the tools are, one setting offers them,
and /use still calls one."""

from __future__ import annotations

import io

import pytest
from precis.core.chat.session import ChatSession
from precis.core.chat.tool_loop import ALLOW_ONCE, ToolLoop
from precis.core.cli.chat import TurnOptions, terminal_chat
from precis.core.cli.chat_tools import TOOLS_NOT_OFFERED
from precis.core.model.messages import Message
from precis.core.providers.base import CancelToken
from precis.core.storage.store import open_store
from precis.core.tools.toolbox import Toolbox
from precis.core.tools.workspace import Workspace

pytestmark = pytest.mark.model


def answered(store, local_provider, workspace, force: str | None = None, **settings) -> ChatSession:
    """A chat with the workspace's tools, its message "Hi!" answered by the embedded model through the loop."""
    chat_id = store.create_chat("hi", {"context_window": 4096, "reserve_output": 24, **settings})
    session = ChatSession(store, chat_id, local_provider)
    session.temperature = 0.0
    session.build_engine()
    session.add_messages([Message("user", "Hi!")])
    loop = ToolLoop(session, Toolbox(Workspace(str(workspace))), lambda _call, _preview: ALLOW_ONCE)
    loop.answer(cancel=CancelToken(), on_text=lambda _placeholder, _piece: None, force=force)
    return session


@pytest.mark.parametrize(("offer", "sent"), [({}, False), ({"offer_tools": "no"}, False),
                                             ({"offer_tools": "yes"}, True)])
def test_the_built_in_model_is_offered_the_tools_only_when_the_chat_says_so(tmp_path, workspace, local_provider,
                                                                            offer, sent):
    with open_store(tmp_path) as store:
        session = answered(store, local_provider, workspace, **offer)
        tool_tokens = session.built_engine.setup.tool_tokens  # counted in the prompt the reply was written from
        assert (tool_tokens > 0) == sent and bool(session.tools) == sent
        session.close()


def test_use_calls_its_tool_when_the_tools_are_not_offered(tmp_path, workspace, local_provider):
    with open_store(tmp_path) as store:
        session = answered(store, local_provider, workspace, force="list_files")
        messages = session.built_engine.messages
        assert messages[1].tool_calls[0].name == "list_files" and messages[2].role == "tool"
        assert messages[-1].role == "assistant" and session.tools == []  # then answered without them
        session.close()


@pytest.mark.parametrize("offer", [None, "yes"])
def test_the_terminal_chat_says_where_its_tools_are_that_the_model_is_not_offered_them(tmp_path, workspace,
                                                                                      local_provider, offer):
    options = TurnOptions(data_dir=str(tmp_path), workspace=str(workspace), offer_tools=offer)
    err = io.StringIO()
    assert terminal_chat(local_provider, options, io.StringIO(""), io.StringIO(), err) == 0
    said = " ".join(err.getvalue().split())
    assert (TOOLS_NOT_OFFERED in said) == (offer is None), said
