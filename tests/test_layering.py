"""The house plan: core/ never imports Qt, imports only point down a floor, nothing uses the bare names `core` or
`gui` (they install as precis.core and precis.gui, so a bare import would load a second copy), and no module grows
past what one reader takes in."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core"

# Lower floors never import higher ones; wings on one floor do not import each other.
FLOORS = {"model": 1, "settings": 2, "providers": 3, "summary": 4, "tools": 4, "context": 5, "storage": 6, "chat": 7,
          "cli": 8}
# A module past this is split by responsibility (gui/inspector.py was 717 lines, its __init__ 206).
MAX_MODULE_LINES = 500


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute dotted name) of every import in a file under core/ or gui/, relative ones resolved."""
    package = ["precis", *path.relative_to(ROOT).with_suffix("").parts[:-1]]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append((node.lineno, module))
    return found


def wing_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["precis", "core"] or len(parts) < 3:
        return None
    return parts[2]


def test_nothing_under_core_imports_qt():
    offenders = [f"{path.relative_to(ROOT)}:{line} imports {name}"
                 for path in CORE.rglob("*.py") for line, name in imported_modules(path)
                 if name.split(".")[0] in ("PySide6", "PyQt5", "PyQt6", "shiboken6")]
    assert offenders == []


def test_core_imports_point_down_a_floor():
    offenders = []
    for path in CORE.rglob("*.py"):
        own = path.relative_to(CORE).parts[0].removesuffix(".py")
        for line, name in imported_modules(path):
            if name.startswith("precis.gui"):
                # The command line may offer the window's commands, loaded by name if the GUI is installed.
                continue
            target = wing_of(name)
            if target is None or target == own or own not in FLOORS or target not in FLOORS:
                continue
            if FLOORS[target] >= FLOORS[own]:
                offenders.append(f"{path.relative_to(ROOT)}:{line} ({own}, floor {FLOORS[own]}) imports {name} "
                                 f"({target}, floor {FLOORS[target]})")
    assert offenders == []


@pytest.mark.slow
def test_no_bare_core_or_gui_imports():
    offenders = []
    for folder in ("core", "gui", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            for line, name in imported_modules(path):
                if name.split(".")[0] in ("core", "gui"):
                    offenders.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert offenders == []


def test_no_import_circle_in_gui():
    """Each window part gets the collaborators it uses, not the window: none imports main_window (or another part
    that leads back to it), so each can be built and tested alone. Imports for type checking count too."""
    gui = ROOT / "gui"
    graph = {path.stem: {name.split(".")[2] for _line, name in imported_modules(path)
                         if name.startswith("precis.gui.") and len(name.split(".")) > 2}
             for path in gui.glob("*.py")}
    circles = []

    def visit(module: str, trail: list[str]) -> None:
        for target in sorted(graph.get(module, ())):
            if target in trail:
                circles.append(" -> ".join([*trail[trail.index(target):], target]))
            elif target not in seen:
                seen.add(target)
                visit(target, [*trail, target])

    for start in sorted(graph):
        seen = {start}
        visit(start, [start])
    assert circles == []


def test_a_read_beside_the_repository_is_caught_and_one_inside_is_not(tmp_path):
    from tests.conftest import REPOSITORY, outside_the_repository

    assert outside_the_repository(REPOSITORY.parent / "shared" / "transcripts" / "sweagent_1.jsonl")
    assert outside_the_repository(str(REPOSITORY) + "-other/file")
    assert not outside_the_repository(REPOSITORY / "tests" / "data" / "transcripts" / "sweagent_1.jsonl")
    assert not outside_the_repository(REPOSITORY)
    assert not outside_the_repository(tmp_path / "x")
    # Installed packages may live beside the clone (a shared virtual environment): code, not test data.
    assert not outside_the_repository(Path(pytest.__file__))


def test_no_module_in_core_or_gui_is_over_500_lines():
    long = {str(path.relative_to(ROOT)): lines for folder in ("core", "gui") for path in (ROOT / folder).rglob("*.py")
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}, f"split these by responsibility: {long}"


def test_the_command_line_and_the_window_load_without_the_mcp_sdk():
    """Every `precis` command and the window's start imported the MCP SDK (about half a second; `precis chats` took
    1.7 s, 0.7 s without it) for the few chats with MCP servers: it is imported when a server starts."""
    import os
    import subprocess
    import sys

    probe = ("import sys; import precis.core.cli.main as cli; cli.load_commands(); import precis.gui.main_window; "
             "import precis.core.chat.tool_loop; print(sorted(m for m in ('mcp', 'mcp_types') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
