"""The workspace tools on a real folder: confinement (paths and links out are refused), special files skipped, sizes
bounded, edit_file's exactly-once rule and its diff, and what execute_bash is given."""

from __future__ import annotations

import os
import threading

import pytest
from precis.core.model.messages import ToolCall
from precis.core.tools.toolbox import Toolbox
from precis.core.tools.workspace import READ_BYTES, READ_LINES, Workspace


@pytest.fixture
def folder(tmp_path):
    """A workspace folder inside tmp_path, with a secret beside it (outside the workspace)."""
    (tmp_path / "secret.txt").write_text("the secret outside\n")
    inside = tmp_path / "work"
    (inside / "src").mkdir(parents=True)
    (inside / "src" / "app.py").write_text("def main():\n    return 1\n")
    (inside / "README.md").write_text("# Work\n")
    return inside


def run(box: Toolbox, name: str, **arguments):
    return box.run(ToolCall(id="c1", name=name, arguments=arguments))


def within(seconds: float, function):
    """The result of function() on a thread, failing the test if it hangs (a FIFO opened the blocking way)."""
    result = []
    worker = threading.Thread(target=lambda: result.append(function()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, f"still running after {seconds} s"
    return result[0]


@pytest.mark.parametrize("path", ["../secret.txt", "../../etc/passwd", "/etc/passwd", "src/../../secret.txt"])
def test_a_path_outside_the_workspace_is_refused(folder, path):
    box = Toolbox(Workspace(folder))
    for name, extra in [("read_file", {}), ("list_files", {}), ("search_files", {"pattern": "x"}),
                        ("create_file", {"content": "x"}), ("edit_file", {"old_text": "a", "new_text": "b"})]:
        outcome = run(box, name, path=path, **extra)
        assert not outcome.ok and "outside the workspace folder" in outcome.output, (name, outcome.output)
    assert (folder.parent / "secret.txt").read_text() == "the secret outside\n"


def test_an_absolute_path_inside_is_used(folder):
    outcome = run(Toolbox(Workspace(folder)), "read_file", path=str(folder / "src" / "app.py"))
    assert outcome.ok and "     1→def main():" in outcome.output


def test_a_symbolic_link_pointing_out_is_refused_and_one_inside_is_followed(folder):
    (folder / "leak.txt").symlink_to(folder.parent / "secret.txt")
    (folder / "outside").symlink_to(folder.parent)
    (folder / "app-link.py").symlink_to(folder / "src" / "app.py")
    box = Toolbox(Workspace(folder))
    assert "outside the workspace" in run(box, "read_file", path="leak.txt").output
    assert "outside the workspace" in run(box, "create_file", path="outside/planted.txt", content="x").output
    assert not (folder.parent / "planted.txt").exists()
    found = run(box, "search_files", pattern="secret")
    assert found.ok and "secret outside" not in found.output and found.output.endswith("0 matches in 0 files")
    assert run(box, "read_file", path="app-link.py").ok


def test_a_fifo_is_refused_by_read_and_skipped_by_list_and_search(folder):
    os.mkfifo(folder / "pipe")
    box = Toolbox(Workspace(folder))
    read = within(20, lambda: run(box, "read_file", path="pipe"))
    assert not read.ok and "not a regular file" in read.output
    listed = within(20, lambda: run(box, "list_files", path="."))
    assert listed.output.splitlines() == ["README.md", "src/", "src/app.py"]
    assert within(20, lambda: run(box, "search_files", pattern="main")).output.splitlines() == [
        "src/app.py:1: def main():", "1 match in 1 file"]


def test_a_huge_file_is_read_a_part_at_a_time(folder):
    line = "x" * 99 + "\n"
    (folder / "huge.log").write_text(line * 200_000)  # 20 MB
    box = Toolbox(Workspace(folder))
    first = run(box, "read_file", path="huge.log")
    assert first.ok and first.cut
    assert len(first.output) < READ_BYTES + 20 * READ_LINES  # the numbers added to each line
    assert first.output.splitlines()[-1].endswith("read on with offset=1001]")
    later = run(box, "read_file", path="huge.log", offset=150_000, limit=3)
    assert later.output.splitlines()[:3] == [f"{n:>6}→{'x' * 99}" for n in (150_000, 150_001, 150_002)]
    past = run(box, "read_file", path="huge.log", offset=300_000)
    assert not past.ok and "has 200,000 lines" in past.output


def test_one_line_of_megabytes_is_cut(folder):
    (folder / "one-line.json").write_text("[" + "1," * 3_000_000 + "1]")
    outcome = run(Toolbox(Workspace(folder)), "read_file", path="one-line.json")
    assert outcome.ok and len(outcome.output) < 10_000 and "the rest of this line not shown" in outcome.output


def test_search_files_takes_a_glob_and_names_files_from_the_workspace(folder):
    box = Toolbox(Workspace(folder))
    assert run(box, "search_files", pattern="Work|main", glob="*.md").output.splitlines() == [
        "README.md:1: # Work", "1 match in 1 file"]
    assert run(box, "search_files", pattern="main", path="src").output.startswith("src/app.py:1: ")
    bad = run(box, "search_files", pattern="(")
    assert not bad.ok and "search_files: bad pattern" in bad.output


def test_search_files_given_a_file_searches_it_whatever_the_glob(folder):
    """The model names a file and adds a glob that the file's name does not match (it reported "0 matches in 0 files")."""
    box = Toolbox(Workspace(folder))
    for glob in ["*.md", "*.py", "src/*"]:
        found = run(box, "search_files", pattern="return", path="src/app.py", glob=glob)
        assert found.output.splitlines() == ["src/app.py:2:     return 1", "1 match in 1 file"], glob


def test_edit_file_replaces_text_that_matches_exactly_once_and_shows_the_diff(folder):
    app = folder / "src" / "app.py"
    app.write_text("def main():\n    return 1\n\ndef other():\n    return 1\n")
    box = Toolbox(Workspace(folder))
    twice = run(box, "edit_file", path="src/app.py", old_text="return 1", new_text="return 2")
    assert not twice.ok and "matches 2 places" in twice.output
    missing = run(box, "edit_file", path="src/app.py", old_text="return 3", new_text="return 2")
    assert not missing.ok and "was not found" in missing.output
    assert app.read_text() == "def main():\n    return 1\n\ndef other():\n    return 1\n"
    once = run(box, "edit_file", path="src/app.py", old_text="def main():\n    return 1", new_text="def main():\n    return 2")
    assert once.ok
    assert app.read_text() == "def main():\n    return 2\n\ndef other():\n    return 1\n"
    assert "--- a/src/app.py\n+++ b/src/app.py\n" in once.output
    assert "-    return 1\n+    return 2\n" in once.output


def test_the_preview_shows_the_diff_without_writing(folder):
    box = Toolbox(Workspace(folder))
    edit = ToolCall(id="c1", name="edit_file", arguments={"path": "README.md", "old_text": "# Work", "new_text": "# Play"})
    assert "-# Work\n+# Play\n" in box.preview(edit)
    create = ToolCall(id="c2", name="create_file", arguments={"path": "new/notes.txt", "content": "one\ntwo"})
    assert box.preview(create).splitlines() == [
        "--- /dev/null", "+++ b/new/notes.txt", "@@ -0,0 +1,2 @@", "+one", "+two", "\\ No newline at end of file"]
    assert (folder / "README.md").read_text() == "# Work\n" and not (folder / "new").exists()
    bash = ToolCall(id="c3", name="execute_bash", arguments={"command": "rm -rf build"})
    assert box.preview(bash).startswith("$ rm -rf build\n")
    assert box.needs_consent("edit_file") and box.needs_consent("execute_bash") and box.needs_consent("create_file")
    assert not box.needs_consent("read_file") and not box.needs_consent("search_files")


def test_create_file_makes_its_folders_and_replaces_a_file_keeping_its_mode(folder):
    box = Toolbox(Workspace(folder))
    made = run(box, "create_file", path="docs/guide/intro.md", content="# Intro\n")
    assert made.ok and made.output == "created docs/guide/intro.md (1 line)"
    script = folder / "run.sh"
    script.write_text("echo one\n")
    script.chmod(0o750)
    replaced = run(box, "create_file", path="run.sh", content="echo two\n")
    assert replaced.ok and "-echo one\n+echo two\n" in replaced.output
    assert script.read_text() == "echo two\n" and script.stat().st_mode & 0o777 == 0o750
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "docs", "run.sh", "src"]  # no temporary left


def test_execute_bash_runs_in_the_workspace_without_precis_api_keys(folder, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-precis-openai-secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-precis-secret")
    box = Toolbox(Workspace(folder))
    outcome = run(box, "execute_bash", command="pwd; env; exit 3")
    assert not outcome.ok and outcome.output.endswith("[exit code: 3]")
    assert outcome.output.splitlines()[0] == str(folder.resolve())
    assert "sk-precis" not in outcome.output and "sk-ant" not in outcome.output
    stopped = run(box, "execute_bash", command="echo started; sleep 30", timeout=1)
    assert stopped.cut and "timed out after 1 s" in stopped.output


def test_a_workspace_that_is_missing_or_a_file_is_refused_saying_which(tmp_path, capsys):
    """A folder that does not exist was 'not a folder', as if something else were there."""
    from precis.core.cli.main import main

    missing, afile = tmp_path / "gone", tmp_path / "notes.txt"
    afile.write_text("notes")
    for path, why in ((missing, "there is no such folder"), (afile, "a file, not a folder")):
        with pytest.raises(ValueError, match=f"workspace folder {path}: {why}"):
            Workspace(path)
    # The server is never reached: the workspace is refused first.
    assert main(["chat", "--data-dir", str(tmp_path / "data"), "--provider", "openai", "--base-url",
                 "http://127.0.0.1:9/v1", "--model", "m", "--workspace", str(missing), "hi"]) == 2
    assert f"precis chat: --workspace: there is no folder {missing}" in capsys.readouterr().err
