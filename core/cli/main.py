"""The `precis` entry point: loads every area's commands into the click group, runs it, and returns the exit code."""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys

import click

from . import __path__ as CLI_PATH
from .group import cli
from .terminal import guarded_terminal

# Each module registers its commands on `cli` when imported: every module of this package, and the window's.
GUI_COMMANDS = "precis.gui.cli_gui"


def load_commands() -> click.Group:
    for module in pkgutil.iter_modules(CLI_PATH):
        importlib.import_module(f"{__package__}.{module.name}")
    importlib.import_module(GUI_COMMANDS)
    return cli


def start_local_model_early() -> None:
    """`precis` alone opens the window: start the configured local model's process now, ahead of the commands'
    imports (a second of CPU), so its model loads meanwhile; the window's provider then finds that process. The
    setting is read with sqlite3 alone because the store's own imports are what this runs ahead of; any trouble is
    left to the store to report."""
    import json
    import sqlite3
    from contextlib import closing

    from ..providers.registry import launch
    from ..settings import PROVIDER_KEY, ProviderChoice
    from ..storage.paths import DB_NAME, data_dir

    try:
        path = data_dir() / DB_NAME
        stored = None
        if path.exists():
            with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=1)) as db:
                row = db.execute("SELECT value FROM setting WHERE key = ?", (PROVIDER_KEY,)).fetchone()
            stored = json.loads(row[0]) if row else None
        launch(ProviderChoice.from_setting(stored))
    except (OSError, ValueError, sqlite3.Error):
        pass


def main(argv: list[str] | None = None) -> int:
    """Bad input (an unknown command or option, a missing argument) exits with 2, as click's usage errors do."""
    if (sys.argv[1:] if argv is None else argv) == []:
        start_local_model_early()
    try:
        group = load_commands()  # a second of imports, which Ctrl-C may well interrupt
        with guarded_terminal():
            return int(group.main(args=argv, prog_name="precis", standalone_mode=False) or 0)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (click.Abort, KeyboardInterrupt):  # Ctrl-C: click turns KeyboardInterrupt into Abort once it runs
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`precis search x | head`): not an error worth a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
