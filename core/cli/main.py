"""The `precis` command. Each area registers its own subcommands; with no subcommand the window opens."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# Modules that define `register(subparsers)`; each adds its subcommands with a `func(args) -> int` default.
COMMAND_MODULES = (
    "precis.core.cli.compact",
    "precis.core.cli.chat",
    "precis.core.cli.store",
    "precis.gui.cli_gui",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="precis",
        description="A chat client that never runs out of context. With no command, opens the window.")
    parser.add_argument("--data-dir", help="where chats are stored (default: PRECIS_HOME or the user data folder)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["open", *(argv or sys.argv[1:])])
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`precis search x | head`): not an error worth a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
