"""An MCP server made with the official SDK's own server (MCPServer) for the one fault no packaged server gives on
demand: a call still running when the server is killed. Its `wait` tool sleeps; it writes its process id to the
file named by its first argument, so the test can kill it mid-call.

    python slow_mcp_server.py PID_FILE [stdio | http PORT]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("slow")


@server.tool()
def wait(seconds: float) -> str:
    """Sleep for `seconds`, then say so."""
    time.sleep(seconds)
    return f"waited {seconds} s"


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(str(os.getpid()))
    if len(sys.argv) > 3 and sys.argv[2] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[3]))
    else:
        server.run()
