"""A message regenerated or edited keeps its versions through `precis export` and `precis import`: JSONL carries
every version and which one is shown, and the import gives back the same; Markdown says which of how many is
shown; a secret in a version since replaced is redacted all the same. A real store and the real commands."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.storage.exporters import export_chat, write_export
from precis.core.storage.importers import import_file
from precis.core.storage.store import open_store

OPENAI_KEY = "sk-proj-4fJ9xQ2mZ8rT1vW6yB3nK7pL0sD5hG2aC9eU"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def chat_with_versions(store, replies: list[str], shown: int) -> str:
    """A question and its reply written len(replies) times (as Regenerate does), version `shown` on screen."""
    question = Message(role="user", content="Which ferry leaves first?")
    reply = Message(role="assistant", content=replies[0])
    chat_id = store.import_chat("Ferries", [question, reply])
    for text in replies[1:]:
        if not store.versions(chat_id):
            store.save_version(chat_id, reply)  # before it is written again, as the window does
        store.save_version(chat_id, reply.with_changes(content=text))
    if shown != len(replies) - 1:
        store.show_version(chat_id, reply, shown)
    return chat_id


def export_and_import(capsys, data, chat_id, tmp_path) -> tuple[str, str]:
    target = tmp_path / "ferries.jsonl"
    code, _, err = run(capsys, "--data-dir", str(data), "export", chat_id, "--format", "jsonl", "-o", str(target))
    assert code == 0, err
    code, out, err = run(capsys, "--data-dir", str(data), "import", str(target))
    assert code == 0, err
    return target.read_text(encoding="utf-8"), out.strip()


@given(replies=st.lists(st.text(alphabet="abc .", min_size=1, max_size=12), min_size=2, max_size=4),
       pick=st.integers(min_value=0, max_value=3))
def test_jsonl_export_then_import_gives_back_every_version_and_the_one_shown(tmp_path_factory, replies, pick):
    """As the window's File → Export and File → Import do (the commands: the tests below)."""
    data, target = tmp_path_factory.mktemp("data"), tmp_path_factory.mktemp("files") / "ferries.jsonl"
    shown = pick % len(replies)
    with open_store(data) as store:
        chat_id = chat_with_versions(store, replies, shown)
        before = store.versions(chat_id)
        assert [kept.texts for kept in before.values()] == [tuple(replies)]
        write_export(export_chat(store, chat_id, "jsonl").pieces, target)
        imported = import_file(store, target).chat_id
        assert store.versions(imported) == before
        assert [m.content for m in store.load_messages(imported)] == ["Which ferry leaves first?", replies[shown]]
        reply = store.load_messages(imported)[-1]
        [again] = store.show_version(imported, reply, (shown + 1) % len(replies))  # the window switches as before
        assert again.content == replies[(shown + 1) % len(replies)]


def test_a_secret_in_a_version_replaced_since_is_redacted_and_the_rest_imports(tmp_path, capsys):
    data = tmp_path / "data"
    with open_store(data) as store:
        chat_id = chat_with_versions(store, [f"Use API key: {OPENAI_KEY} for the timetable.",
                                             "Ask the harbour office for the timetable."], shown=1)
    text, imported = export_and_import(capsys, data, chat_id, tmp_path)
    assert OPENAI_KEY not in text and "[REDACTED:" in text
    [line] = [json.loads(line) for line in text.splitlines() if "versions" in line]
    assert line["version_shown"] == 1 and line["versions"][1] == "Ask the harbour office for the timetable."
    with open_store(data) as store:
        [kept] = store.versions(imported).values()
        assert kept.shown == 1 and OPENAI_KEY not in kept.texts[0] and "[REDACTED:" in kept.texts[0]


def test_markdown_says_which_version_of_how_many_is_shown_and_folds_the_others_after_it(tmp_path, capsys):
    """It said "version 2 of 3" and no more: a reader of the Markdown had no way to the other two."""
    data = tmp_path / "data"
    with open_store(data) as store:
        chat_id = chat_with_versions(store, ["The 7:10.", "The 7:40.", "The 8:05."], shown=1)
    code, out, _ = run(capsys, "--data-dir", str(data), "export", chat_id, "--format", "md")
    assert code == 0
    shown = out.index("### Assistant (version 2 of 3)\n\nThe 7:40.")
    first = out.index("<details>\n<summary>Version 1 of 3</summary>\n\nThe 7:10.\n\n</details>")
    third = out.index("<details>\n<summary>Version 3 of 3</summary>\n\nThe 8:05.\n\n</details>")
    assert shown < first < third


def test_a_bad_version_list_is_named_with_its_line(tmp_path, capsys):
    target = tmp_path / "bad.jsonl"
    target.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n"
                      + json.dumps({"role": "assistant", "content": "B", "versions": ["A", "B"], "version_shown": 0})
                      + "\n")
    code, _, err = run(capsys, "--data-dir", str(tmp_path / "data"), "import", str(target))
    assert code != 0 and "line 2" in err and "'versions'" in err and "content" in err
