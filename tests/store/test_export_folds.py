"""Markdown export read back by a CommonMark parser (markdown-it-py, none of the export's code): whatever a message
says (the fold's own tags, a code fence it leaves open, backticks), each earlier version stays inside its fold and
every message keeps its heading. A real store and the real export."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from precis.core.model.messages import Message
from precis.core.storage.exporters import export_chat
from precis.core.storage.store import open_store

PIECES = ["</details>", "<details>", "<summary>", "</summary>", "<DETAILS open>", "```", "````", "~~~", "`", "``",
          "\\`", "    ", "\n", "\n\n", "a", "b c", "<b>", "-", "> "]
TEXTS = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)
TAG = re.compile(r"</?(?:details|summary)\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One store for the module: each example is a chat of its own in it."""
    with open_store(tmp_path_factory.mktemp("folds")) as opened:
        yield opened


def markdown_of(store, texts: list[str]) -> str:
    """A chat of a question, its reply written len(texts) times (the last shown, the rest folded), and a second
    question, exported to Markdown."""
    reply = Message(role="assistant", content=texts[0])
    chat_id = store.import_chat("Folds", [Message(role="user", content="First?"), reply])
    for text in texts[1:]:
        if not store.versions(chat_id):
            store.save_version(chat_id, reply)
        store.save_version(chat_id, reply.with_changes(content=text))
    store.add_message(chat_id, Message(role="user", content="Second?"))
    return "".join(export_chat(store, chat_id, "md").pieces)


def html_tags(markdown: str) -> list[str]:
    """The fold tags the parsed document holds as HTML (not as text or code), in order."""
    tags = []
    for token in MarkdownIt("commonmark").parse(markdown):
        for part in [token, *(token.children or [])]:
            if part.type in ("html_block", "html_inline"):
                tags += [tag.lower() for tag in TAG.findall(part.content)]
    return tags


def message_headings(markdown: str) -> list[str]:
    """The export's own headings: the title's, and each message's (a message may have its own, of other levels)."""
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [tokens[i + 1].content for i, token in enumerate(tokens)
            if token.type == "heading_open" and token.markup in ("#", "###")]


@given(earlier=st.lists(TEXTS, min_size=1, max_size=3), shown=TEXTS)
def test_each_earlier_version_stays_in_its_fold_and_every_message_keeps_its_heading(store, earlier, shown):
    markdown = markdown_of(store, [*earlier, shown])
    assert html_tags(markdown) == ["<details", "<summary", "</summary", "</details"] * len(earlier)
    total = len(earlier) + 1
    assert message_headings(markdown) == ["Folds", "User", f"Assistant (version {total} of {total})", "User"]


def test_a_message_reads_as_written(store):
    """The fold's tags in a message's prose and code spans read as the text it has (with an invisible zero-width
    space after "<"); in fenced code they stay as written, byte for byte."""
    text = "Close it with </details> here.\n\nOr `</details>` inline:\n\n```html\n</details>\n```"
    markdown = markdown_of(store, [text, "Use a details element."])
    rendered = MarkdownIt("commonmark").render(markdown).replace("\u200b", "")
    assert "<p>Close it with &lt;/details&gt; here.</p>" in rendered
    assert "<code>&lt;/details&gt;</code> inline" in rendered
    assert '<pre><code class="language-html">&lt;/details&gt;\n</code></pre>' in rendered
    assert "```html\n</details>\n```" in markdown
