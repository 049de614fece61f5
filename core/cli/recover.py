"""`precis recover`: a damaged database replaced by what can still be read of it."""

from __future__ import annotations

import sys

from ..storage.errors import StoreError
from ..storage.paths import DB_NAME
from ..storage.paths import data_dir as resolve_data_dir
from ..storage.salvage import recover
from .group import cli, data_dir_option
from .store import STORE_FAILED


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
    print("\n".join(recovery.report()))
    return 0
