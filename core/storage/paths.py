"""Where Precis keeps its data: `--data-dir`, else PRECIS_HOME, else the platform's user data folder."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir

ENV_VAR = "PRECIS_HOME"
DB_NAME = "precis.db"  # the store's SQLite file in the data folder


def data_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """The data folder, created if missing. `override` is the `--data-dir` option."""
    if override:
        path = Path(override)
    elif os.environ.get(ENV_VAR):
        path = Path(os.environ[ENV_VAR])
    else:
        path = Path(user_data_dir("precis", appauthor=False))
    # Absolute from here on: SQLite URIs need one, and a later chdir must not move the store.
    path = path.expanduser().resolve()
    # Yours alone when Precis makes it (the chats in it are kept as written, keys pasted into them too); a folder
    # that is already there keeps the mode it has.
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path
