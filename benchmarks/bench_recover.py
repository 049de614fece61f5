"""`precis recover` on a large damaged store: 150 copies of the Claude Code sample (about 97,000 messages, 117 MB),
eight of its message pages overwritten with random bytes, spread through the file. Prints the time the command
takes (a process of its own, as a user runs it) and how many messages it got back.

Run: python benchmarks/bench_recover.py [copies]   (150 by default; about 10 s in all)
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precis.core.storage.importers import parse_file  # noqa: E402
from precis.core.storage.store import DB_NAME, open_store  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "data" / "transcripts" / "claudecode_session.jsonl"
DAMAGED_PAGES = 8
PAGE = 4096


def main(copies: int) -> None:
    messages = parse_file(SAMPLE).messages
    with tempfile.TemporaryDirectory() as folder:
        with open_store(folder) as store:
            for n in range(copies):
                store.import_chat(f"copy {n}", messages)
        db = Path(folder) / DB_NAME
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            total = conn.execute("SELECT count(*) FROM message").fetchone()[0]
            leaves = [p for (p,) in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = 'message' AND pagetype = 'leaf' ORDER BY pageno")]
        with open(db, "r+b") as fh:
            for page in leaves[len(leaves) // 4::max(1, len(leaves) // 10)][:DAMAGED_PAGES]:
                fh.seek((page - 1) * PAGE)
                fh.write(os.urandom(PAGE))
        size_mb = db.stat().st_size / 2**20
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "precis.core.cli.main", "--data-dir", folder, "recover"],
                              capture_output=True, text=True)
        took = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(done.stderr)
        with sqlite3.connect(db) as conn:
            kept = conn.execute("SELECT count(*) FROM message").fetchone()[0]
    print(f"precis recover, {size_mb:.0f} MB with {DAMAGED_PAGES} damaged message pages: {took:.1f} s; "
          f"{kept:,} of {total:,} messages recovered ({total - kept:,} were on the damaged pages)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 150)
