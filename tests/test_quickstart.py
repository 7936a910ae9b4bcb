"""The README's quick start works exactly as written, in a fresh clone, in a fresh venv.

The test takes the first shell block of the README's "Quick start" section and runs it, as is,
with bash in a fresh clone of this repository, without an API key: it creates its own virtual
environment, installs the project into it from PyPI and replays the demo. That is slow (tens of
seconds) and needs the package index; when the index cannot be reached the test is skipped,
not failed, because then it says nothing about the quick start.

"A fresh clone" is `git clone` of this repository plus the files of the working tree that git
would commit (tracked and untracked-but-not-ignored), so that the test checks what is about to be
committed; in CI, which runs on a clean clone, that overlay changes nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
NETWORK_TROUBLE = (
    "Could not find a version",
    "No matching distribution",
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "ConnectTimeoutError",
)


def quick_start_blocks() -> list[str]:
    """The shell blocks of the README's "Quick start" section, in order."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"^## Quick start\s*$(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert found, "README.md has no '## Quick start' section"
    return re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```", found.group(1), re.MULTILINE | re.DOTALL)


def fresh_clone(dest: Path) -> Path:
    """`git clone` of this repository, with the working tree's uncommitted files laid over it."""
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(dest)], check=True)
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source, target = REPO / name, dest / name
        if source.is_file() and not source.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        elif not source.exists() and target.exists():
            target.unlink()  # deleted in the working tree, not yet committed
    return dest


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_the_quick_start_block_is_what_the_readme_promises() -> None:
    blocks = quick_start_blocks()
    assert len(blocks) >= 2
    first = blocks[0]
    assert "pip install" in first and "orchestrator run solve-issue" in first
    assert "--replay examples/solve-issue.recording.yaml" in first
    # The README keeps its test command.
    assert re.search(r"^python -m pytest$", README.read_text(), re.MULTILINE)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_quick_start_works_exactly_as_written(tmp_path: Path) -> None:
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: nothing to clone")
    block = quick_start_blocks()[0]
    clone = fresh_clone(tmp_path / "orchestrator")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "ORCHESTRATOR_", "PYTEST_")) and k != "VIRTUAL_ENV"
    }
    # The quick start must not depend on anything this test's own venv provides.
    venv_bin = str(Path(os.environ["VIRTUAL_ENV"]) / "bin") if "VIRTUAL_ENV" in os.environ else ""
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    if shutil.which("python3", path=env["PATH"]) is None:
        env["PATH"] = os.environ.get("PATH", "")  # the only python3 there is: keep it
    before = files_of(clone / "examples")
    result = subprocess.run(
        ["bash", "-e", "-c", block],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = result.stdout + result.stderr
    if result.returncode != 0 and any(sign in output for sign in NETWORK_TROUBLE):
        pytest.skip(f"the package index cannot be reached:\n{output[-2000:]}")
    assert result.returncode == 0, output[-4000:]
    assert (clone / ".venv" / "bin" / "orchestrator").exists()
    assert "step 3 reviewer → rejected" in result.stderr
    assert "completed in 6 steps" in result.stderr
    assert "Solved: median()" in result.stdout
    assert "Tests: passed." in result.stdout
    # A replay changes nothing: no branch, no edits in the clone.
    branches = subprocess.run(
        ["git", "branch", "--list", "orchestrator/*"], cwd=clone, capture_output=True, text=True
    )
    assert branches.stdout.strip() == ""
    assert files_of(clone / "examples") == before
