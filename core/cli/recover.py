"""`precis recover`: a damaged database replaced by what can still be read of it."""

from __future__ import annotations

import sys

from ..storage.errors import StoreError
from ..storage.paths import DB_NAME
from ..storage.paths import data_dir as resolve_data_dir
from ..storage.salvage import RECOVERED_CHAT_TITLE, recover
from .group import cli, data_dir_option
from .store import STORE_FAILED

# Each table's rows in words: (one, several).
TABLE_WORDS = {"chat": ("chat", "chats"), "setting": ("setting", "settings"), "message": ("message", "messages"),
               "summary": ("summary", "summaries"), "message_version": ("earlier version of a reply", "earlier versions of replies"),
               "prompt_setup": ("record of what was sent", "records of what was sent")}


def _count(n: int, words: tuple[str, str]) -> str:
    return f"{n:,} {words[0] if n == 1 else words[1]}"


@cli.command("recover", short_help="Replace a damaged database by what can still be read of it.")
@data_dir_option
def recover_command(data_dir: str | None) -> int:
    """Replace a damaged database (one Precis refuses to open, saying it is damaged) by the chats, messages and
    summaries that can still be read of it. The damaged file is kept beside it, renamed."""
    try:
        recovery = recover(resolve_data_dir(data_dir), DB_NAME)
    except (StoreError, OSError) as exc:
        print(f"precis recover: {exc}", file=sys.stderr)
        return STORE_FAILED
    kept = ", ".join(_count(recovery.kept[table], words) for table, words in TABLE_WORDS.items()
                     if recovery.kept.get(table))
    print(f"Recovered {kept or 'nothing'}.")
    unread = [f"{recovery.left_out[table]:,} in the {words[1]}" for table, words in TABLE_WORDS.items()
              if recovery.left_out.get(table)]
    if unread:
        print(f"Could not be read (damaged rows, or stretches of them): {'; '.join(unread)}.")
    if recovery.chats_remade:
        print(f"{_count(recovery.chats_remade, ('chat', 'chats'))} had lost their own record; their messages are kept "
              f"in chats titled {RECOVERED_CHAT_TITLE!r}.")
    print(f"The damaged file is kept as {recovery.damaged_copy}.")
    return 0
