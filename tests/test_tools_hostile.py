"""The file and search tools against a hostile workspace: hard links out, FIFOs, slow patterns.

A model (or whatever wrote the workspace before it) can plant `ln /etc/passwd x` or `ln
/outside/secret x` (a path inside, an inode outside), a FIFO that blocks whoever opens it, or a
search pattern that backtracks for ever. None of them may let the tools read, write or hang.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.tools import ToolBox, Workspace
from orchestrator.tools.editor import TextEditor
from orchestrator.tools.search import search

SECRET = "outside-secret-content-5678"


def bounded(call: Callable[[], Any], seconds: float = 60) -> Any:
    """The result of `call`, failing the test (not hanging it) when it does not return."""
    box: list[Any] = []
    worker = threading.Thread(target=lambda: box.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert box, f"the call did not return within {seconds} s"
    return box[0]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ok.txt").write_text("an ordinary file\n")
    return ws


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text(SECRET + "\n")
    return path


def edit(ws: Path, **args: Any) -> tuple[str, bool]:
    return bounded(lambda: TextEditor(Workspace(ws), can_edit=True).run(args))


# ---------------------------------------------------------------------- hard links


def test_hard_link_to_an_outside_file_is_neither_read_nor_written(ws: Path, outside: Path) -> None:
    os.link(outside, ws / "x.txt")
    text, err = edit(ws, command="view", path="x.txt")
    assert err and "hard links" in text and SECRET not in text
    for args in (
        {"command": "str_replace", "path": "x.txt", "old_str": "outside", "new_str": "pwned"},
        {"command": "insert", "path": "x.txt", "insert_line": 0, "insert_text": "pwned"},
        {"command": "create", "path": "x.txt", "file_text": "pwned"},
    ):
        text, err = edit(ws, **args)
        assert err and "hard links" in text and SECRET not in text, args
    assert outside.read_text() == SECRET + "\n"
    text, err = search(Workspace(ws), {"pattern": "outside-secret"})
    assert not err and "no matches" in text


def test_hard_link_to_etc_passwd_is_refused(ws: Path) -> None:
    try:
        os.link("/etc/passwd", ws / "passwd")
    except OSError:  # another filesystem, or protected_hardlinks: it cannot be planted here
        assert not (ws / "passwd").exists()
        return
    before = Path("/etc/passwd").read_bytes()
    text, err = edit(ws, command="view", path="passwd")
    assert err and "root:" not in text
    text, err = edit(ws, command="create", path="passwd", file_text="pwned")
    assert err and Path("/etc/passwd").read_bytes() == before
    assert "root:" not in search(Workspace(ws), {"pattern": "root"})[0]


# ---------------------------------------------------------------------- FIFOs and devices


def test_fifo_is_refused_without_hanging(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    for args in (
        {"command": "view", "path": "pipe"},
        {"command": "str_replace", "path": "pipe", "old_str": "a", "new_str": "b"},
        {"command": "insert", "path": "pipe", "insert_line": 0, "insert_text": "x"},
        {"command": "create", "path": "pipe", "file_text": "x"},
    ):
        text, err = edit(ws, **args)
        assert err and "FIFO" in text, args
    text, err = bounded(lambda: search(Workspace(ws), {"pattern": "ordinary"}))
    assert (text, err) == ("ok.txt:1: an ordinary file", False)
    text, err = bounded(lambda: search(Workspace(ws), {"pattern": "x", "path": "pipe"}))
    assert not err and "no matches" in text


def test_fifo_with_a_reader_is_not_written(ws: Path) -> None:
    """Opened for writing while someone reads it: the descriptor check still refuses it."""
    fifo = ws / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        text, err = edit(ws, command="create", path="pipe", file_text="leak")
        assert err and "FIFO" in text
        assert os.read(reader, 10) == b""  # nothing was written
    finally:
        os.close(reader)


def test_symlink_to_a_fifo_or_device_inside_is_refused(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    (ws / "link").symlink_to(ws / "pipe")
    text, err = edit(ws, command="view", path="link")
    assert err and "symbolic link" in text  # no symlink is followed, whatever it points to
    text, err = edit(ws, command="view", path="pipe")
    assert err and "FIFO" in text
    (ws / "null").symlink_to("/dev/null")
    text, err = edit(ws, command="view", path="null")
    assert err and "symbolic link" in text


def test_the_listing_shows_a_fifo_without_opening_it(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    text, err = edit(ws, command="view", path=".")
    assert not err and "pipe" in text


def test_toolbox_reports_refusals_as_tool_errors(ws: Path, outside: Path) -> None:
    os.link(outside, ws / "x.txt")
    os.mkfifo(ws / "pipe")
    box = ToolBox(ws, ["read", "edit"])
    for path in ("x.txt", "pipe"):
        text, err = bounded(
            lambda p=path: asyncio.run(
                box.run("str_replace_based_edit_tool", {"command": "view", "path": p})
            )
        )
        assert err and SECRET not in text


# ---------------------------------------------------------------------- hostile patterns


@pytest.mark.parametrize("pattern", [r"(x+x+)+y", r"(a|aa)+$", r"^(\w+\s?)*$"])
def test_catastrophic_pattern_is_stopped_with_an_error(ws: Path, pattern: str) -> None:
    (ws / "bomb.txt").write_text("x" * 3000 + "\n" + "a" * 3000 + "!\n" + "word " * 2000 + "!\n")
    text, err = bounded(lambda: search(Workspace(ws), {"pattern": pattern}, time_limit=0.5))
    if err:
        assert "too slow" in text and "stopped after 0.5 s" in text
    else:  # the engine saw through it: fine, as long as it came back
        assert "bomb.txt" in text or "no matches" in text


def test_catastrophic_pattern_through_the_toolbox(ws: Path) -> None:
    (ws / "bomb.txt").write_text("x" * 5000 + "\n")
    box = ToolBox(ws, ["read"])
    text, err = bounded(lambda: asyncio.run(box.run("search_files", {"pattern": r"(x+x+)+y"})))
    assert err and "too slow" in text


def test_ordinary_patterns_still_work(ws: Path) -> None:
    (ws / "a.py").write_text("def parse(text):\n    return text\n")
    text, err = search(Workspace(ws), {"pattern": r"^def (\w+)\(", "glob": "*.py"})
    assert (text, err) == ("a.py:1: def parse(text):", False)
    assert search(Workspace(ws), {"pattern": "(unclosed"})[1]
