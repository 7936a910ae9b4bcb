"""The file tools against a workspace that changes under them (the trust boundary, issue 21).

Two parallel branches of a thread share one workspace (docs/format.md section 15): while one
branch's model writes `d/fN.txt` with the text editor, the other's shell swaps the directory
`d` for a symlink `d -> /outside` and back. The old tools checked the real path and then opened
it by name, so a swap between the two wrote outside (2 of 44 writes in the report). The tools
now open every component relative to the previous one's descriptor with O_NOFOLLOW: nothing may
land outside.

Each attack has its control: the same race against the old algorithm (kept here, `old_write`)
does land outside; `.gitignore`, `git.txt` and the siblings of protected paths still work; the
real paths behind the refused symlinks still work. The file tools run in the orchestrator's own
process, not in the sandbox, so there is nothing to parametrize by sandbox here.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.tools import PathRefused, ToolBox, Workspace, dirfd
from orchestrator.tools.search import search

EDITOR = "str_replace_based_edit_tool"
TRIES = 2000
SECONDS = 20.0
SECRET = "outside-secret-21"

# Swap `d` (a directory) and `d.swap` (a symlink to the outside) in one step, so `d` always
# exists: renameat2(RENAME_EXCHANGE) where the C library has it, else two renames through a
# third name (then `d` is briefly missing; a write in that gap may make a fresh `d`).
SWAPPER = r"""
import ctypes, ctypes.util, os, sys, time
ws, seconds = sys.argv[1], float(sys.argv[2])
os.chdir(ws)
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
exchange = getattr(libc, "renameat2", None)
def swap():
    if exchange is not None and exchange(-100, b"d", -100, b"d.swap", 2) == 0:
        return
    os.rename("d", "d.tmp"); os.rename("d.swap", "d"); os.rename("d.tmp", "d.swap")
print("ready", flush=True)
swaps, end = 0, time.monotonic() + seconds
while time.monotonic() < end and not os.path.exists("stop"):
    try:
        swap()
        swaps += 1
    except OSError:
        pass
print(swaps, flush=True)
"""


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with `d/` and the symlink `d.swap -> outside/`, and the outside folder."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (ws / "d").mkdir()
    (ws / "d" / "target.txt").write_text("MARK inside\n")
    (outside / "target.txt").write_text(f"MARK {SECRET}\n")
    (ws / "d.swap").symlink_to(outside)
    return ws, outside


def swap(ws: Path) -> None:
    """Exchange `d` and `d.swap` atomically (the racing branch's one move)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    exchange = getattr(libc, "renameat2", None)
    a, b = os.fsencode(ws / "d"), os.fsencode(ws / "d.swap")
    if exchange is not None and exchange(-100, a, -100, b, 2) == 0:
        return
    os.rename(ws / "d", ws / "d.tmp")
    os.rename(ws / "d.swap", ws / "d")
    os.rename(ws / "d.tmp", ws / "d.swap")


def landed_outside(outside: Path) -> list[str]:
    """What the writes put outside: any new file, or a changed target."""
    names = sorted(p.name for p in outside.iterdir() if p.name != "target.txt")
    if (outside / "target.txt").read_text() != f"MARK {SECRET}\n":
        names.append("target.txt (changed)")
    return names


def old_write(ws: Path, rel: str, text: str, between: Callable[[], None] = lambda: None) -> None:
    """The algorithm the tools used before: realpath and containment, then open by name with
    O_NOFOLLOW on the last component only. `between` runs between the check and the open."""
    real = Path(os.path.realpath(ws / rel))
    if not real.is_relative_to(ws.resolve()):
        raise PathRefused(f"{rel}: outside the workspace")
    between()
    fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


@pytest.fixture
def swapper(place: tuple[Path, Path]) -> Iterator[subprocess.Popen[str]]:
    """The other branch: a process swapping `d` for the symlink and back until told to stop."""
    ws, _ = place
    proc = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(ws), str(SECONDS + 10)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    yield proc
    (ws / "stop").touch()
    proc.wait(30)


def stop(proc: subprocess.Popen[str], ws: Path) -> int:
    """Stop the swapper; how many swaps it made."""
    (ws / "stop").touch()
    out, _ = proc.communicate(timeout=30)
    return int(out.strip())


# ---------------------------------------------------------------------- the rename race


def test_the_swap_race_never_lands_outside(
    place: tuple[Path, Path], swapper: subprocess.Popen[str]
) -> None:
    """Attack: hundreds of creates and edits through the ToolBox while `d` keeps being swapped."""
    ws, outside = place
    box = ToolBox(ws, ["read", "edit"])
    outcomes: dict[str, int] = {"written": 0, "symlink": 0, "other": 0}

    async def writes() -> int:
        end, tries = time.monotonic() + SECONDS, 0
        while tries < TRIES and time.monotonic() < end:
            for args in (
                {"command": "create", "path": f"d/f{tries}.txt", "file_text": "x"},
                {
                    "command": "str_replace",
                    "path": "d/target.txt",
                    "old_str": "MARK",
                    "new_str": "MARK!",  # written through the symlink, it would change outside
                },
            ):
                text, err = await box.run(EDITOR, args)
                kind = "symlink" if "symbolic link" in text else "other"  # the swap was seen
                outcomes["written" if not err else kind] += 1
            tries += 1
        return tries

    tries = asyncio.run(writes())
    swaps = stop(swapper, ws)
    assert landed_outside(outside) == [], outcomes
    assert tries >= 100 and swaps > 0, (tries, swaps)
    # The race was really run: some calls met the symlink, some the directory.
    assert outcomes["symlink"] > 0 and outcomes["written"] > 0, outcomes


def test_control_the_old_algorithm_lands_outside_in_the_same_race(
    place: tuple[Path, Path], swapper: subprocess.Popen[str]
) -> None:
    """Control: the same race against the old check-then-open writes outside."""
    ws, outside = place
    end, tries = time.monotonic() + SECONDS, 0
    while tries < TRIES * 2 and time.monotonic() < end and not landed_outside(outside):
        with contextlib.suppress(OSError, PathRefused):
            old_write(ws, f"d/f{tries}.txt", "x")
        tries += 1
    stop(swapper, ws)
    assert landed_outside(outside), f"no write landed outside in {tries} tries"


def test_control_a_swap_between_check_and_open_defeats_the_old_algorithm(
    place: tuple[Path, Path],
) -> None:
    """Control, deterministic: the swap made exactly between the check and the open."""
    ws, outside = place
    old_write(ws, "d/f.txt", "x", between=lambda: swap(ws))
    assert landed_outside(outside) == ["f.txt"]


@pytest.mark.parametrize("at", [1, 2, 3])
def test_a_swap_before_any_open_of_the_tool_never_lands_outside(
    place: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, at: int
) -> None:
    """Attack, deterministic: the swap made just before the tool's `at`-th open below the root
    (the directory `d`, then the file, then the reopen of an existing file)."""
    ws, outside = place
    box = ToolBox(ws, ["read", "edit"])
    box.workspace.root_fd()  # the root is opened before the race starts
    real_open, calls = os.open, [0]

    def racing_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if dir_fd is not None:
            calls[0] += 1
            if calls[0] == at:
                swap(ws)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(dirfd.os, "open", racing_open)
    results = [
        asyncio.run(box.run(EDITOR, {"command": "create", "path": "d/new.txt", "file_text": "x"})),
        asyncio.run(
            box.run(
                EDITOR,
                {
                    "command": "str_replace",
                    "path": "d/target.txt",
                    "old_str": "MARK",
                    "new_str": "X",
                },
            )
        ),
    ]
    monkeypatch.undo()
    assert landed_outside(outside) == [], results
    # What was written went into the real directory, wherever the swap left its name.
    assert all(err or "d/" in text for text, err in results)


# ---------------------------------------------------------------------- .git


@pytest.mark.parametrize(
    "args",
    [
        {"command": "view", "path": ".git/config"},
        {"command": "view", "path": ".git"},
        {"command": "create", "path": ".git/hooks/pre-commit", "file_text": "#!/bin/sh\nevil\n"},
        {"command": "create", "path": ".git", "file_text": "gitdir: /elsewhere\n"},
        {"command": "str_replace", "path": ".git/config", "old_str": "bare", "new_str": "x"},
        {"command": "insert", "path": "sub/.git/config", "insert_line": 0, "insert_text": "x"},
        {"command": "view", "path": "sub/.git/config"},
        {"command": "create", "path": "sub/.git/HEAD", "file_text": "x"},
        {"command": "create", "path": "src/../.git/config", "file_text": "x"},
        {"command": "view", "path": ".GIT/config"},
    ],
)
def test_dot_git_is_refused(tmp_path: Path, args: dict[str, Any]) -> None:
    """Attack: read or write the repository's metadata, at the top or in a subfolder."""
    for git in (tmp_path / ".git", tmp_path / "sub" / ".git"):
        git.mkdir(parents=True)
        (git / "config").write_text("[core]\n\tbare = false\n")
    box = ToolBox(tmp_path, ["read", "edit"])
    text, err = asyncio.run(box.run(EDITOR, args))
    assert err and "`.git` is the repository's metadata" in text, text
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    assert not (tmp_path / ".git" / "hooks").exists()
    assert not (tmp_path / "sub" / ".git" / "HEAD").exists()


def test_control_gitignore_and_git_txt_work(tmp_path: Path) -> None:
    box = ToolBox(tmp_path, ["read", "edit"])
    for path in (".gitignore", "git.txt", "sub/.gitattributes", "a.git/x", ".github/ci.yml"):
        text, err = asyncio.run(
            box.run(EDITOR, {"command": "create", "path": path, "file_text": "ok"})
        )
        assert not err, text
        text, err = asyncio.run(box.run(EDITOR, {"command": "view", "path": path}))
        assert not err and "ok" in text


def test_search_neither_walks_into_nor_searches_dot_git(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("needle\n")
    (tmp_path / "sub" / ".git").mkdir(parents=True)
    (tmp_path / "sub" / ".git" / "config").write_text("needle\n")
    (tmp_path / "sub" / "notes.txt").write_text("needle\n")
    w = Workspace(tmp_path)
    assert search(w, {"pattern": "needle"}) == ("sub/notes.txt:1: needle", False)
    text, err = search(w, {"pattern": "needle", "path": "sub/.git"})
    assert err and "`.git`" in text
    assert search(w, {"pattern": "needle", "path": "sub"}) == ("sub/notes.txt:1: needle", False)


# ---------------------------------------------------------------------- protected paths


@pytest.fixture
def guarded(tmp_path: Path) -> tuple[Path, Workspace]:
    """A workspace holding a thread store and a graph folder, both protected."""
    ws = tmp_path / "ws"
    for folder in ("store", "graphs", "graphs-notes", "store2"):
        (ws / folder).mkdir(parents=True)
        (ws / folder / "file.txt").write_text(f"needle in {folder}\n")
    return ws, Workspace(ws, protected=(ws / "store", str(ws / "graphs"), tmp_path))


@pytest.mark.parametrize(
    "args",
    [
        {"command": "view", "path": "store/file.txt"},
        {"command": "view", "path": "graphs"},
        {"command": "create", "path": "graphs/actor.py", "file_text": "import os\n"},
        {"command": "create", "path": "store/sub/new.db", "file_text": "x"},
        {"command": "str_replace", "path": "graphs/file.txt", "old_str": "needle", "new_str": "x"},
        {"command": "create", "path": "x/../store/file.txt", "file_text": "x"},
        {"command": "view", "path": "{ws}/graphs/file.txt"},
    ],
)
def test_protected_paths_are_refused(guarded: tuple[Path, Workspace], args: dict[str, Any]) -> None:
    """Attack: the thread store and the graph's folder, at and under them, by any spelling."""
    ws, workspace = guarded
    args = {k: v.format(ws=ws) if isinstance(v, str) else v for k, v in args.items()}
    box = ToolBox(workspace, ["read", "edit"])
    text, err = asyncio.run(box.run(EDITOR, args))
    assert err and "is the orchestrator's own" in text, text
    assert (ws / "graphs" / "file.txt").read_text() == "needle in graphs\n"
    assert not (ws / "graphs" / "actor.py").exists() and not (ws / "store" / "sub").exists()


def test_control_siblings_of_protected_paths_work(guarded: tuple[Path, Workspace]) -> None:
    ws, workspace = guarded
    box = ToolBox(workspace, ["read", "edit"])
    for path in ("graphs-notes/file.txt", "store2/file.txt", "file.txt", "storefile"):
        text, err = asyncio.run(
            box.run(EDITOR, {"command": "create", "path": path, "file_text": "ok"})
        )
        assert not err, text
    text, err = asyncio.run(box.run(EDITOR, {"command": "view", "path": "."}))
    assert not err and "graphs-notes/file.txt" in text and "graphs/" in text
    assert "graphs/file.txt" not in text  # the protected folder is named, not opened


def test_a_protected_path_at_or_above_the_root_does_not_apply(tmp_path: Path) -> None:
    """The workspace of a worktree lies inside the thread store: it stays usable."""
    ws = tmp_path / "store" / "worktrees" / "t1"
    ws.mkdir(parents=True)
    w = Workspace(ws, protected=(tmp_path / "store", ws, tmp_path / "elsewhere"))
    assert w.protected == ()
    assert w.write(w.locate("a.txt"), "ok") is False


def test_toolbox_passes_protected_paths_on(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    box = ToolBox(tmp_path, ["read", "edit"], protected=[tmp_path / "store"])
    text, err = asyncio.run(
        box.run(EDITOR, {"command": "create", "path": "store/x", "file_text": "x"})
    )
    assert err and "orchestrator's own" in text
    text, err = asyncio.run(
        ToolBox(tmp_path, ["edit"]).run(
            EDITOR, {"command": "create", "path": "store/x", "file_text": "x"}
        )
    )
    assert not err, "control: without the protection the same write is made"


def test_search_skips_protected_paths(guarded: tuple[Path, Workspace]) -> None:
    ws, workspace = guarded
    text, err = search(workspace, {"pattern": "needle"})
    assert not err
    assert text.splitlines() == [
        "graphs-notes/file.txt:1: needle in graphs-notes",
        "store2/file.txt:1: needle in store2",
    ]
    text, err = search(workspace, {"pattern": "needle", "path": "store"})
    assert err and "orchestrator's own" in text
    # Control: the same workspace without the protection finds all four.
    assert len(search(Workspace(ws), {"pattern": "needle"})[0].splitlines()) == 4


# ---------------------------------------------------------------------- symlinks, links, FIFOs


@pytest.mark.parametrize("points", ["inside", "outside"])
def test_a_symlink_anywhere_in_the_path_is_refused(place: tuple[Path, Path], points: str) -> None:
    ws, outside = place
    (ws / "real").mkdir()
    (ws / "real" / "target.txt").write_text("MARK real\n")
    (ws / "link").symlink_to(ws / "real" if points == "inside" else outside)
    (ws / "file-link").symlink_to((ws / "real" if points == "inside" else outside) / "target.txt")
    box = ToolBox(ws, ["read", "edit"])
    for args in (
        {"command": "view", "path": "link/target.txt"},
        {"command": "view", "path": "link"},
        {"command": "create", "path": "link/new.txt", "file_text": "x"},
        {"command": "create", "path": "link/deeper/new.txt", "file_text": "x"},
        {"command": "str_replace", "path": "link/target.txt", "old_str": "MARK", "new_str": "X"},
        {"command": "view", "path": "file-link"},
        {"command": "create", "path": "file-link", "file_text": "x"},
        {"command": "insert", "path": "file-link", "insert_line": 0, "insert_text": "x"},
    ):
        text, err = asyncio.run(box.run(EDITOR, args))
        assert err and "symbolic link" in text and SECRET not in text, (args, text)
    assert landed_outside(outside) == []
    assert sorted(p.name for p in (ws / "real").iterdir()) == ["target.txt"]
    assert (ws / "real" / "target.txt").read_text() == "MARK real\n"
    text, err = search(Workspace(ws), {"pattern": "MARK"})
    assert text.splitlines() == ["d/target.txt:1: MARK inside", "real/target.txt:1: MARK real"]
    assert search(Workspace(ws), {"pattern": "MARK", "path": "link"})[1]
    # Control: the real paths behind the links work.
    text, err = asyncio.run(box.run(EDITOR, {"command": "view", "path": "real/target.txt"}))
    assert not err and "MARK real" in text


def test_hard_links_and_fifos_are_still_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    os.link(secret, ws / "hard.txt")
    os.mkfifo(ws / "pipe")
    (ws / "plain.txt").write_text("plain\n")
    box = ToolBox(ws, ["read", "edit"])
    for path, why in (("hard.txt", "hard links"), ("pipe", "FIFO")):
        for args in (
            {"command": "view", "path": path},
            {"command": "create", "path": path, "file_text": "pwned"},
        ):
            text, err = asyncio.run(box.run(EDITOR, args))
            assert err and why in text and SECRET not in text, (args, text)
    assert secret.read_text() == SECRET
    # Control: an ordinary file beside them is read and written.
    assert not asyncio.run(box.run(EDITOR, {"command": "view", "path": "plain.txt"}))[1]
    assert not asyncio.run(
        box.run(EDITOR, {"command": "create", "path": "plain.txt", "file_text": "x"})
    )[1]


def test_the_root_descriptor_is_kept(tmp_path: Path) -> None:
    """The root is opened once: renaming it away and planting a symlink in its place later
    does not redirect the tools."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    box = ToolBox(ws, ["read", "edit"])
    assert not asyncio.run(box.run(EDITOR, {"command": "create", "path": "a", "file_text": "1"}))[1]
    ws.rename(tmp_path / "moved")
    ws.symlink_to(outside)
    assert not asyncio.run(box.run(EDITOR, {"command": "create", "path": "b", "file_text": "2"}))[1]
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "moved").iterdir()) == ["a", "b"]
