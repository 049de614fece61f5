"""The SQLite store, restoring a chat's engine, and file formats in and out."""
