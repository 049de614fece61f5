"""Ctrl-C during `precis models get NAME`: the time from SIGINT to the process ending, at a pseudo-terminal, against
the loopback stand-in hub (tests/stand_in_hub.py) serving the embedded GGUF: while the bytes flow, and while the hub
has stopped sending half-way through the file (the library's read timeout set to 600 s, so only Ctrl-C ends it).

Run: python benchmarks/bench_download_interrupt.py [--runs N]
Goal: every run < 1 s, exit 130, the .part kept.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from precis.core.models.catalogue import find_entry  # noqa: E402
from precis.core.providers.local import find_model_path  # noqa: E402

from tests.interrupted_download import interrupt_get  # noqa: E402
from tests.stand_in_hub import StandInHub  # noqa: E402

ENTRY = find_entry("smollm2-360m")


def one_run(stalled: bool) -> tuple[float, int, int]:
    """(seconds from SIGINT to the end, exit code, bytes kept in the .part)."""
    with tempfile.TemporaryDirectory() as scratch, StandInHub() as hub:
        root = Path(scratch)
        hub.serve(ENTRY.repo, ENTRY.file, find_model_path())
        if stalled:
            hub.faults.stall_at = find_model_path().stat().st_size // 2
        env = {**os.environ, "HF_ENDPOINT": hub.url, "PRECIS_HOME": str(root / "precis"), "HOME": str(root / "home"),
               "HF_HOME": str(root / "hf-home"), "HF_HUB_DOWNLOAD_TIMEOUT": "600"}
        env.pop("HF_HUB_OFFLINE", None)
        folder = root / "precis" / "models"
        stopped = interrupt_get(hub, ENTRY, folder, env)
        kept = sum(part.stat().st_size for part in ENTRY.partials(folder))
        return stopped.seconds, stopped.code, kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    print(f"{'case':<24} {'median s':>9} {'max s':>7}  exit codes  kept")
    for label, stalled in (("bytes flowing", False), ("hub stalled mid-body", True)):
        results = [one_run(stalled) for _ in range(runs)]
        seconds = [r[0] for r in results]
        codes = sorted({r[1] for r in results})
        kept = "all" if all(r[2] > 0 for r in results) else f"{sum(r[2] > 0 for r in results)} of {runs}"
        print(f"{label:<24} {statistics.median(seconds):>9.2f} {max(seconds):>7.2f}  {codes!s:<10}  {kept}")


if __name__ == "__main__":
    main()
