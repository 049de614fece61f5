"""Summaries of a stored chat from the command line: summarize, undo-summary, history (the documents' /summarize
and /history --full outside the window). Each change is saved as the window saves it (attach_engine)."""

from __future__ import annotations

import click

from ..chat.history import history_lines, message_ref
from ..context.engine import IntegrityError, NothingToSummarize, NothingToUndo
from ..model.records import SummaryMode, local_time
from ..providers.base import ProviderError
from ..storage.chats import chosen_provider, effective_policy, summarizer_for
from ..storage.store import StoreError, attach_engine
from ..summary.summarizers import SummarizationFailed, make_summarizer
from .group import cli, data_dir_option
from .opening import open_cli_store
from .store import BAD_INPUT, _fail, chat_engine, known_model, unicode_text


@cli.command(short_help="Summarize CHAT now, as the inspector's button does.")
@click.argument("chat", callback=unicode_text)
@click.option("--instructions", callback=unicode_text, help="what the summary should keep or stress")
@click.option("--up-to", "up_to", metavar="MESSAGE", callback=unicode_text,
              help="summarize only up to and including this message: its id, or its number as `precis history` "
                   "counts them (1 is the first)")
@click.option("--mode", type=click.Choice(("rule", "llm", "hybrid")),
              help="how this summary is written: rule needs no model; llm and hybrid use the model and time limit "
                   "Settings → Summarization name. Default: the chat's own choice, as the window's Summarize now")
@data_dir_option
def summarize(chat: str, instructions: str | None, up_to: str | None, mode: SummaryMode | None,
              data_dir: str | None) -> int:
    """Summarize CHAT now (id, unique prefix or title), as /summarize does in the window."""
    try:
        with open_cli_store(data_dir) as store:
            found = store.find_chat(chat)
            # Who writes it, how and its time limit as Settings → Summarization say for this chat (the window's
            # rule); --mode for this summary only.
            policy = effective_policy(store, found.settings)
            mode = mode or policy.mode
            policy = policy.model_copy(update={"mode": mode})
            # The chats' model (Settings → Provider) writes llm summaries as in the window, and counts the prompt.
            model = chosen_provider(store) if mode != "rule" else known_model(store)
            summarizer = summarizer_for(policy, model) if model is not None else make_summarizer(mode)
            engine = chat_engine(store, found.id, model, summarizer=summarizer)
            attach_engine(store, found.id, engine)  # a failed save is raised from summarize_now
            up_to_id = message_ref(engine.messages, up_to) if up_to is not None else None
            record = engine.summarize_now(instructions, up_to=up_to_id)
    except NothingToSummarize as exc:
        return _fail("summarize", exc, BAD_INPUT)
    except KeyError as exc:  # --up-to names no message of the chat
        return _fail("summarize", exc.args[0], BAD_INPUT)
    except (StoreError, ValueError, ProviderError, IntegrityError, SummarizationFailed) as exc:
        return _fail("summarize", exc)
    # Never "saves nothing": such a summary is not kept.
    counted = "" if engine.counter.is_exact else " (token counts estimated)"
    print(f"{found.title}: {record.result().describe()}{counted}")
    print(record.contents())
    return 0


@cli.command("undo-summary", short_help="Undo CHAT's newest summary.")
@click.argument("chat", callback=unicode_text)
@data_dir_option
def undo_summary(chat: str, data_dir: str | None) -> int:
    """Undo CHAT's newest summary: its messages are sent to the model again, exactly as they were."""
    try:
        with open_cli_store(data_dir) as store:
            found = store.find_chat(chat)
            engine = chat_engine(store, found.id, known_model(store))
            attach_engine(store, found.id, engine)  # a failed save is raised from undo_last
            record = engine.undo_last()
    except NothingToUndo as exc:
        return _fail("undo-summary", exc, BAD_INPUT)
    except (StoreError, ValueError, IntegrityError) as exc:
        return _fail("undo-summary", exc)
    # A fold archives no message itself: 'the summary of 0 messages' was undone, it said.
    print(f"{found.title}: undid the summary of {local_time(record.created_at)}: {record.undone_description()}")
    return 0


@cli.command(short_help="Every summary of CHAT, oldest first.")
@click.argument("chat", callback=unicode_text)
@click.option("--full", is_flag=True, help="also the first and last message of each range, and the summary text")
@data_dir_option
def history(chat: str, full: bool, data_dir: str | None) -> int:
    """Every summary of CHAT, oldest first: its range, size before and after, reduction, how it was made."""
    try:
        with open_cli_store(data_dir) as store:
            found = store.find_chat(chat)
            messages = store.load_messages(found.id)
            records = store.load_records(found.id)
    except (StoreError, ValueError) as exc:
        return _fail("history", exc)
    print(f"{found.title}  ({found.id})")
    print("\n".join(history_lines(messages, records, full=full)))
    return 0
