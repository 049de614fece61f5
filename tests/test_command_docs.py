"""The command line as documented is what `precis` accepts: docs/command-line.md documents every command with every
option, every documented option exists with the documented choices, and
every documented form runs (its --help exits 0)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from precis.core.cli.main import load_commands

ROOT = Path(__file__).resolve().parents[1]
COMMAND_LINE_PAGE = ROOT / "docs" / "command-line.md"
# Given to every command, explained once on the page rather than with each command.
COMMON = {"--data-dir", "--help", "-h"}


def documented_forms(text: str) -> list[str]:
    """The `precis ...` forms written in the text."""
    forms = [form.replace("\\|", "|") for form in re.findall(r"`(precis(?: [^`]*)?)`", text)]
    # `precis COMMAND --help` stands for every command's --help.
    return [expanded for form in forms
            for expanded in ([form.replace("COMMAND", name) for name in load_commands().commands]
                             if " COMMAND" in form else [form])]


def command_names(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    """Every command by its name as typed, a group's subcommands included ("models get")."""
    names: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        names[prefix + name] = command
        if isinstance(command, click.Group):
            names.update(command_names(command, f"{prefix}{name} "))
    return names


def parse(form: str) -> tuple[click.Command, str, list[tuple[click.Parameter, str | None]], list[str]]:
    """(command, its name, [(option, value word)], positional words) of a documented form."""
    group = load_commands()
    words = form.replace("[", " ").replace("]", " ").split()[1:]
    command, name = group, "open"
    options: list[tuple[click.Parameter, str | None]] = []
    positionals: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-"):
            param = next((p for p in command.get_params(click.Context(command)) if word in p.opts), None)
            assert param is not None, f"{form!r}: {word} is not an option of `precis {name}`"
            value = None
            if not getattr(param, "is_flag", False):
                i += 1
                value = words[i]
            options.append((param, value))
        elif command is group and word in group.commands:
            command, name = group.commands[word], word
        elif isinstance(command, click.Group) and not positionals and word in command.commands:
            command, name = command.commands[word], f"{name} {word}"
        else:
            positionals.append(word)
        i += 1
    if command is group:
        command = group.commands["open"]
    return command, name, options, positionals


PAGE_FORMS = documented_forms(COMMAND_LINE_PAGE.read_text(encoding="utf-8"))
FORMS = sorted(set(PAGE_FORMS))


def test_every_command_is_documented_with_every_option():
    group = load_commands()
    documented: dict[str, set[str]] = {}
    for form in PAGE_FORMS:
        _command, name, options, _positionals = parse(form)
        documented.setdefault(name, set()).update(param.opts[0] for param, _value in options)
    commands = command_names(group)
    assert set(documented) == set(commands), "docs/command-line.md's commands and `precis --help` differ"
    for name, command in commands.items():
        accepted = {p.opts[0] for p in command.params if isinstance(p, click.Option)} - COMMON
        assert accepted <= documented[name], f"`precis {name}` options missing from docs/command-line.md: " \
                                             f"{sorted(accepted - documented[name])}"


@pytest.mark.parametrize("form", FORMS)
def test_a_documented_form_matches_the_command(form):
    command, name, options, positionals = parse(form)
    for param, value in options:
        if isinstance(param.type, click.Choice) and value is not None and "|" in value:
            assert value.split("|") == list(param.type.choices), f"{form!r}: {param.opts[0]} choices"
        elif isinstance(param.type, click.Choice):
            assert value in param.type.choices, f"{form!r}: {value} is not a choice of {param.opts[0]}"
    arguments = [p.human_readable_name for p in command.params if isinstance(p, click.Argument)]
    assert positionals == arguments[:len(positionals)], f"{form!r}: `precis {name}` takes {arguments}"
    required = [p.human_readable_name for p in command.params if isinstance(p, click.Argument) and p.required]
    if not any("--help" in param.opts for param, _value in options):  # opts may be ["-h", "--help"]
        assert len(positionals) >= len(required), f"{form!r} leaves out {required[len(positionals):]}"


@pytest.mark.parametrize("form", FORMS)
def test_a_documented_form_runs_with_help(form):
    words = [w.split("|")[0] for w in form.replace("[", " ").replace("]", " ").split()[1:]]
    result = CliRunner().invoke(load_commands(), [*words, "--help"], prog_name="precis")
    assert result.exit_code == 0, f"{form!r} --help: {result.output}"
    assert result.output.startswith("Usage: precis")


def test_the_list_of_commands_says_what_each_does_in_whole_words():
    """`precis --help` cut most commands' descriptions mid-sentence ("Send MESSAGE and stream the reply to
    stdout; without...") in an 80-column terminal."""
    listing = CliRunner().invoke(load_commands(), ["--help"], terminal_width=80).output
    lines = listing.split("Commands:\n", 1)[1].splitlines()
    assert len(lines) == len(load_commands().commands)
    assert not [line for line in lines if line.rstrip().endswith("...")]
