"""The README's quick start works exactly as written, in a fresh clone, from a plain install.

The session's `quick_start` fixture takes the first shell block of the README's "Quick start"
section and runs it, as is, with bash in a fresh clone of this repository, without an API key:
the block creates a clean virtual environment (no system site-packages), installs the clone into
it with a plain, non-editable `pip install .` (from the configured package index or mirror) and
replays the demo. That takes about a minute, so it happens once per test session, and the other
tests here reuse that environment: the installed command must find the bundled `solve-issue`
graph and role library inside the installed package, as an editable install finds them in the
repository's `graphs/` and `roles/`.

When the install fails, the tests fail with pip's output: a quick start that cannot install is
exactly what they are here to catch.

"A fresh clone" is `git clone` of this repository made to hold exactly the files of the working
tree that git would commit (tracked and untracked-but-not-ignored), so that the tests check what
is about to be committed; in CI, which runs on a clean clone, that changes nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
BUNDLED_ROLES = ["developer.md", "planner.md", "reviewer.md", "tester.md"]


def quick_start_blocks() -> list[str]:
    """The shell blocks of the README's "Quick start" section, in order."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"^## Quick start\s*$(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert found, "README.md has no '## Quick start' section"
    return re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```", found.group(1), re.MULTILINE | re.DOTALL)


def fresh_clone(dest: Path) -> Path:
    """`git clone` of this repository holding exactly the working tree's committable files."""
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(dest)], check=True)
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    names = {name for name in listed.split("\0") if name and (REPO / name).is_file()}
    for name in names:
        source, target = REPO / name, dest / name
        if not source.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for path in dest.rglob("*"):  # committed, but deleted or moved in the working tree
        name = path.relative_to(dest).as_posix()
        if path.is_file() and not name.startswith(".git/") and name not in names:
            path.unlink()
    return dest


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def user_env() -> dict[str, str]:
    """The environment of a user's shell: none of this test run's venv, keys or settings."""
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
    return env


@dataclass
class QuickStart:
    clone: Path
    result: subprocess.CompletedProcess[str]
    examples_before: dict[str, bytes]
    env: dict[str, str]

    @property
    def bin(self) -> Path:
        return self.clone / ".venv" / "bin"

    def output(self) -> str:
        return (self.result.stdout + self.result.stderr)[-4000:]

    def run(self, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """A command of the quick start's venv, run in `cwd`."""
        assert self.result.returncode == 0, f"the quick start failed:\n{self.output()}"
        return subprocess.run(
            [str(self.bin / argv[0]), *argv[1:]],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )


@pytest.fixture(scope="session")
def quick_start(tmp_path_factory: pytest.TempPathFactory) -> QuickStart:
    """The README's first quick-start block, run as written in a fresh clone (once a session)."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: nothing to clone")
    block = quick_start_blocks()[0]
    clone = fresh_clone(tmp_path_factory.mktemp("quickstart") / "orchestrator")
    env = user_env()
    before = files_of(clone / "examples")
    result = subprocess.run(
        ["bash", "-e", "-c", block],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return QuickStart(clone, result, before, env)


def test_the_quick_start_block_is_what_the_readme_promises() -> None:
    blocks = quick_start_blocks()
    assert len(blocks) >= 2
    first = blocks[0]
    assert "python3 -m venv .venv" in first and "--system-site-packages" not in first
    assert re.search(r"^pip install \.$", first, re.MULTILINE), "a plain install, not editable"
    assert "orchestrator run solve-issue" in first
    assert "--replay examples/solve-issue.recording.yaml" in first
    # The README keeps its test command.
    assert re.search(r"^python -m pytest$", README.read_text(), re.MULTILINE)


def test_the_quick_start_works_exactly_as_written(quick_start: QuickStart) -> None:
    result, clone = quick_start.result, quick_start.clone
    assert result.returncode == 0, quick_start.output()
    assert (quick_start.bin / "orchestrator").exists()
    assert "step 3 reviewer → rejected" in result.stderr
    assert "completed in 6 steps" in result.stderr
    # The final message.
    assert "Solved: median()" in result.stdout
    assert "Tests: passed." in result.stdout
    # A replay changes nothing: no branch, no edits in the clone.
    branches = subprocess.run(
        ["git", "branch", "--list", "orchestrator/*"], cwd=clone, capture_output=True, text=True
    )
    assert branches.stdout.strip() == ""
    assert files_of(clone / "examples") == quick_start.examples_before


def test_the_install_is_plain_and_carries_the_bundled_graphs_and_roles(
    quick_start: QuickStart, tmp_path: Path
) -> None:
    """The package, its graphs and its roles come from site-packages, not from the clone."""
    probe = (
        "import json, orchestrator, importlib.metadata as m, importlib.resources as r\n"
        "print(json.dumps({'package': orchestrator.__file__,\n"
        "    'graphs': sorted(p.name for p in r.files('orchestrator._graphs').iterdir()),\n"
        "    'roles': sorted(p.name for p in r.files('orchestrator._roles').iterdir()),\n"
        "    'graphs_dir': str(r.files('orchestrator._graphs')),\n"
        "    'direct_url': m.distribution('orchestrator').read_text('direct_url.json')}))\n"
    )
    out = quick_start.run("python", "-c", probe, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    site = quick_start.clone / ".venv" / "lib"
    assert Path(found["package"]).is_relative_to(site), found
    assert Path(found["graphs_dir"]).is_relative_to(site), found
    assert "solve-issue.yaml" in found["graphs"]
    assert set(BUNDLED_ROLES) <= set(found["roles"])
    assert not json.loads(found["direct_url"] or "{}").get("dir_info", {}).get("editable")


def test_the_installed_command_finds_the_bundled_graph_and_roles(
    quick_start: QuickStart, tmp_path: Path
) -> None:
    """From a folder of its own, a user's graph extends the bundled roles, and `solve-issue`
    resolves by name; in the clone's root, `validate` checks ./graphs and ./roles."""
    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "second-look.yaml").write_text(
        "name: second-look\n"
        "description: The bundled reviewer, on opus.\n"
        "roles:\n"
        "  reviewer: { extends: reviewer, model: opus }\n"
        "graph:\n"
        "  $START: { _: { role: reviewer, prompt: 'Review: {{{$inputs.task}}}' } }\n"
        "  reviewer:\n"
        "    approved: { role: $END, prompt: 'Approved: {{{summary}}}' }\n"
        "    rejected: { role: $END, prompt: 'Rejected: {{{comments}}}' }\n",
        encoding="utf-8",
    )
    out = quick_start.run("orchestrator", "validate", cwd=tmp_path)
    assert out.returncode == 0 and "no problems" in out.stdout, out.stdout + out.stderr

    out = quick_start.run("orchestrator", "graph", "solve-issue", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("flowchart") and "tester" in out.stdout

    out = quick_start.run("orchestrator", "validate", cwd=quick_start.clone)
    assert out.returncode == 0 and "no problems" in out.stdout, out.stdout + out.stderr
