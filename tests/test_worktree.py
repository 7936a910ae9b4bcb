"""Git worktree isolation: threads that edit work on their own branch, never in the checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from orchestrator.cli import cli
from orchestrator.definition.loader import load_graph
from orchestrator.store.sqlite import SqliteStore
from orchestrator.vcs.worktrees import (
    Worktree,
    WorktreeError,
    commit_message,
    create_worktree,
    ensure_worktree,
    find_repo,
    finish_worktree,
    load_worktree,
    needs_isolation,
    uncommitted_changes,
)
from tests.solve_issue_scenario import GIT_ENV

# A role played by a small process that writes `fix.txt` in its working directory (the thread's
# workspace) and replies `done`; with SUSPEND_FIRST it asks for a person on its first call.
AGENT = textwrap.dedent(
    """
    import os, pathlib, sys
    sys.stdin.read()
    marker = pathlib.Path(os.environ["MARKER_PATH"])
    if os.environ.get("SUSPEND_FIRST") and not marker.exists():
        marker.write_text("asked")
        print("---\\n$status: $SUSPEND\\nreason: need a hand\\n---\\n")
        sys.exit(0)
    pathlib.Path("fix.txt").write_text("fixed in " + os.getcwd() + "\\n")
    print("---\\n$status: done\\n---\\nwrote fix.txt")
    """
)

GRAPH = """
name: edit-once
description: A worker that writes a file.
roles:
  worker:
    description: Writes a file
    goal: You write.
    tools: [TOOLS]
    actor: { command: [PYTHON, AGENT] }
    env: [MARKER_PATH, SUSPEND_FIRST]  # a child's environment is an allow-list
    sandbox: { writable: [STATE] }  # the agent keeps its state outside the workspace
    frontmatter:
      type: object
      properties: { $status: { const: done } }
      required: [$status]
graph:
  $START: { _: { role: worker, prompt: "Fix {{{$inputs.task}}}" } }
  worker: { done: { role: $END, prompt: "Done: wrote fix.txt" } }
"""


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True)
    for name, text in (files or {"README.md": "hello\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "--quiet", "--initial-branch=main")
    git(path, "add", "--all")
    git(path, "commit", "--quiet", "-m", "initial")
    return path


@pytest.fixture
def graph_file(tmp_path: Path) -> Path:
    """The edit-once graph, outside any repository; returns its path."""
    return write_graph(tmp_path, "edit")


def write_graph(tmp_path: Path, tools: str) -> Path:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    folder = tmp_path / f"graphs-{tools or 'none'}"
    folder.mkdir()
    path = folder / "edit-once.yaml"
    text = (
        GRAPH.replace("PYTHON", json.dumps(sys.executable))
        .replace("AGENT", json.dumps(str(agent)))
        .replace("TOOLS", tools)
        .replace("STATE", json.dumps(str(state_dir(tmp_path))))
    )
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def state_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "agent-state-dir"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(autouse=True)
def _agent_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MARKER_PATH", str(state_dir(tmp_path) / "agent-state"))


def run(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--format=%(refname:short)").split()


def only_thread(store: Path) -> tuple[str, str]:
    """(thread id, workspace) of the one thread in the store."""
    db = SqliteStore(store)
    try:
        (row,) = db.threads()
        return row.id, row.workspace
    finally:
        db.close()


# --------------------------------------------------------------------------- the command line


def test_a_thread_that_edits_works_on_its_own_branch(
    tmp_path: Path, graph_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD")
    store = tmp_path / "store"
    result = run(["run", str(graph_file), "it", "--store", str(store)], repo, monkeypatch)
    assert result.exit_code == 0, result.stderr
    thread_id, workspace = only_thread(store)
    branch = f"orchestrator/{thread_id}"
    worktree = store / "worktrees" / thread_id
    # The thread's recorded workspace is the worktree, so a resume works there too.
    assert Path(workspace) == worktree.resolve()
    # The work is committed on the branch ...
    assert git(repo, "show", f"{branch}:fix.txt") == f"fixed in {worktree.resolve()}"
    # one commit a step, then the thread's summary (docs/format.md section 20)
    assert git(repo, "log", "--format=%s", f"{head}..{branch}").splitlines() == [
        "edit-once: it",
        "step 1: worker -> done",
    ]
    assert git(repo, "rev-parse", f"{branch}~2") == head
    # ... and the checkout is exactly as it was.
    assert not (repo / "fix.txt").exists()
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "branch", "--show-current") == "main"
    # The final message names the branch and the files changed.
    assert "Done: wrote fix.txt" in result.stdout
    assert f"Branch {branch}: 1 file changed" in result.stdout
    assert "  A fix.txt" in result.stdout
    assert f"works on branch {branch}" in result.stderr


def test_the_default_store_inside_the_checkout_stays_out_of_git_status(
    tmp_path: Path, graph_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    monkeypatch.delenv("ORCHESTRATOR_HOME")
    result = run(["run", str(graph_file), "it"], repo, monkeypatch)
    assert result.exit_code == 0, result.stderr
    assert (repo / ".orchestrator" / "worktrees").is_dir()
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert not (repo / "fix.txt").exists()


def test_in_place_opts_out(
    tmp_path: Path, graph_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    store = tmp_path / "store"
    args = ["run", str(graph_file), "it", "--in-place", "--store", str(store)]
    result = run(args, repo, monkeypatch)
    assert result.exit_code == 0, result.stderr
    assert (repo / "fix.txt").read_text() == f"fixed in {repo.resolve()}\n"
    assert branches(repo) == ["main"]
    assert "Branch" not in result.stdout
    assert "works in place" in result.stderr


def test_a_folder_outside_git_is_used_in_place(
    tmp_path: Path, graph_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    result = run(
        ["run", str(graph_file), "it", "--store", str(tmp_path / "s")], folder, monkeypatch
    )
    assert result.exit_code == 0, result.stderr
    assert (folder / "fix.txt").exists()


def test_a_graph_that_only_reads_needs_no_worktree(tmp_path: Path) -> None:
    text = "\n".join(
        line
        for line in GRAPH.replace("tools: [TOOLS]", "tools: [read]").splitlines()
        if not line.strip().startswith(("actor:", "env:", "sandbox:"))
    )
    path = tmp_path / "reader.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    graph = load_graph(path)
    assert graph.roles["worker"].actor == "anthropic"  # a model that reads: nothing to isolate
    assert not needs_isolation(graph)


def test_a_command_actor_gets_a_worktree_whatever_its_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent process edits files without any tool set of ours (issue 22)."""
    graph_file = write_graph(tmp_path, "read")
    assert needs_isolation(load_graph(graph_file))
    repo = make_repo(tmp_path / "repo")
    result = run(["run", str(graph_file), "it", "--store", str(tmp_path / "s")], repo, monkeypatch)
    assert result.exit_code == 0, result.stderr
    assert not (repo / "fix.txt").exists()
    (branch,) = [b for b in branches(repo) if b != "main"]
    assert "fix.txt" in git(repo, "ls-tree", "--name-only", branch).split()


def test_a_replay_makes_no_worktree(
    tmp_path: Path, graph_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = tmp_path / "rec.yaml"
    recording.write_text(
        "recording: 1\ngraph: edit-once\ninputs: {task: it}\n"
        'steps:\n  - role: worker\n    output: "---\\n$status: done\\n---\\n"\n'
    )
    repo = make_repo(tmp_path / "repo")
    args = ["run", str(graph_file), "--replay", str(recording), "--store", str(tmp_path / "s")]
    result = run(args, repo, monkeypatch)
    assert result.exit_code == 0, result.stderr
    assert branches(repo) == ["main"]
    assert not (repo / "fix.txt").exists()
    assert "no file" in result.stderr and "without --replay" in result.stderr


def test_uncommitted_changes_are_not_carried_over_and_say_so(
    tmp_path: Path, graph_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "README.md").write_text("edited, not committed\n")
    store = tmp_path / "store"
    result = run(["run", str(graph_file), "it", "--store", str(store)], repo, monkeypatch)
    assert result.exit_code == 0, result.stderr
    assert "uncommitted changes (1 path)" in result.stderr
    thread_id, _ = only_thread(store)
    assert git(repo, "show", f"orchestrator/{thread_id}:README.md") == "hello"
    assert (repo / "README.md").read_text() == "edited, not committed\n"


def test_json_result_carries_the_branch_and_files(
    tmp_path: Path, graph_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    args = ["run", str(graph_file), "it", "--json", "--store", str(tmp_path / "s")]
    result = run(args, repo, monkeypatch)
    assert result.exit_code == 0, result.stderr
    last = json.loads(result.stdout.strip().splitlines()[-1])
    assert last["state"] == "completed"
    assert last["worktree"]["branch"] == f"orchestrator/{last['thread']}"
    assert last["worktree"]["files"] == [{"status": "A", "path": "fix.txt"}]
    assert last["worktree"]["commit"] == git(repo, "rev-parse", last["worktree"]["branch"])


def test_resume_works_in_the_same_worktree_and_recreates_a_removed_one(
    tmp_path: Path, graph_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUSPEND_FIRST", "1")
    repo = make_repo(tmp_path / "repo")
    store = tmp_path / "store"
    first = run(["run", str(graph_file), "it", "--store", str(store)], repo, monkeypatch)
    assert first.exit_code == 3, first.stderr
    thread_id, workspace = only_thread(store)
    assert "the work so far is in" in first.stderr
    git(repo, "worktree", "remove", "--force", workspace)
    assert not Path(workspace).exists()
    second = run(["threads", "resume", thread_id, "--store", str(store)], repo, monkeypatch)
    assert second.exit_code == 0, second.stderr
    assert "recreated the thread's worktree" in second.stderr
    assert git(repo, "show", f"orchestrator/{thread_id}:fix.txt").endswith(thread_id)
    assert not (repo / "fix.txt").exists()


# --------------------------------------------------------------------------- the module


def test_find_repo(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"src/a.py": "x = 1\n"})
    assert find_repo(repo / "src") == repo.resolve()
    assert find_repo(tmp_path) is None
    assert find_repo(tmp_path / "missing") is None


def test_a_subdirectory_workspace_maps_into_the_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"pkg/mod.py": "x = 1\n", "README.md": "r\n"})
    tree = create_worktree(repo / "pkg", tmp_path / "store", "T1")
    assert tree.subdir == "pkg"
    assert tree.workspace == Path(tree.path) / "pkg"
    assert (tree.workspace / "mod.py").read_text() == "x = 1\n"
    (tree.workspace / "mod.py").write_text("x = 2\n")
    outcome = finish_worktree(tree, "change x\n")
    assert [(f.status, f.path) for f in outcome.files] == [("M", "pkg/mod.py")]
    assert load_worktree(tmp_path / "store", "T1") == tree


def test_a_repository_without_commits_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "--quiet")
    with pytest.raises(WorktreeError, match="no commits yet"):
        create_worktree(empty, tmp_path / "store", "T1")


def test_finishing_without_changes_marks_the_end_with_an_empty_commit(tmp_path: Path) -> None:
    """The steps committed the work already (one commit a step): the summary still marks
    where the thread ended, and no file is listed as changed."""
    repo = make_repo(tmp_path / "repo")
    tree = create_worktree(repo, tmp_path / "store", "T1")
    outcome = finish_worktree(tree, "nothing\n")
    assert outcome.commit == outcome.head and outcome.files == []
    assert git(repo, "rev-parse", f"{outcome.head}~1") == tree.base


def test_finishing_works_without_a_git_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = create_worktree(repo, tmp_path / "store", "T1")
    for name in GIT_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    (Path(tree.path) / "new.txt").write_text("n\n")
    outcome = finish_worktree(tree, "add new\n")
    assert outcome.commit is not None
    assert git(repo, "log", "-1", "--format=%an <%ae>", tree.branch) == (
        "orchestrator <orchestrator@localhost>"
    )


def test_uncommitted_changes_ignore_the_store(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".orchestrator").mkdir()
    (repo / ".orchestrator" / "threads.db").write_text("")
    assert uncommitted_changes(repo, ignore=repo / ".orchestrator") == []
    (repo / "new.txt").write_text("n\n")
    assert uncommitted_changes(repo, ignore=repo / ".orchestrator") == ["?? new.txt"]


def test_ensure_worktree_says_when_the_branch_is_gone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = create_worktree(repo, tmp_path / "store", "T1")
    assert ensure_worktree(tree) is False
    git(repo, "worktree", "remove", "--force", tree.path)
    git(repo, "branch", "-D", tree.branch)
    with pytest.raises(WorktreeError, match="both gone"):
        ensure_worktree(tree)


def test_commit_message_subject_comes_from_the_issue() -> None:
    text = commit_message(
        "solve-issue", "T1", {"issue": "\n# median() is wrong\n\nDetails."}, "Solved: it."
    )
    subject, _, body = text.partition("\n\n")
    assert subject == "solve-issue: median() is wrong"
    assert "thread T1" in body and "Solved: it." in body
    long = commit_message("g", "T1", {"task": "x" * 200}, "")
    assert len(long.splitlines()[0]) <= 72


def test_load_worktree_without_a_sidecar_is_none(tmp_path: Path) -> None:
    assert load_worktree(tmp_path, "nope") is None
    assert load_worktree(None, "nope") is None
    assert isinstance(Worktree("t", "r", "p", "b", "c").workspace, Path)


def test_no_api_key_stops_before_a_thread_or_branch_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    store = tmp_path / "store"
    result = run(["run", "solve-issue", "an issue", "--store", str(store)], repo, monkeypatch)
    assert result.exit_code == 2
    assert "ANTHROPIC_API_KEY" in result.stderr and "--replay" in result.stderr
    assert branches(repo) == ["main"]
    assert not (store / "worktrees").exists()


def test_a_new_store_in_a_checkout_stays_out_of_git_status(tmp_path: Path) -> None:
    """Even when no thread gets as far as a worktree (a run refused, an in-place thread)."""
    from orchestrator.run.session import open_store

    repo = make_repo(tmp_path / "repo")
    open_store(repo / ".orchestrator").close()
    assert len(list((repo / ".orchestrator").iterdir())) > 1  # the database and the marker
    assert git(repo, "status", "--porcelain") == ""
