"""`precis prompt`: the next prompt of a chat as it will be sent, part by part, with where each part came from."""

from __future__ import annotations

import json

import click

from ..chat.history import message_ref
from ..chat.sent_prompts import NotRebuilt, sent_prompt, sent_settings
from ..context.engine import ContextEngine
from ..context.prompt_parts import PromptPart, prompt_parts
from ..model.counted import counted
from ..providers.local import counter_named
from ..storage.store import Store, StoreError
from .group import cli, data_dir_option
from .opening import open_cli_store
from .store import BAD_INPUT, _fail, chat_engine, known_model, unicode_text


@cli.command(short_help="The prompt CHAT's next reply would be sent, as sent.")
@click.argument("chat", callback=unicode_text)
@click.option("--reply", "reply", metavar="MESSAGE", callback=unicode_text,
              help="what this reply was written from instead (its id, or its number in `precis history`)")
@click.option("--json", "as_json", is_flag=True, help="print JSON, for scripts")
@data_dir_option
def prompt(chat: str, reply: str | None, as_json: bool, data_dir: str | None) -> int:
    """The prompt the next reply in CHAT (id, unique prefix or title) is written from, part by part: the text sent,
    its tokens, and where each part came from (a message, a summary, an archived original). With --reply, the
    prompt that reply was written from, as it was sent."""
    try:
        with open_cli_store(data_dir) as store:
            found = store.find_chat(chat)
            engine = chat_engine(store, found.id, known_model(store))
            if reply is None:
                parts, total = prompt_parts(engine)
                heading = "next prompt"
            else:
                parts, total = _sent(store, found.id, engine, message_ref(engine.messages, reply))
                heading = f"reply {reply} was written from"
            available = engine.budget.available
            exact = engine.counter.is_exact  # restored whole: no stand-in counts
    except KeyError as exc:  # --reply names no message of the chat
        return _fail("prompt", exc.args[0], BAD_INPUT)
    except (StoreError, ValueError, NotRebuilt) as exc:
        return _fail("prompt", exc)
    if as_json:
        print(json.dumps({"chat": found.id, "title": found.title, "reply": reply, "tokens": total,
                          "tokens_exact": exact, "budget": available, "parts": [part.as_json() for part in parts]},
                         indent=2, ensure_ascii=False))
        return 0
    print(f"{found.title}  ({found.id})")
    print(f"{heading}: {total:,} / {available:,} tokens ({'exact' if exact else 'estimated'}), {counted(len(parts), 'part')}")
    for number, part in enumerate(parts, 1):
        where = f" · from {part.source[:8]}" if part.source else ""
        detail = f" · {part.detail}" if part.detail else ""
        print(f"\n{number}. {part.kind} · {part.role} · {part.tokens:,} tokens{detail}{where}")
        if part.text:
            print("\n".join("   " + line for line in part.text.splitlines()))
    return 0


def _sent(store: Store, chat_id: str, engine: ContextEngine, message_id: str) -> tuple[list[PromptPart], int]:
    """What the reply was written from, counted with the tokenizer it was counted with (found on this machine)."""
    name = sent_settings(store, chat_id, engine, message_id).counter
    counter = engine.counter if name == engine.counter.name else counter_named(name)
    if counter is None:
        raise NotRebuilt(f"it was counted with {name}, which is not on this machine")
    return sent_prompt(store, chat_id, engine, message_id, counter)
