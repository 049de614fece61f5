"""The chat's use cases, written once for the window and the terminal: reply, regenerate, summarize, undo, commands."""
