"""Finding `claude:NAME` by frontmatter `name:` reads every agent file of a repository's
`.claude/agents/` folder, which the repository (hostile) controls. The lookup reads only regular
files, and only their first 8 KiB: a FIFO would block `validate` and `run` forever, a huge file
would cost its size. Each attack runs beside a control that proves the lookup reads the folder
(the agent named in its frontmatter is found next to the trap)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from orchestrator.definition import agentfiles

GRAPH = textwrap.dedent(
    """\
    name: review
    description: one review
    roles:
      reviewer:
        extends: claude:code-reviewer
        frontmatter: {type: object, properties: {notes: {type: string}}, required: [notes]}
    graph:
      $START:
        _: {role: reviewer, prompt: "Review {{{$inputs.task}}}"}
      reviewer:
        _: {role: $END, prompt: "{{{notes}}}"}
    """
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "graphs").mkdir()
    (root / "graphs" / "review.yaml").write_text(GRAPH)
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    # sorted before the real agent, so the lookup meets the trap first
    (agents / "zz-reviewer.md").write_text("---\nname: code-reviewer\ndescription: d\n---\nGo.\n")
    return root


def validate(repo: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(repo.parent), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "validate", "graphs/review.yaml"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_control_the_agent_is_found_by_its_name(repo: Path) -> None:
    out = validate(repo)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_fifo_in_the_agents_folder_does_not_block_the_lookup(repo: Path) -> None:
    os.mkfifo(repo / ".claude" / "agents" / "aa-trap.md")
    out = validate(repo)  # opened, the FIFO would block until the 60 s timeout fails the test
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_huge_agent_file_is_read_only_at_its_head(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = repo / ".claude" / "agents" / "aa-big.md"
    with big.open("wb") as handle:  # sparse: 64 MiB that take no disk
        handle.write(b"---\nname: other\n---\n")
        handle.truncate(64 << 20)
    read: list[int] = []
    real_open = Path.open

    def counting_open(self: Path, *args: object, **kwargs: object) -> object:
        handle = real_open(self, *args, **kwargs)  # type: ignore[arg-type]
        if self == big:
            original = handle.read
            handle.read = lambda n=-1: read.append(n) or original(n)  # type: ignore[method-assign]
        return handle

    monkeypatch.setattr(Path, "open", counting_open)
    found = agentfiles.find_agent_file(
        agentfiles.KINDS["claude"], "code-reviewer", repo / "graphs" / "review.yaml"
    )
    assert found is not None and found.name == "zz-reviewer.md"
    assert read and all(0 < n <= 8192 for n in read), read  # never the whole file
