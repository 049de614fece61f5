"""Commands on stored chats: import, chats, export, context, search."""

from __future__ import annotations

import logging
import sys
import textwrap

import click
from pydantic import ValidationError
from sqlalchemy.exc import SQLAlchemyError

from ..context.budget import over_budget
from ..context.engine import ContextEngine
from ..model.counted import counted
from ..model.records import local_time
from ..providers.base import Provider, ProviderError
from ..storage.chats import chosen_provider, counter_for, restore_engine, save_token_counts
from ..storage.exporters import EXPORT_FORMATS, export_chat, redacted_words, write_export
from ..storage.importers import FORMATS, ImportFailed, import_file
from ..storage.message_table import search_words
from ..storage.store import ChatNotFound, MessageNotFound, Store, StoreError
from .group import cli, data_dir_option
from .opening import open_cli_store
from .terminal import terminal_width

log = logging.getLogger("precis.cli")

DEFAULT_WINDOW = 8192
SEARCH_LIMIT = 10_000  # most hits one search lists (SQLite's integers end at 2**63 - 1)
BAR_WIDTH = 40  # the context's bars at their widest; narrower to fit a narrow terminal, down to NARROWEST_BAR
NARROWEST_BAR = 10


# Exit codes, the same for every command: 1 when the store fails, 2 when the input is bad.
STORE_FAILED = 1
BAD_INPUT = 2


def exit_code(error: object) -> int:
    """A chat or message named on the command line that does not exist is bad input; other store errors are not."""
    return BAD_INPUT if isinstance(error, (ChatNotFound, MessageNotFound)) else STORE_FAILED


def unicode_text(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A click callback for text that is stored, searched or looked up: bytes that are not UTF-8 (Python reads them
    from the command line as lone surrogates, which no file or database can hold) are bad input, named."""
    for place, char in enumerate(value or ""):
        if "\udc80" <= char <= "\udcff":  # the byte os.fsdecode could not read
            raise click.BadParameter(f"not valid UTF-8: the byte 0x{ord(char) - 0xdc00:02x} at character "
                                     f"{place + 1} is not a character")
    return value


def known_model(store: Store) -> Provider | None:
    """The chats' model (Settings → Provider), or None where it cannot be made here (a hosted model without its
    key): then counts are estimates."""
    try:
        return chosen_provider(store)
    except (ProviderError, ValueError) as exc:
        log.warning("token counts are estimated: %s", exc)
        return None


def chat_engine(store: Store, chat_id: str, provider: Provider | None, **restore) -> ContextEngine:
    """CHAT's engine counted as the window counts it: with `provider`'s own vocabulary where it is at hand, else
    estimated (the usage says which)."""
    engine, _ = restore_engine(store, chat_id, default_window=DEFAULT_WINDOW, counter=counter_for(provider, store),
                               **restore)
    return engine


def _fail(command: str, message: object, code: int | None = None) -> int:
    print(f"precis {command}: {message}", file=sys.stderr)
    return exit_code(message) if code is None else code


@cli.command("import", short_help="Import a chat file; print the new chat's id, and what it holds.")
@click.argument("file")
@click.option("--format", "format_", type=click.Choice(FORMATS), default="auto", show_default=True)
@click.option("--title", callback=unicode_text, help="the chat's title (default: from the file)")
@data_dir_option
def import_command(file: str, format_: str, title: str | None, data_dir: str | None) -> int:
    """Import a chat file. The new chat's id is printed alone on standard output, for scripts; its title, how
    many messages and summaries it holds, and anything changed to read the file go to standard error."""
    try:
        with open_cli_store(data_dir) as store:
            result = import_file(store, file, format_, title)
    except ImportFailed as exc:
        return _fail("import", exc, BAD_INPUT)
    except OSError as exc:  # 'cannot read FILE: why'
        return _fail("import", exc, BAD_INPUT)
    except StoreError as exc:
        return _fail("import", exc)
    print(f"precis import: imported {result.described()}", file=sys.stderr)
    if result.notice():
        print(f"precis import: {result.notice()}", file=sys.stderr)
    print("\n".join(result.chat_ids or (result.chat_id,)))  # an account export's: one chat a line
    return 0


@cli.command()
@data_dir_option
def chats(data_dir: str | None) -> int:
    """List stored chats."""
    try:
        with open_cli_store(data_dir, newer_read_only=True) as store:  # a newer Precis's too: read, never written
            stored = store.list_chats()
    except StoreError as exc:
        return _fail("chats", exc)
    if not stored:
        print("no chats yet (start one in the window, or `precis import FILE`)")
    for chat in stored:
        print(f"{chat.id}  {local_time(chat.updated_at)}  {chat.message_count:>6} msgs  {chat.title}")
    return 0


@cli.command(short_help="Write CHAT to a file: Markdown, OpenAI JSON or JSONL.")
@click.argument("chat", callback=unicode_text)
@click.option("--format", "format_", type=click.Choice(EXPORT_FORMATS), default="jsonl", show_default=True)
@click.option("-o", "--output", help="file to write (default: standard output)")
@data_dir_option
def export(chat: str, format_: str, output: str | None, data_dir: str | None) -> int:
    """Write CHAT (its id, a unique prefix of it, or its exact title) as interchange JSONL, OpenAI chat JSON or Markdown."""
    try:
        with open_cli_store(data_dir, newer_read_only=True) as store:
            exported = export_chat(store, store.find_chat(chat).id, format_)
    except (StoreError, SQLAlchemyError, ValidationError) as exc:  # a newer Precis's rows this one cannot read
        return _fail("export", exc)
    if output:
        try:
            write_export(exported.pieces, output)
        except OSError as exc:
            return _fail("export", exc)
    else:
        sys.stdout.writelines(exported.pieces)
    if exported.redacted:
        print(f"precis export: {redacted_words(exported.redacted)}", file=sys.stderr)
    return 0


def _bar(share: float, width: int) -> str:
    filled = min(width, round(share * width))
    return "#" * filled + "." * (width - filled)


@cli.command(short_help="What the model sees of CHAT, by kind, against its window.")
@click.argument("chat", callback=unicode_text)
@data_dir_option
def context(chat: str, data_dir: str | None) -> int:
    """What the model sees of CHAT (id, unique prefix or title): window use by kind, the summary chain."""
    try:
        with open_cli_store(data_dir) as store:
            found = store.find_chat(chat)
            engine = chat_engine(store, found.id, known_model(store))
            lines = context_lines(engine, terminal_width())
            if not store.read_only:  # a read-only store is shown, not cached into
                save_token_counts(store, found.id, engine)
    except (StoreError, ValueError) as exc:
        return _fail("context", exc)
    print(f"{found.title}  ({found.id})")
    print("\n".join(lines))
    return 0


def context_lines(engine: ContextEngine, width: int) -> list[str]:
    """The context window's use by kind against its limit, and the summary chain: `precis context` and the terminal
    chat's /context, within `width` columns (the terminal's): the text wrapped, the bars as wide as the room left."""
    usage = engine.usage()
    note = over_budget(engine, usage)
    counting = "exact" if usage.exact else "estimated"
    lines = textwrap.wrap(f"context: {usage.total:,} / {usage.available:,} tokens ({usage.ratio:.0%}, {counting}); "
                          f"window {usage.window:,}, {usage.reserve_output:,} reserved for the reply", width,
                          subsequent_indent="  ")
    labels = {"system": "system prompt", "tools": "tool definitions", "summaries": "summaries", "recalled": "recalled",
              "messages": "messages", "tool_outputs": "tool outputs"}
    label_width = max(map(len, labels.values()))
    count_width = max(len(f"{usage.by_kind.get(kind, 0):,}") for kind in labels)
    # Each kind's line: two spaces, its label, two spaces, its count, two spaces, then the bar in brackets.
    bar_width = max(NARROWEST_BAR, min(BAR_WIDTH, width - (2 + label_width + 2 + count_width + 2) - 2))
    lines.append(f"  [{_bar(usage.ratio, bar_width)}]")
    for said in note.lines() if note is not None else ():
        lines += textwrap.wrap(said, width, initial_indent="  ", subsequent_indent="    ")
    for kind, label in labels.items():
        tokens = usage.by_kind.get(kind, 0)
        lines.append(f"  {label:<{label_width}}  {tokens:>{count_width},}  [{_bar(tokens / usage.available, bar_width)}]")
    chain = engine.chain()
    lines.append(f"summary chain: {len(chain) or 'none'}")
    for record in chain:
        covered = engine.archive.covered_count(record)
        fallback = f", {record.fallback}" if record.fallback_used else ""
        # As `precis history` says it: a fold is a fold, not its newest summary's mode.
        lines += textwrap.wrap(f"{record.depth}. {local_time(record.created_at)}  {counted(covered, 'message')}  "
                               f"{record.tokens_before:,} → {record.tokens_after:,} tokens  {record.kind}{fallback}  "
                               f"({record.trigger})", width, initial_indent="  ", subsequent_indent="     ")
        if record.trail_coverage:
            lines += textwrap.wrap(f"trail coverage: {record.trail_coverage.describe()}", width,
                                   initial_indent="     ", subsequent_indent="       ")
    return lines


@cli.command()
@click.argument("text", callback=unicode_text)
@click.option("--limit", type=click.IntRange(min=1, max=SEARCH_LIMIT), default=20, show_default=True,
              help="most hits to list")
@data_dir_option
def search(text: str, limit: int, data_dir: str | None) -> int:
    """Search messages of all chats, archived ones included."""
    if not search_words(text):
        return _fail("search", f"no word to search for in {text!r}", BAD_INPUT)
    try:
        with open_cli_store(data_dir) as store:
            hits = store.search(text, limit)
    except StoreError as exc:
        return _fail("search", exc)
    if not hits:
        print(f"nothing found for {text!r}")
    for hit in hits:
        archived = "  (archived)" if hit.archived_by else ""
        snippet = " ".join(hit.snippet.split())
        print(f"{hit.chat_id[:12]}  {hit.chat_title[:30]:<30}  {hit.role:<9} {snippet}{archived}")
    return 0

