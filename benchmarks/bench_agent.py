"""The model using tools: what Precis itself adds to each step, how that grows over a long session, and how long an
MCP server takes from its start to its tools listed.

- Per step: a 200-step session at an 8k window through the chat core's loop (core/chat/tool_loop.py) on a real
  store, with real workspace tools (read_file of a 120-line file, so the outputs fill the window and the engine
  shrinks and summarizes between steps). The model is an in-process stand-in that calls read_file at once, so the
  time between two steps is the tool's own time plus Precis's (storing the call and the result, the engine, the
  prompt): printed is Precis's, the median of steps 1-20 and of 181-200, and their ratio. Goals: under 20 ms a step;
  step 200 no slower than step 20 (ratio at most 1.5); the prompt never over the budget.
- MCP: `mcp-server-time` (from the test extra) started through the SDK until its tools are listed, median of 5.

Run: python benchmarks/bench_agent.py [STEPS]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from precis.core.chat.session import ChatSession
from precis.core.chat.tool_loop import ALLOW_ONCE, Step, ToolLoop
from precis.core.model.messages import Message, ToolCall
from precis.core.providers.base import CancelToken, ChatChunk, Usage
from precis.core.settings import SUMMARIZATION_KEY
from precis.core.storage.store import open_store
from precis.core.tools.mcp_config import ServerConfig
from precis.core.tools.mcp_servers import McpServers
from precis.core.tools.toolbox import Toolbox
from precis.core.tools.workspace import Workspace

STEPS = 200
WINDOW = 8192
STEP_GOAL_MS = 20.0
GROWTH_GOAL = 1.5


class ReadingModel:
    """Calls read_file `steps` times, one call a reply, then answers: instant, so only Precis's time is left."""

    name = model = "reading stand-in"

    def __init__(self, steps: int) -> None:
        self.left = steps

    def context_window(self) -> int:
        return WINDOW

    def stream_chat(self, messages, **_options):
        if self.left == 0:
            yield ChatChunk(text="Read them all.")
            yield ChatChunk(done=True, usage=Usage(0, 0), finish_reason="stop")
            return
        self.left -= 1
        call = ToolCall(id=f"call-{self.left}", name="read_file", arguments={"path": f"module_{self.left % 7}.py"})
        yield ChatChunk(done=True, usage=Usage(0, 0), finish_reason="tool_calls", tool_calls=(call,))

    def count_tokens(self, text: str) -> None:
        return None

    def tokenizer_name(self) -> None:
        return None

    def list_models(self) -> list[str]:
        return [self.model]


def session_steps(steps: int) -> tuple[list[float], int, int, int]:
    """(Precis's milliseconds per step, the largest prompt seen, the budget, summaries made)."""
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "project"
        workspace.mkdir()
        for n in range(7):
            (workspace / f"module_{n}.py").write_text("".join(f"def handler_{n}_{i}(request):\n    return {i}\n"
                                                              for i in range(60)))
        with open_store(Path(folder) / "data") as store:
            store.set_setting(SUMMARIZATION_KEY, {"mode": "rule"})
            chat_id = store.create_chat("agent", settings={"context_window": WINDOW})
            session = ChatSession(store, chat_id, ReadingModel(steps))
            session.build_engine(estimate=False)
            session.add_messages([Message(role="user", content="Read every module and tell me what they do.")])
            loop = ToolLoop(session, Toolbox(Workspace(workspace)), lambda _call, _preview: ALLOW_ONCE,
                            max_steps=steps + 1)
            overheads: list[float] = []
            largest = 0
            last = time.perf_counter()

            def step(done: Step) -> None:
                nonlocal last, largest
                now = time.perf_counter()
                overheads.append((now - last - done.outcome.seconds) * 1000)
                largest = max(largest, session.engine.assemble().tokens)
                last = time.perf_counter()  # the check above is the benchmark's, not Precis's

            loop.answer(cancel=CancelToken(), on_text=lambda _placeholder, _piece: None, on_step=step)
            budget = session.engine.budget.available
            summaries = len(session.engine.records)
    return overheads, largest, budget, summaries


def mcp_start_seconds(runs: int = 5) -> list[float]:
    server = ServerConfig("time", command=str(Path(sys.executable).parent / "mcp-server-time"))
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        with McpServers([server]) as running:
            running.wait_started(60)
            times.append(time.perf_counter() - started)
    return times


def main(steps: int) -> None:
    overheads, largest, budget, summaries = session_steps(steps)
    early, late = statistics.median(overheads[:20]), statistics.median(overheads[-20:])
    print(f"{steps} tool steps at an {WINDOW:,}-token window ({summaries} summaries made on the way):")
    print(f"  Precis's time per step beyond the tool's: median {statistics.median(overheads):.1f} ms "
          f"(goal under {STEP_GOAL_MS:.0f} ms: {'met' if statistics.median(overheads) < STEP_GOAL_MS else 'NOT met'})")
    print(f"  steps 1-20: {early:.1f} ms, steps {steps - 19}-{steps}: {late:.1f} ms, ratio {late / early:.2f} "
          f"(goal at most {GROWTH_GOAL}: {'met' if late / early <= GROWTH_GOAL else 'NOT met'})")
    print(f"  the largest prompt: {largest:,} of {budget:,} tokens ({'never over' if largest <= budget else 'OVER'})")
    starts = mcp_start_seconds()
    print(f"mcp-server-time, start to tools listed: median {statistics.median(starts):.2f} s "
          f"(of {len(starts)}: {', '.join(f'{s:.2f}' for s in starts)})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else STEPS)
