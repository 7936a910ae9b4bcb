"""Workspace-confined tools: path confinement, the text editor, search, and the bash tool."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from orchestrator.tools import PathRefused, ToolBox, Workspace, tool_definitions
from orchestrator.tools.editor import TextEditor
from orchestrator.tools.scrub import is_secret_name, safe_environment
from orchestrator.tools.search import search
from orchestrator.tools.shell import Shell
from tests.process_helpers import live_with, marker, wait_until

SECRET = "outside-secret-content-1234"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace and, next to it, a file that must stay unreachable."""
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET + "\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("def parse(text):\n    return text.split()\n")
    (ws / ".hidden").write_text("x")
    return ws, outside


# ---------------------------------------------------------------------- workspace


def test_resolve_accepts_paths_inside(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    w = Workspace(ws)
    assert w.resolve("src/app.py") == ws.resolve() / "src" / "app.py"
    assert w.resolve("src/../src/app.py") == ws.resolve() / "src" / "app.py"
    assert w.resolve(str(ws / "src")) == ws.resolve() / "src"
    assert w.resolve(".") == w.resolve("") == ws.resolve()
    assert w.resolve("new/dir/file.txt") == ws.resolve() / "new" / "dir" / "file.txt"


@pytest.mark.parametrize("path", ["../outside.txt", "src/../../outside.txt", "/etc/passwd", ".."])
def test_resolve_refuses_escapes(layout: tuple[Path, Path], path: str) -> None:
    ws, _ = layout
    with pytest.raises(PathRefused, match="outside the workspace"):
        Workspace(ws).resolve(path)


def test_resolve_refuses_absolute_path_outside(layout: tuple[Path, Path]) -> None:
    ws, outside = layout
    with pytest.raises(PathRefused):
        Workspace(ws).resolve(str(outside))


def test_resolve_refuses_every_symlink(layout: tuple[Path, Path]) -> None:
    """No symlink is followed anywhere in a path, also one pointing inside (the trust boundary)."""
    ws, outside = layout
    (ws / "link.txt").symlink_to(outside)
    (ws / "linkdir").symlink_to(outside.parent)
    w = Workspace(ws)
    with pytest.raises(PathRefused, match="symbolic link"):
        w.resolve("link.txt")
    with pytest.raises(PathRefused, match="symbolic link"):
        w.resolve("linkdir/outside.txt")
    (ws / "inner").symlink_to(ws / "src")
    with pytest.raises(PathRefused, match="symbolic link"):
        w.resolve("inner/app.py")
    assert w.resolve("src/app.py") == ws.resolve() / "src" / "app.py"  # the real path works


def test_resolve_refuses_nul(layout: tuple[Path, Path]) -> None:
    with pytest.raises(PathRefused, match="NUL"):
        Workspace(layout[0]).resolve("a\x00b")


def test_workspace_reached_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    w = Workspace(tmp_path / "alias")
    assert w.resolve("f.txt") == real.resolve() / "f.txt"


# ---------------------------------------------------------------------- text editor


def editor(ws: Path, can_edit: bool = True) -> TextEditor:
    return TextEditor(Workspace(ws), can_edit=can_edit)


def test_view_file_with_line_numbers_and_range(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    text, err = editor(ws).run({"command": "view", "path": "src/app.py"})
    assert not err
    assert text.splitlines() == ["     1\tdef parse(text):", "     2\t    return text.split()"]
    text, err = editor(ws).run({"command": "view", "path": "src/app.py", "view_range": [2, -1]})
    assert (text, err) == ("     2\t    return text.split()", False)
    text, err = editor(ws).run({"command": "view", "path": "src/app.py", "view_range": [3, 9]})
    assert err and "view_range" in text


def test_view_directory_lists_two_levels_without_hidden(layout: tuple[Path, Path]) -> None:
    ws, outside = layout
    (ws / "out").symlink_to(outside.parent)
    text, err = editor(ws).run({"command": "view", "path": "."})
    assert not err
    assert "src/" in text and "src/app.py" in text
    assert ".hidden" not in text
    assert "out@" in text and "outside.txt" not in text  # a symlink is shown, not followed


def test_view_refuses_outside_paths(layout: tuple[Path, Path]) -> None:
    ws, outside = layout
    (ws / "link.txt").symlink_to(outside)
    for path in ("../outside.txt", str(outside), "link.txt"):
        text, err = editor(ws, can_edit=False).run({"command": "view", "path": path})
        assert err, path
        assert SECRET not in text


def test_create_writes_and_overwrites(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    text, err = editor(ws).run({"command": "create", "path": "a/b/new.txt", "file_text": "hi\n"})
    assert (err, (ws / "a" / "b" / "new.txt").read_text()) == (False, "hi\n")
    assert "created" in text
    text, err = editor(ws).run({"command": "create", "path": "a/b/new.txt", "file_text": "yo"})
    assert "overwritten" in text and (ws / "a" / "b" / "new.txt").read_text() == "yo"


def test_create_outside_is_refused(layout: tuple[Path, Path]) -> None:
    ws, outside = layout
    text, err = editor(ws).run({"command": "create", "path": "../evil.txt", "file_text": "x"})
    assert err and not (outside.parent / "evil.txt").exists()


def test_str_replace_requires_exactly_one_match(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    app = ws / "src" / "app.py"
    text, err = editor(ws).run(
        {"command": "str_replace", "path": "src/app.py", "old_str": "nope", "new_str": "x"}
    )
    assert err and "does not occur" in text
    app.write_text("x = 1\nx = 1\n")
    text, err = editor(ws).run(
        {"command": "str_replace", "path": "src/app.py", "old_str": "x = 1", "new_str": "y"}
    )
    assert err and "2 times" in text and "lines 1, 2" in text
    assert app.read_text() == "x = 1\nx = 1\n"
    text, err = editor(ws).run(
        {"command": "str_replace", "path": "src/app.py", "old_str": "x = 1\nx", "new_str": "z"}
    )
    assert not err and app.read_text() == "z = 1\n"
    assert "has been edited" in text


def test_insert(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    app = ws / "src" / "app.py"
    _, err = editor(ws).run(
        {"command": "insert", "path": "src/app.py", "insert_line": 0, "insert_text": "import os"}
    )
    assert not err and app.read_text().splitlines()[0] == "import os"
    _, err = editor(ws).run(
        {"command": "insert", "path": "src/app.py", "insert_line": 3, "new_str": "# end\n"}
    )
    assert not err and app.read_text().endswith("# end\n")
    text, err = editor(ws).run(
        {"command": "insert", "path": "src/app.py", "insert_line": 99, "insert_text": "x"}
    )
    assert err and "between 0 and 4" in text


@pytest.mark.parametrize(
    "args",
    [
        {"command": "create", "path": "x.txt", "file_text": "x"},
        {"command": "str_replace", "path": "src/app.py", "old_str": "def", "new_str": "fn"},
        {"command": "insert", "path": "src/app.py", "insert_line": 0, "insert_text": "x"},
    ],
)
def test_read_only_role_may_only_view(layout: tuple[Path, Path], args: dict[str, object]) -> None:
    ws, _ = layout
    before = (ws / "src" / "app.py").read_text()
    text, err = editor(ws, can_edit=False).run(dict(args))
    assert err and "this role may only read files" in text
    assert (ws / "src" / "app.py").read_text() == before and not (ws / "x.txt").exists()


def test_editor_errors_do_not_raise(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    (ws / "bin.dat").write_bytes(b"\x00\x01\x02")
    cases = [
        {"command": "frobnicate", "path": "x"},
        {"command": "view"},
        {"command": "view", "path": "missing.txt"},
        {"command": "view", "path": "bin.dat"},
        {"command": "undo_edit", "path": "src/app.py"},
        {"command": "str_replace", "path": "src/app.py"},
    ]
    for args in cases:
        text, err = editor(ws).run(args)
        assert err and text, args


# ---------------------------------------------------------------------- search


def test_search_files(layout: tuple[Path, Path]) -> None:
    ws, outside = layout
    (ws / "notes.md").write_text("parse me\n")
    (ws / "out.txt").symlink_to(outside)
    w = Workspace(ws)
    text, err = search(w, {"pattern": r"pars\w"})
    assert not err
    assert text.splitlines() == ["notes.md:1: parse me", "src/app.py:1: def parse(text):"]
    text, _ = search(w, {"pattern": "parse", "glob": "*.py"})
    assert text == "src/app.py:1: def parse(text):"
    text, _ = search(w, {"pattern": "outside-secret"})
    assert SECRET not in text and "no matches" in text
    assert search(w, {"pattern": "("})[1]
    assert search(w, {"pattern": "x", "path": "../"})[1]


# ---------------------------------------------------------------------- shell


def run_shell(ws: Path, command: str, **kw: float) -> tuple[str, bool]:
    return asyncio.run(Shell(Workspace(ws), **kw).run({"command": command}))  # type: ignore[arg-type]


def test_shell_runs_in_the_workspace(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    text, err = run_shell(ws, "pwd; ls src")
    assert not err
    assert text.splitlines() == [str(ws.resolve()), "app.py"]


def test_shell_reports_exit_code_and_stderr(layout: tuple[Path, Path]) -> None:
    text, err = run_shell(layout[0], "echo oops >&2; exit 3")
    assert not err and "oops" in text and "[exit code 3]" in text


def test_shell_timeout_kills_the_process_group(layout: tuple[Path, Path]) -> None:
    """Through the sandbox: the background child dies too, seen from outside its namespace."""
    ws, _ = layout
    word = marker()
    script = f"import time; time.sleep(30)  # {word}"
    text, err = run_shell(ws, f"python3 -c '{script}' & echo started; sleep 30", timeout=1.5)
    assert err and "timed out after 1.5 s" in text and "started" in text
    assert wait_until(lambda: not live_with(word))


def test_shell_timeout_kills_children_that_left_the_group(layout: tuple[Path, Path]) -> None:
    """A child that started its own session dies with the sandbox's PID namespace."""
    ws, _ = layout
    word = marker()
    script = f"import time; time.sleep(30)  # {word}"
    text, err = run_shell(ws, f"setsid python3 -c '{script}' & echo started; sleep 30", timeout=1.5)
    assert err and "timed out" in text
    assert wait_until(lambda: not live_with(word))


def test_shell_output_is_truncated(layout: tuple[Path, Path]) -> None:
    text, err = run_shell(layout[0], "yes abcdefgh | head -c 200000", max_output=1000)
    assert not err
    assert len(text) < 1200 and "output cut" in text


def test_shell_restart_is_a_no_op(layout: tuple[Path, Path]) -> None:
    text, err = asyncio.run(Shell(Workspace(layout[0])).run({"restart": True}))
    assert not err and "restarted" in text


def test_shell_environment_has_no_secrets(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-test-not-a-real-key-shell"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_abcdefgh")
    monkeypatch.setenv("DB_PASSWORD", "hunter22")
    monkeypatch.setenv("aws_secret_access_key", "abc12345")
    monkeypatch.setenv("COPY_OF_THE_KEY", f"prefix-{key}")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    text, err = run_shell(layout[0], "env")
    assert not err
    for hidden in ("ANTHROPIC_API_KEY", key, "GITHUB_TOKEN", "DB_PASSWORD", "hunter22", "abc12345"):
        assert hidden not in text
    assert "PATH=" in text
    assert "HARMLESS_SETTING" not in text  # an allow-list: only what a role names under env:


def test_secret_name_rule() -> None:
    for name in ("ANTHROPIC_API_KEY", "openai_api_key", "MY_TOKEN", "SECRET", "PGPASSWORD"):
        assert is_secret_name(name)
    for name in ("PATH", "HOME", "LANG", "PYTHONPATH"):
        assert not is_secret_name(name)
    env = safe_environment({"PATH": "/bin", "ANTHROPIC_API_KEY": "sk-12345678", "X": "sk-12345678"})
    assert env == {"PATH": "/bin"}


# ---------------------------------------------------------------------- toolbox


def test_tool_definitions_follow_the_role() -> None:
    assert tool_definitions([]) == []
    read = tool_definitions(["read"])
    assert [d["name"] for d in read] == ["str_replace_based_edit_tool", "search_files"]
    assert read[0] == {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}
    full = tool_definitions(["shell", "edit", "read"])
    assert [d["name"] for d in full] == ["str_replace_based_edit_tool", "search_files", "bash"]
    assert full[-1] == {"type": "bash_20250124", "name": "bash"}
    assert [d["name"] for d in tool_definitions(["shell"])] == ["bash"]


def test_toolbox_refuses_tools_the_role_lacks(layout: tuple[Path, Path]) -> None:
    box = ToolBox(layout[0], ["read"])
    text, err = asyncio.run(box.run("bash", {"command": "touch pwned"}))
    assert err and "not available" in text and not (layout[0] / "pwned").exists()
    text, err = asyncio.run(box.run("str_replace_based_edit_tool", "not a dict"))
    assert err


def test_toolbox_scrubs_credentials_from_results(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-test-not-a-real-key-scrub"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    ws = layout[0]
    (ws / "leak.txt").write_text(f"key={key}\n")
    box = ToolBox(ws, ["read"])
    text, err = asyncio.run(
        box.run("str_replace_based_edit_tool", {"command": "view", "path": "leak.txt"})
    )
    assert not err and key not in text and "[redacted]" in text
    assert os.environ["ANTHROPIC_API_KEY"] == key  # the process itself is untouched


def test_toolbox_turns_unexpected_failures_into_error_results(layout: tuple[Path, Path]) -> None:
    box = ToolBox(layout[0], ["edit"])
    text, err = asyncio.run(
        box.run(
            "str_replace_based_edit_tool",
            {"command": "create", "path": "s.txt", "file_text": "\ud800"},
        )
    )
    assert err and "failed" in text
