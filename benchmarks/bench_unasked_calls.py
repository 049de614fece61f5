"""Tool calls nobody asked for, on the embedded model: plain chat messages (greetings, facts, a haiku) that need no
tool, each sent with the workspace tools offered (as a chat with a workspace folder offers them: lean definitions,
tool choice auto), with mcp-server-time's tools beside them (`--mcp time`, when it is installed beside this Python)
and again with no tools. Counts the replies that are tool calls, and those that write call markup
as text, in each case.

Run: python benchmarks/bench_unasked_calls.py [--runs 2] [--max-tokens 512] [--temperature 0.7] [--conversation]
Prints one line per reply (a call and its arguments, or the reply's start) and the counts per case. A reply is
judged here by what the provider returned (a call on its last chunk) and by the text it streamed, not by the chat
code that decides what is offered.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precis.core.model.lean_tools import lean_spec  # noqa: E402
from precis.core.model.messages import Message  # noqa: E402
from precis.core.model.tools import ToolSpec  # noqa: E402
from precis.core.providers.base import DEFAULT_TEMPERATURE  # noqa: E402
from precis.core.providers.local import LocalProvider  # noqa: E402
from precis.core.tools.editing import EDITING_TOOLS  # noqa: E402
from precis.core.tools.mcp_config import ServerConfig  # noqa: E402
from precis.core.tools.mcp_servers import McpServers  # noqa: E402
from precis.core.tools.workspace import WORKSPACE_TOOLS  # noqa: E402

# Messages a user chats with; none needs a file, a search or a command.
PLAIN = [
    "Hi!",
    "Hello, how are you today?",
    "Good morning.",
    "Thanks, that was helpful.",
    "What is the capital of France?",
    "How many legs does a spider have?",
    "Who wrote Romeo and Juliet?",
    "What is 12 times 7?",
    "Why is the sky blue?",
    "What is photosynthesis?",
    "Write a haiku about autumn.",
    "Tell me a short joke.",
    "Write two sentences about the sea.",
    "Give me three names for a cat.",
    "Translate 'good night' into Spanish.",
    "What does a baker do?",
    "Suggest a healthy breakfast.",
    "What is the opposite of hot?",
    "Can you explain what a noun is?",
    "Say something nice about Mondays.",
]
# Call markup that reached the reply's text: the model began a call the provider could not read as one.
MARKUP = ("<tool_call>", "functions.", '"arguments"')


def time_tools() -> list[ToolSpec]:
    """mcp-server-time's tools, as the chat lists them (none when it is not installed)."""
    command = Path(sys.executable).parent / "mcp-server-time"
    if not command.exists():
        return []
    with McpServers([ServerConfig("time", command=str(command))]) as servers:
        servers.wait_started(60)
        return list(servers.status("time").tools)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="replies per message and case")
    parser.add_argument("--max-tokens", type=int, default=512, help="the reply's token limit (the chat's default)")
    parser.add_argument("--temperature", type=float, default=DEFAULT_TEMPERATURE)
    parser.add_argument("--conversation", action="store_true",
                        help="send the messages one after another in one chat (each run a chat), the replies before "
                             "each in its prompt, instead of each as a chat's first message")
    args = parser.parse_args()
    workspace = [lean_spec(spec) for spec in (*WORKSPACE_TOOLS, *EDITING_TOOLS)]
    cases = [("workspace tools", workspace), ("no tools", [])]
    clock = time_tools()
    if clock:
        cases.insert(1, ("workspace+time", workspace + [lean_spec(spec) for spec in clock]))
    provider = LocalProvider()
    provider.load()
    totals = {}
    for case, offered in cases:
        calls = markup = replies = 0
        called: dict[str, int] = {}
        began = time.monotonic()
        for run in range(args.runs):
            history: list[Message] = []
            for text in PLAIN:
                history = [*history, Message("user", text)] if args.conversation else [Message("user", text)]
                final, written = None, []
                for chunk in provider.stream_chat(history, max_tokens=args.max_tokens, temperature=args.temperature,
                                                  tools=offered):
                    written.append(chunk.text)
                    final = chunk
                assert final is not None
                reply = "".join(written)
                history.append(Message("assistant", reply))  # a call's reply is kept as its text alone
                replies += 1
                marks = [mark for mark in MARKUP if mark in reply]
                if final.tool_calls:
                    calls += 1
                    for call in final.tool_calls:
                        called[call.name] = called.get(call.name, 0) + 1
                    shown = "CALL " + "; ".join(f"{c.name}({json.dumps(c.arguments)[:60]})" for c in final.tool_calls)
                elif marks:
                    markup += 1
                    shown = f"MARKUP {marks[0]!r} " + " ".join(reply.split())[:70]
                else:
                    shown = "text   " + " ".join(reply.split())[:80]
                print(f"{case:15} {run} {text[:34]:34} {shown}", flush=True)
        totals[case] = (calls, markup, replies, called, time.monotonic() - began)
    print(f"{'in one conversation' if args.conversation else 'each a first message'}, {args.runs} runs, "
          f"temperature {args.temperature:g}, replies of at most {args.max_tokens} tokens:")
    for case, (calls, markup, replies, called, seconds) in totals.items():
        tools_called = ", ".join(f"{name} {count}" for name, count in sorted(called.items(), key=lambda i: -i[1]))
        print(f"{case}: {calls}/{replies} replies were tool calls ({100 * calls / replies:.0f}%)"
              f"{f' [{tools_called}]' if tools_called else ''}, {markup} more wrote call markup as text; "
              f"{seconds:.0f} s")


if __name__ == "__main__":
    main()
