"""The `precis` click group. A command is one decorated function in the module of its area: `@cli.command()`."""

from __future__ import annotations

import click


class DefaultGroup(click.Group):
    """A group that runs its default command when none is named (`precis` and `precis --data-dir D` open the window).

    Like click-default-group, cut to what Precis needs: the default command takes no arguments, so an unknown
    name stays an error rather than being read as the default command's argument.
    """

    def __init__(self, *args, default: str, **kwargs):
        kwargs["invoke_without_command"] = True
        super().__init__(*args, **kwargs)
        self.default = default

    def invoke(self, ctx: click.Context):
        result = super().invoke(ctx)
        if ctx.invoked_subcommand is None:
            command = self.get_command(ctx, self.default)
            if command is None:  # the default names no command of the group: a mistake in Precis
                raise RuntimeError(f"the default command {self.default!r} is not a command of the group")
            with command.make_context(self.default, [], parent=ctx) as sub_ctx:
                return command.invoke(sub_ctx)
        return result


DATA_DIR_HELP = "where chats are stored (default: PRECIS_HOME or the user data folder)"


def _data_dir_or_the_groups(ctx: click.Context, _param, value: str | None) -> str | None:
    # Given after the subcommand it wins; otherwise the group's (`precis --data-dir D chats`).
    return value if value is not None else ctx.find_root().params.get("data_dir")


data_dir_option = click.option("--data-dir", callback=_data_dir_or_the_groups, help=DATA_DIR_HELP)
"""For commands that use the store: `--data-dir` also works after the subcommand; the command gets `data_dir`."""


@click.group(cls=DefaultGroup, default="open", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--data-dir", help=DATA_DIR_HELP)
def cli(data_dir: str | None) -> None:
    """A chat client that never runs out of context. With no command, opens the window."""
