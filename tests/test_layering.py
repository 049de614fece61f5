"""core/ is plain Python: it must never import Qt, so every rule is testable without a display."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "core"


def test_nothing_under_core_imports_pyside6():
    offenders = []
    for path in CORE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(CORE.parent)}:{node.lineno} imports {n}"
                          for n in names if n.split(".")[0] in ("PySide6", "PyQt5", "PyQt6", "shiboken6")]
    assert offenders == []
