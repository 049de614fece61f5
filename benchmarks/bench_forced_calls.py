"""Forced tool calls (`/use TOOL MESSAGE`) on the embedded model: the share whose arguments parse and validate against
the tool's own input schema, over the workspace tools and the tools of mcp-server-time and mcp-server-git (when they
are installed beside this Python), each asked for with a message that fits it, as the chat asks (all of a source's
tools offered, the chat's reply limit and temperature).

Run: python benchmarks/bench_forced_calls.py [--runs 5] [--max-tokens 512] [--temperature 0.7] [--tools a,b]
Prints one line per call (valid or why not, tokens written) and the share per tool and overall. Validity is judged
here with jsonschema against the schema the tool declares, not with the grammar the provider generates to; "apt"
marks valid arguments that mention what the message named (the file, the time zone, the repository), a rough gauge
of whether the model took the message in.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import jsonschema

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precis.core.model.messages import Message  # noqa: E402
from precis.core.model.tools import ToolSpec  # noqa: E402
from precis.core.providers.local import LocalProvider  # noqa: E402
from precis.core.tools.editing import EDITING_TOOLS  # noqa: E402
from precis.core.tools.mcp_config import ServerConfig  # noqa: E402
from precis.core.tools.mcp_servers import RUNNING, McpServers  # noqa: E402
from precis.core.tools.workspace import WORKSPACE_TOOLS  # noqa: E402

# Each tool: the message asking for it, and what its arguments should mention if the model took the message in
# (None: nothing in particular).
ASKS = {
    "read_file": ("What does main.py do?", "main.py"),
    "list_files": ("What files are in this project?", None),
    "search_files": ("Where is os.getcwd used?", "getcwd"),
    "execute_bash": ("Run the tests with pytest.", "pytest"),
    "create_file": ("Write a hello world script to hello.py.", "hello.py"),
    "edit_file": ("In main.py, change print to logging.info.", "main.py"),
    "get_current_time": ("What time is it in New York?", "New"),
    "convert_time": ("What is 14:00 in Paris in Tokyo time?", "Tokyo"),
    "git_status": ("What changed in the repository in /tmp/repo?", "/tmp/repo"),
    "git_log": ("Show the last commits of the repository in /tmp/repo.", "/tmp/repo"),
    "git_create_branch": ("Make a branch called feature in /tmp/repo.", "feature"),
    "git_add": ("Stage main.py in /tmp/repo.", "main.py"),
    "git_commit": ("Commit the staged changes in /tmp/repo with the message 'Fix the tests'.", "Fix the tests"),
    "git_branch": ("List the local branches of /tmp/repo.", "/tmp/repo"),
}
BIN = Path(sys.executable).parent


def mcp_tools() -> list[list[ToolSpec]]:
    """Each installed server's tools (one list per server: a chat offers a server's tools together)."""
    configs = [ServerConfig(name, command=str(BIN / command))
               for name, command in (("time", "mcp-server-time"), ("git", "mcp-server-git"))
               if (BIN / command).exists()]
    with McpServers(configs) as servers:
        servers.wait_started(60)
        return [list(status.tools) for status in servers.statuses() if status.state == RUNNING]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="calls per tool")
    parser.add_argument("--max-tokens", type=int, default=512, help="the reply's token limit (the chat's default)")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--tools", help="only these tools, comma-separated")
    args = parser.parse_args()
    groups = [[*WORKSPACE_TOOLS, *EDITING_TOOLS], *mcp_tools()]
    wanted = set(args.tools.split(",")) if args.tools else set(ASKS)
    provider = LocalProvider()
    provider.load()
    valid_calls = total_calls = apt_calls = apt_total = 0
    per_tool: list[str] = []
    tokens_written: list[int] = []
    for offered in groups:
        for spec in offered:
            if spec.name not in ASKS or spec.name not in wanted:
                continue
            valid = 0
            ask, mention = ASKS[spec.name]
            for _ in range(args.runs):
                started = time.monotonic()
                final = list(provider.stream_chat([Message("user", ask)], max_tokens=args.max_tokens,
                                                  temperature=args.temperature, tools=offered,
                                                  tool_choice=spec.name))[-1]
                arguments = final.tool_calls[0].arguments if final.tool_calls else None
                problem = ""
                if arguments is None:
                    problem = "no call"
                elif "_unparsed" in arguments:
                    problem = f"not JSON ({final.finish_reason})"
                else:
                    try:
                        jsonschema.validate(arguments, spec.parameters)
                    except jsonschema.ValidationError as exc:
                        problem = exc.message[:80]
                written = final.usage.completion_tokens if final.usage else 0
                tokens_written.append(written)
                valid += not problem
                shown = json.dumps(arguments, ensure_ascii=False)[:100]
                apt = mention is not None and not problem and mention in json.dumps(arguments)
                apt_calls += apt
                apt_total += mention is not None
                print(f"{spec.name:18} {'valid' if not problem else 'BAD  '}{' apt' if apt else '    '} {written:4} tokens "
                      f"{time.monotonic() - started:5.1f} s  {shown}  {problem}", flush=True)
            per_tool.append(f"{spec.name} {valid}/{args.runs}")
            valid_calls += valid
            total_calls += args.runs
    print("per tool: " + ", ".join(per_tool))
    print(f"valid arguments: {valid_calls}/{total_calls} ({100 * valid_calls / max(1, total_calls):.0f}%); tokens "
          f"written: median {statistics.median(tokens_written or [0]):.0f}, most {max(tokens_written or [0])} "
          f"(limit {args.max_tokens})")
    print(f"valid and mentioning what the message asked for: {apt_calls}/{apt_total} "
          f"({100 * apt_calls / max(1, apt_total):.0f}%)")


if __name__ == "__main__":
    main()
