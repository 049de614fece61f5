"""Summaries of a stored chat from the command line: summarize, undo-summary, history (the documents' /summarize
and /history --full outside the window). Each change is saved as the window saves it (attach_engine)."""

from __future__ import annotations

import click

from ..context.engine import IntegrityError, NothingToSummarize, NothingToUndo
from ..model.messages import Message
from ..model.records import SummaryMode, SummaryRecord, fold_description, local_time
from ..providers.base import ProviderError
from ..providers.registry import make_provider
from ..storage.chats import effective_policy, restore_engine, summarizer_for
from ..storage.store import StoreError, attach_engine, open_store
from ..summary.summarizers import make_summarizer
from .group import cli, data_dir_option
from .store import BAD_INPUT, DEFAULT_WINDOW, _fail, message_ref, unicode_text

SNIPPET_CHARS = 70


def _snippet(message: Message) -> str:
    text = " ".join(message.content.split()) or f"({message.role} tool call)"
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS - 1] + "…"


def _leaves(record: SummaryRecord, by_record: dict[str, SummaryRecord]) -> list[str]:
    """The ids of the messages a record stands for: its own, and those of the summaries it folded."""
    ids = list(record.covered_ids)
    for child in record.merged_ids:
        if child in by_record:
            ids += _leaves(by_record[child], by_record)
    return ids


def _range(covered: list[str], position: dict[str, int]) -> str:
    places = sorted(position[i] for i in covered if i in position)
    if not places:
        return "no messages"
    return f"messages {places[0]}-{places[-1]}" if len(places) > 1 else f"message {places[0]}"


def _how(record: SummaryRecord, by_record: dict[str, SummaryRecord]) -> str:
    how = (fold_description([by_record[c].kind for c in record.merged_ids if c in by_record]) if record.merged_ids
           else record.mode) + (f" ({record.fallback})" if record.fallback_used else "")
    how += f", written by {record.writer}"
    cost = f", summarizer used {record.summarizer_tokens:,} tokens" if record.summarizer_tokens else ""
    asked = f", instructions: {record.instructions}" if record.instructions else ""
    return f"{how}, {record.trigger}, {record.tokens:,} tokens long{cost}{asked}"


@cli.command()
@click.argument("chat", callback=unicode_text)
@click.option("--instructions", callback=unicode_text, help="what the summary should keep or stress")
@click.option("--up-to", "up_to", metavar="MESSAGE", callback=unicode_text,
              help="summarize only up to and including this message: its id, or its number as `precis history` "
                   "counts them (1 is the first)")
@click.option("--mode", type=click.Choice(("rule", "llm", "hybrid")), default="rule", show_default=True,
              help="rule needs no model; llm and hybrid: the model and time limit Settings → Summarization name "
                   "(the embedded model, 6 s, by default)")
@data_dir_option
def summarize(chat: str, instructions: str | None, up_to: str | None, mode: SummaryMode, data_dir: str | None) -> int:
    """Summarize CHAT now (id, unique prefix or title), as /summarize does in the window."""
    try:
        with open_store(data_dir) as store:
            found = store.find_chat(chat)
            # Who writes it and its time limit as Settings → Summarization say for this chat (the window's rule);
            # the chat's model is the embedded one here.
            policy = effective_policy(store, found.settings).model_copy(update={"mode": mode})
            summarizer = summarizer_for(policy, make_provider("local")) if mode != "rule" else make_summarizer(mode)
            engine, _ = restore_engine(store, found.id, default_window=DEFAULT_WINDOW, summarizer=summarizer)
            attach_engine(store, found.id, engine)  # a failed save is raised from summarize_now
            record = engine.summarize_now(instructions, up_to=message_ref(engine.messages, up_to) if up_to is not None else None)
    except NothingToSummarize as exc:
        return _fail("summarize", exc, BAD_INPUT)
    except KeyError as exc:  # --up-to names no message of the chat
        return _fail("summarize", exc.args[0], BAD_INPUT)
    except (StoreError, ValueError, ProviderError, IntegrityError) as exc:
        return _fail("summarize", exc)
    print(f"{found.title}: {record.result().describe()}")  # never "saves nothing": such a summary is not kept
    print(record.contents())
    return 0


@cli.command("undo-summary")
@click.argument("chat", callback=unicode_text)
@data_dir_option
def undo_summary(chat: str, data_dir: str | None) -> int:
    """Undo CHAT's newest summary: its messages are sent to the model again, exactly as they were."""
    try:
        with open_store(data_dir) as store:
            found = store.find_chat(chat)
            engine, _ = restore_engine(store, found.id, default_window=DEFAULT_WINDOW)
            attach_engine(store, found.id, engine)  # a failed save is raised from undo_last
            record = engine.undo_last()
    except NothingToUndo as exc:
        return _fail("undo-summary", exc, BAD_INPUT)
    except (StoreError, ValueError, IntegrityError) as exc:
        return _fail("undo-summary", exc)
    # A fold archives no message itself: 'the summary of 0 messages' was undone, it said.
    print(f"{found.title}: undid the summary of {local_time(record.created_at)}: {record.undone_description()}")
    return 0


@cli.command()
@click.argument("chat", callback=unicode_text)
@click.option("--full", is_flag=True, help="also the first and last message of each range, and the summary text")
@data_dir_option
def history(chat: str, full: bool, data_dir: str | None) -> int:
    """Every summary of CHAT, oldest first: its range, size before and after, reduction, how it was made."""
    try:
        with open_store(data_dir) as store:
            found = store.find_chat(chat)
            messages = store.load_messages(found.id)
            records = store.load_records(found.id)
    except (StoreError, ValueError) as exc:
        return _fail("history", exc)
    print(f"{found.title}  ({found.id})")
    if not records:
        print("no summaries")
        return 0
    position = {m.id: n for n, m in enumerate(messages, start=1)}
    by_id = {m.id: m for m in messages}
    by_record = {r.id: r for r in records}
    for record in sorted(records, key=lambda r: r.created_at):
        status = "" if record.status == "active" else f"  [{record.status}]"
        leaves = _leaves(record, by_record)
        print(f"{record.depth}. {local_time(record.created_at)}  {_range(leaves, position)}  "
              f"{record.result(len(leaves)).describe()}  {_how(record, by_record)}{status}")
        if full:
            covered = [by_id[i] for i in sorted((i for i in leaves if i in by_id), key=position.__getitem__)]
            if covered:
                print(f"   first: {_snippet(covered[0])}")
                print(f"   last:  {_snippet(covered[-1])}")
            for line in record.text.splitlines():
                print(f"   | {line}")
    return 0
