"""A full disk, a damaged store, a read-only store: clear messages, never a traceback.

The disks are real: a small tmpfs mounted by the test, and a read-only bind mount, both as root
(CI runs as root on Debian). Where mounting is not allowed the test is skipped.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.cli_helpers import LOOP_GRAPH, Project

BIG = "x" * 60_000  # each committed step stores its reply and body: ~120 kB an event


def reply(status: str, note: str, body: str = "") -> str:
    return f"---\n$status: {status}\nnote: {note}\n---\n{body}\n"


def _mount(*args: str) -> bool:
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    return done.returncode == 0


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 640 kB tmpfs: the store on it fills up after a few big steps."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or not _mount("-t", "tmpfs", "-o", "size=640k", "tmpfs", str(disk)):
        pytest.skip("needs root to mount a small tmpfs")
    yield disk
    _umount(disk)


def read_only(folder: Path) -> bool:
    """Make `folder` a read-only bind mount of itself (undone by `_umount`)."""
    if os.geteuid() != 0 or not _mount("--bind", str(folder), str(folder)):
        return False
    if not _mount("-o", "remount,ro,bind", str(folder)):
        _umount(folder)
        return False
    return True


def no_traceback(out: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in out.stderr and "sqlite3." not in out.stderr, out.stderr


def test_a_full_disk_stops_run_and_resume_with_a_message_and_keeps_the_saved_steps(
    tmp_path: Path, small_disk: Path
) -> None:
    project = Project(tmp_path)
    project.store = small_disk / "store"
    project.graph(LOOP_GRAPH, "loop")
    by_step = {str(n): reply("again", f"n{n}", BIG) for n in range(1, 13)}
    project.script(worker={**by_step, "13": reply("done", "z")})

    out = project.run("run", "loop", "fill it")
    no_traceback(out)
    assert out.returncode == 1, out.stderr
    db = small_disk / "store" / "threads.db"
    assert "is full" in out.stderr and str(db) in out.stderr
    assert "threads resume" in out.stderr
    (row,) = project.threads()
    saved = row["steps"]
    assert saved >= 1  # the steps before the disk filled up are kept

    again = project.run("threads", "resume", row["id"])
    no_traceback(again)
    assert again.returncode == 1 and "is full" in again.stderr
    assert project.threads()[0]["steps"] == saved

    assert _mount("-o", "remount,size=64m", str(small_disk))
    done = project.run("threads", "resume", row["id"])
    assert done.returncode == 0, done.stderr
    assert "Finished: z" in done.stdout
    events = project.events(row["id"])
    notes = [e["frontmatter"]["note"] for e in events if e["type"] == "StepCommitted"]
    assert notes == [f"n{n}" for n in range(1, 13)] + ["z"]


def test_export_to_a_full_disk_leaves_the_old_file_whole(tmp_path: Path, small_disk: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[reply("again", "a", BIG * 5), reply("done", "b")])
    assert project.run("run", "loop", "x").returncode == 0
    thread_id = project.threads()[0]["id"]
    target = small_disk / "rec.yaml"
    target.write_text("the old recording\n")
    (small_disk / "filler").write_bytes(b"\0" * 400_000)

    out = project.run("threads", "export", thread_id, "-o", str(target))
    no_traceback(out)
    assert out.returncode == 2 and str(target) in out.stderr
    assert target.read_text() == "the old recording\n"
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler", "rec.yaml"]

    (small_disk / "filler").unlink()
    out = project.run("threads", "export", thread_id, "-o", str(target))
    assert out.returncode == 0, out.stderr
    assert yaml.safe_load(target.read_text())["graph"] == "loop"
    assert sorted(p.name for p in small_disk.iterdir()) == ["rec.yaml"]


def _damage(db: Path) -> None:
    """Overwrite every page but the first (the header) with garbage."""
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    assert len(data) > page
    data[page:] = b"\xa5" * (len(data) - page)
    db.write_bytes(bytes(data))


def test_a_damaged_store_is_named_with_what_to_do(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[reply("again", "a"), reply("done", "b")])
    assert project.run("run", "loop", "x").returncode == 0
    thread_id = project.threads()[0]["id"]
    db = project.store / "threads.db"
    with contextlib.closing(sqlite3.connect(db)) as conn:  # everything into the main file
        conn.execute("PRAGMA journal_mode=DELETE")
    _damage(db)

    for args in (
        ["threads", "show", thread_id],
        ["threads", "export", thread_id],
        ["threads", "resume", thread_id],
        ["threads", "list"],
        ["run", "loop", "y"],
    ):
        out = project.run(*args)
        no_traceback(out)
        assert out.returncode == 1, (args, out.stderr)
        assert "damaged" in out.stderr and str(db) in out.stderr, (args, out.stderr)
        assert ".recover" in out.stderr


def test_a_store_that_is_not_a_database_is_named(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.store.mkdir()
    (project.store / "threads.db").write_text("this is not a database\n" * 200)
    for args in (["threads", "list"], ["threads", "show", "X"], ["run", "loop", "y"]):
        out = project.run(*args)
        no_traceback(out)
        assert out.returncode == 1, (args, out.stderr)
        assert "damaged" in out.stderr and "threads.db" in out.stderr


def test_a_store_on_a_read_only_file_system_can_be_read(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[reply("again", "a"), reply("done", "b")])
    assert project.run("run", "loop", "x").returncode == 0
    thread_id = project.threads()[0]["id"]
    before = sorted(p.name for p in project.store.iterdir())
    if not read_only(project.store):
        pytest.skip("needs root to make a read-only bind mount")
    try:
        listed = project.run("threads", "list")
        assert listed.returncode == 0, listed.stderr
        assert thread_id in listed.stdout
        shown = project.run("threads", "show", thread_id)
        assert shown.returncode == 0, shown.stderr
        assert "final: Finished: b" in shown.stdout
        exported = project.run("threads", "export", thread_id)
        assert exported.returncode == 0, exported.stderr
        assert yaml.safe_load(exported.stdout)["steps"][1]["output"] == reply("done", "b")
        drawn = project.run("graph", "loop", "--thread", thread_id)
        assert drawn.returncode == 0, drawn.stderr
        assert "worker" in drawn.stdout

        refused = project.run("run", "loop", "y")
        no_traceback(refused)
        assert refused.returncode == 1
        assert "cannot be written" in refused.stderr and str(project.store) in refused.stderr
        assert sorted(p.name for p in project.store.iterdir()) == before
    finally:
        _umount(project.store)


def test_reading_commands_create_no_store(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.graph(LOOP_GRAPH, "loop")
    listed = project.run("threads", "list")
    assert listed.returncode == 0 and "no threads" in listed.stdout
    shown = project.run("threads", "show", "01ABC")
    assert shown.returncode == 2 and "no thread '01ABC'" in shown.stderr
    assert not project.store.exists()
