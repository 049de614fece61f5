"""Every secret form of issue 12 said in a chat (by the user, in a shell command, in its output, repeated bare by the
assistant) is absent from what the summary stores and shows: the summary records in the SQLite file, `precis
context`, `precis history --full` and the records `precis export` writes."""

from __future__ import annotations

import json
import re
import sqlite3

from precis.core.cli.main import main
from precis.core.storage.store import DB_NAME

from tests.core.test_redact import SECRETS


def whole_token(text: str, secret: str) -> str:
    """The secret as written in `text`, widened to the whole token when the list names only a part of it."""
    start = text.index(secret)
    token = re.compile(r"[A-Za-z0-9+/=_\-]*")
    before = token.match(text[::-1], len(text) - start).group(0)[::-1] if start else ""
    return before + secret + token.match(text, start + len(secret)).group(0)


def chat_with_every_secret(path) -> None:
    lines = []
    for i, (text, secret, _kind) in enumerate(SECRETS):
        arguments = json.dumps({"command": text})
        lines += [{"role": "user", "content": f"step {i}: run this for me: {text}"},
                  {"role": "assistant", "content": "Running it.", "tool_calls": [
                      {"id": f"c{i}", "type": "function", "function": {"name": "Bash", "arguments": arguments}}]},
                  {"role": "tool", "tool_call_id": f"c{i}", "content": f"Exit code 1\nerror: {text} failed"},
                  {"role": "assistant", "content": f"That failed; I used {whole_token(text, secret)} as given."}]
    lines += [{"role": "user" if i % 2 == 0 else "assistant", "content": f"later turn {i}"} for i in range(12)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_no_secret_form_reaches_a_stored_or_shown_summary(tmp_path, capsys):
    data = str(tmp_path / "data")
    source = tmp_path / "secrets.jsonl"
    chat_with_every_secret(source)
    assert main(["--data-dir", data, "import", str(source)]) == 0
    chat = capsys.readouterr().out.strip()
    assert main(["--data-dir", data, "summarize", chat]) == 0
    assert main(["--data-dir", data, "context", chat]) == 0
    assert main(["--data-dir", data, "history", chat, "--full"]) == 0
    shown = capsys.readouterr().out
    summary_text = "\n".join(line for line in shown.splitlines()
                             if not line.lstrip().startswith(("first:", "last:")))  # those two are originals
    exported = tmp_path / "export.jsonl"
    assert main(["--data-dir", data, "export", chat, "-o", str(exported)]) == 0
    records = [json.loads(line).get("summaries") for line in exported.read_text().splitlines()]
    with sqlite3.connect(tmp_path / "data" / DB_NAME) as db:
        stored = "\n".join(row[0] for row in db.execute("SELECT record FROM summary"))
    assert stored and any(records) and "[REDACTED:" in stored
    for _text, secret, kind in SECRETS:
        for where, what in (("summary rows", stored), ("context and history", summary_text),
                            ("exported records", json.dumps(records))):
            assert secret not in what, f"{kind} {secret!r} in the {where}"


# Secrets as people write them in a chat, each once, with the value that must not survive.
PROSE_SECRETS = [
    ("ok so my password is Hunter2!x, keep it safe", "Hunter2!x"),
    ("the staging pwd: Zq8#mLw2 for the admin panel", "Zq8#mLw2"),
    ("in settings.py: password = hunter22x", "hunter22x"),
    ("SECRET_KEY = 'django-insecure-8f$2k!x@q9z#v1m^w7c&t0r(p3n)b5y'", "django-insecure-8f$2k!x@q9z#v1m^w7c&t0r(p3n)b5y"),
    ("here is the token 3f9a2c7e1b8d4f60a5c9e2b7d1f4a8c3 for the API", "3f9a2c7e1b8d4f60a5c9e2b7d1f4a8c3"),
    ("the API key: AbC123xyz789QwErTy works", "AbC123xyz789QwErTy"),
    ("The password for the staging db is S3cure!Pass, do not share", "S3cure!Pass"),
    ("just use password Tr0ub4dor3 to log in", "Tr0ub4dor3"),
]
# Prose about credentials that holds none: nothing is counted for these.
PROSE_WITHOUT_SECRETS = ["the password field is required", "the token count is 512 and the token limit is 128000",
                         "API key: required", "password reset link sent", "ALTER TABLE users ADD password VARCHAR(255)"]


def test_the_record_counts_each_secret_written_in_prose(tmp_path, capsys):
    """Issue 27: a chat whose user wrote passwords, keys and tokens in prose was summarized with `redactions: 0`. The
    record in the SQLite file counts each secret once, and holds none of their values."""
    data = str(tmp_path / "data")
    source = tmp_path / "prose.jsonl"
    said = [text for text, _ in PROSE_SECRETS] + PROSE_WITHOUT_SECRETS
    lines = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Note {i}: {text}"}
             for i, text in enumerate(said)]
    lines += [{"role": "user" if i % 2 == 0 else "assistant", "content": f"later turn {i}"} for i in range(12)]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["--data-dir", data, "import", str(source)]) == 0
    chat = capsys.readouterr().out.strip()
    assert main(["--data-dir", data, "summarize", chat]) == 0
    with sqlite3.connect(tmp_path / "data" / DB_NAME) as db:
        records = [json.loads(row[0]) for row in db.execute("SELECT record FROM summary")]
    assert len(records) == 1
    stored = json.dumps(records[0])
    assert [secret for _, secret in PROSE_SECRETS if secret in stored] == []
    # Each secret once, and nothing in the prose without one (the count is of the summarized messages' secrets).
    assert records[0]["redactions"] == len(PROSE_SECRETS)
