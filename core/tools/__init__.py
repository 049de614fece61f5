"""The tools: the bounded /run and /grep the user types (bounded.py), and the tools the model calls: the workspace
folder's (workspace.py, editing.py), those of MCP servers (mcp_config.py, mcp_servers.py), and the toolbox over both
(toolbox.py) that the chat's loop asks for specs, previews and runs."""
