"""`precis prompt`: the next prompt of a chat as it will be sent, part by part, with where each part came from."""

from __future__ import annotations

import json

import click

from ..context.prompt_parts import prompt_parts
from ..storage.store import StoreError, open_store
from .group import cli, data_dir_option
from .store import _fail, chat_engine, known_model, unicode_text


@cli.command()
@click.argument("chat", callback=unicode_text)
@click.option("--json", "as_json", is_flag=True, help="print JSON, for scripts")
@data_dir_option
def prompt(chat: str, as_json: bool, data_dir: str | None) -> int:
    """The prompt the next reply in CHAT (id, unique prefix or title) is written from, part by part: the text sent,
    its tokens, and where each part came from (a message, a summary, an archived original)."""
    try:
        with open_store(data_dir) as store:
            found = store.find_chat(chat)
            engine = chat_engine(store, found.id, known_model(store))
            parts, total = prompt_parts(engine)
            available = engine.budget.available
            exact = engine.counter.is_exact  # restored whole: no stand-in counts
    except (StoreError, ValueError) as exc:
        return _fail("prompt", exc)
    if as_json:
        print(json.dumps({"chat": found.id, "title": found.title, "tokens": total, "tokens_exact": exact, "budget": available,
                          "parts": [part.as_json() for part in parts]}, indent=2, ensure_ascii=False))
        return 0
    print(f"{found.title}  ({found.id})")
    print(f"next prompt: {total:,} / {available:,} tokens ({'exact' if exact else 'estimated'}), {len(parts)} parts")
    for number, part in enumerate(parts, 1):
        where = f" · from {part.source[:8]}" if part.source else ""
        detail = f" · {part.detail}" if part.detail else ""
        print(f"\n{number}. {part.kind} · {part.role} · {part.tokens:,} tokens{detail}{where}")
        if part.text:
            print("\n".join("   " + line for line in part.text.splitlines()))
    return 0
