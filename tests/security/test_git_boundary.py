"""Orchestrator's own git commands cannot be turned against it (the trust boundary, issue 21).

A thread that edits works in a git worktree under the store; the worktree is the roles'
workspace, so its `.git` file is theirs to rewrite. The attack: point it at a repository the
role wrote, whose configuration names a program (`core.fsmonitor`, a clean filter with a
`.gitattributes` naming it, `core.hooksPath` with a `post-commit` hook, `diff.external`); the
orchestrator's git, finishing the thread or pruning it, would run that program with the
orchestrator's whole environment, API key included.

Every planted program writes a marker file holding its environment. Each attack is run through a
real thread (`python -m orchestrator run`, a Python actor writing the files directly, a command
actor doing it inside the sandbox under bubblewrap and under the unshare fallback, a model role
with the edit tool through the real `anthropic` client and the fake Messages API) and through
`threads prune --dry-run`; afterwards the marker is absent, no secret is in any file, the thread
says its worktree was changed by a role, and the user's repository is as it was. Each control
runs the same planted program through a plain `git` the way orchestrator used to (discovering
the repository from the worktree, with its environment): the marker appears, with the key in it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from orchestrator.vcs.git_safe import WorktreeTampered, git_env, run_git
from orchestrator.vcs.worktrees import (
    Worktree,
    create_worktree,
    ensure_worktree,
    finish_worktree,
    load_worktree,
    sidecar_path,
    worktree_changes,
)
from tests.test_worktree import branches, git, make_repo

KEY = "sk-ant-test-git-boundary-5e1d7c"
DB_PASS = "db-pass-hunter2-8c41"
SECRETS = (KEY, DB_PASS)
VARIANTS = ("fsmonitor", "filter", "hooks", "diff")

# What a hostile role writes in its workspace: a repository of its own whose configuration names
# a program, and the worktree's `.git` pointing at it. Imported by the Python actor (the files
# written directly, no sandbox) and run as a command actor (inside the sandbox).
HOSTILE = textwrap.dedent(
    r"""
    import os, re, sys
    from pathlib import Path


    def plant(ws, variant):
        ws = Path(ws)
        marker = ws.parents[2] / f"planted-ran-{variant}"  # beside the store, on the host
        evil = ws / ".evil"
        gitdir = evil / "gitdir"
        for sub in ("objects", "refs/heads", "hooks"):
            (gitdir / sub).mkdir(parents=True, exist_ok=True)
        (gitdir / "HEAD").write_text("ref: refs/heads/main\n")
        prog = evil / "prog.sh"
        prog.write_text(f"#!/bin/sh\nenv > {marker}\ncat\n")
        prog.chmod(0o755)
        config = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        if variant == "fsmonitor":
            config += f"\tfsmonitor = sh {prog}\n"
        elif variant == "filter":
            config += f'[filter "x"]\n\tclean = sh {prog}\n'
            (ws / ".gitattributes").write_text("* filter=x\n")
        elif variant == "hooks":
            config += f"\thooksPath = {gitdir / 'hooks'}\n"
            hook = gitdir / "hooks" / "post-commit"
            hook.write_text(prog.read_text())
            hook.chmod(0o755)
        elif variant == "diff":
            config += f"[diff]\n\texternal = sh {prog}\n"
        (gitdir / "config").write_text(config)
        (ws / "fix.txt").write_text("the work\n")
        try:
            (ws / ".git").write_text(f"gitdir: {gitdir}\n")
            return "swapped"
        except OSError as exc:  # a sandbox that shows .git read-only
            return f"refused: {exc}"


    def attack(call):
        said = plant(call.workspace, call.inputs["task"])
        return {"$status": "done", "$body": said}


    if __name__ == "__main__":
        variant = re.search(r"variant-(\w+)", sys.stdin.read()).group(1)
        print("---\n$status: done\n---\n" + plant(os.getcwd(), variant))
    """
)

GRAPH = """
name: hostile
description: A role that rewrites its worktree's .git.
roles:
  worker:
    description: Plants a repository
    goal: You plant.
    ACTOR
    frontmatter:
      type: object
      properties: { $status: { const: done } }
      required: [$status]
graph:
  $START: { _: { role: worker, prompt: "Do {{{$inputs.task}}}" } }
  worker: { done: { role: $END, prompt: "Done." } }
"""


def write_graph(tmp_path: Path, actor: str) -> Path:
    folder = tmp_path / "graphs"
    folder.mkdir(exist_ok=True)
    (folder / "hostile_role.py").write_text(HOSTILE)
    text = textwrap.dedent(GRAPH).lstrip().replace("ACTOR", actor)
    path = folder / "hostile.yaml"
    path.write_text(text)
    return path


def python_actor(tmp_path: Path) -> Path:
    return write_graph(tmp_path, 'actor: { python: "hostile_role:attack" }')


def command_actor(tmp_path: Path) -> Path:
    script = json.dumps(str(tmp_path / "graphs" / "hostile_role.py"))
    return write_graph(tmp_path, f"actor: {{ command: [{json.dumps(sys.executable)}, {script}] }}")


def environ(**extra: str) -> dict[str, str]:
    """The orchestrator's environment: an API key and a database password among the rest."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    env.update(ANTHROPIC_API_KEY=KEY, DB_PASS=DB_PASS, **extra)
    return env


def cli(cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd,
        env=environ(**extra),
        capture_output=True,
        text=True,
        timeout=300,
    )


def naive_git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Git the way orchestrator ran it before: found from the folder, our whole environment."""
    env = {**environ(), "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )


def naive_trigger(worktree: Path, variant: str) -> None:
    """Have the plain git run what `variant` planted: the commands orchestrator ran (status,
    add, commit) and, for `diff.external`, a diff with a patch."""
    if variant == "fsmonitor":
        naive_git(worktree, "status")
    elif variant == "filter":
        naive_git(worktree, "add", "--all")
    elif variant == "hooks":
        naive_git(worktree, "add", "--all")
        naive_git(worktree, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "x")
    elif variant == "diff":
        naive_git(worktree, "add", "--all")
        (worktree / "fix.txt").write_text("changed\n")
        naive_git(worktree, "diff")


def marker(tmp_path: Path, variant: str) -> Path:
    return tmp_path / f"planted-ran-{variant}"


def assert_no_secret_anywhere(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            for secret in SECRETS:
                assert secret.encode() not in data, f"{path} holds a secret"


def the_thread(store: Path) -> str:
    (sidecar,) = (store / "worktrees").glob("*.json")
    return sidecar.stem


def assert_refused_and_untouched(
    tmp_path: Path, repo: Path, store: Path, run: subprocess.CompletedProcess[str], variant: str
) -> Path:
    """The attack's run: nothing planted ran, the thread says why nothing was committed, the
    user's repository is as it was. Returns the worktree (for the control)."""
    assert not marker(tmp_path, variant).exists(), "a planted program ran"
    assert_no_secret_anywhere(tmp_path)
    assert "the worktree's .git was changed by a role" in run.stderr, run.stderr
    assert "not committed" in run.stderr and "not used" in run.stderr
    thread = the_thread(store)
    head = git(repo, "rev-parse", "main")
    assert git(repo, "rev-parse", f"orchestrator/{thread}") == head  # nothing committed
    assert git(repo, "status", "--porcelain") == ""
    assert set(branches(repo)) == {"main", f"orchestrator/{thread}"}
    return store / "worktrees" / thread


def assert_control_runs(tmp_path: Path, worktree: Path, variant: str) -> None:
    """The same planted program, run by a plain git, does run, and sees the secrets."""
    naive_trigger(worktree, variant)
    seen = marker(tmp_path, variant)
    assert seen.exists(), f"the control's git did not run the planted {variant} program"
    assert KEY in seen.read_text() and DB_PASS in seen.read_text()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


# --------------------------------------------------------------------------- whole threads


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_role_that_swaps_the_worktree_git_runs_nothing(
    tmp_path: Path, repo: Path, variant: str
) -> None:
    """The files written directly (a Python actor, no sandbox between it and the workspace)."""
    store = tmp_path / "store"
    run = cli(repo, "run", str(python_actor(tmp_path)), variant, "--store", str(store))
    assert run.returncode == 0, run.stderr
    worktree = assert_refused_and_untouched(tmp_path, repo, store, run, variant)
    assert (worktree / ".git").read_text().startswith(f"gitdir: {worktree}/.evil/")
    assert_control_runs(tmp_path, worktree, variant)


@pytest.mark.parametrize("variant", ["fsmonitor", "hooks"])
def test_a_sandboxed_command_that_swaps_the_worktree_git_runs_nothing(
    tmp_path: Path, repo: Path, mechanism: str, variant: str
) -> None:
    """The same from inside the sandbox. Should the sandbox show `.git` read-only the swap is
    refused there and the work is committed as usual; either way nothing planted runs."""
    store = tmp_path / "store"
    graph = command_actor(tmp_path)
    run = cli(
        repo,
        "run",
        str(graph),
        f"variant-{variant}",
        "--store",
        str(store),
        ORCHESTRATOR_SANDBOX_WITH=mechanism,
    )
    assert run.returncode == 0, run.stderr
    thread = the_thread(store)
    worktree = store / "worktrees" / thread
    if (worktree / ".git").read_text().startswith(f"gitdir: {worktree}/.evil/"):
        assert_refused_and_untouched(tmp_path, repo, store, run, variant)
        assert_control_runs(tmp_path, worktree, variant)
    else:  # the sandbox kept the link: the work is committed, and still nothing planted ran
        assert not marker(tmp_path, variant).exists()
        assert "fix.txt" in git(repo, "ls-tree", "--name-only", f"orchestrator/{thread}")
        assert_no_secret_anywhere(tmp_path)


@pytest.fixture
def server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


def test_a_model_with_the_edit_tool_that_swaps_the_worktree_git_runs_nothing(
    tmp_path: Path, repo: Path, server: FakeAnthropic
) -> None:
    """An edit-only role played through the real `anthropic` client: it writes, with the file
    tool alone, a repository whose `core.fsmonitor` runs a shell script, and the `.git` file.
    Should the file tool refuse `.git`, the work is committed as usual, and nothing runs."""
    store = tmp_path / "store"
    graph = write_graph(tmp_path, "tools: [edit]")
    worktree_of = store / "worktrees"
    seen = marker(tmp_path, "fsmonitor")

    def files(ws: Path) -> list[tuple[str, str]]:
        gitdir = ws / ".evil" / "gitdir"
        return [
            (".evil/gitdir/HEAD", "ref: refs/heads/main\n"),
            (".evil/gitdir/objects/info/keep", ""),
            (".evil/gitdir/refs/heads/.keep", ""),
            (".evil/prog.sh", f"env > {seen}\ncat\n"),
            (".evil/gitdir/config", f"[core]\n\tfsmonitor = sh {ws}/.evil/prog.sh\n"),
            ("fix.txt", "the work\n"),
            (".git", f"gitdir: {gitdir}\n"),
        ]

    # The thread's id (hence its worktree's path) is known once it starts: the writes are
    # answered as the requests come, from the workspace the first request names.
    def handler(body: dict[str, object]) -> FakeResponse:
        done = sum(
            1
            for m in body["messages"]  # type: ignore[attr-defined]
            for b in (m["content"] if isinstance(m["content"], list) else [])
            if isinstance(b, dict) and b.get("type") == "tool_result"
        )
        (ws,) = [p for p in worktree_of.iterdir() if p.is_dir()]
        todo = files(ws)
        if done < len(todo):
            path, text = todo[done]
            return FakeResponse.tool_use(
                "str_replace_based_edit_tool",
                {"command": "create", "path": path, "file_text": text},
                id=f"toolu_{done}",
            )
        return FakeResponse.text("---\n$status: done\n---\nPlanted.")

    server.handler = handler
    run = cli(
        repo, "run", str(graph), "plant", "--store", str(store), ANTHROPIC_BASE_URL=server.url
    )
    assert run.returncode == 0, run.stderr
    thread = the_thread(store)
    worktree = worktree_of / thread
    if (worktree / ".git").read_text().startswith(f"gitdir: {worktree}/.evil/"):
        assert_refused_and_untouched(tmp_path, repo, store, run, "fsmonitor")
        assert_control_runs(tmp_path, worktree, "fsmonitor")
    else:  # the file tool refused to write .git
        assert not seen.exists()
        assert "fix.txt" in git(repo, "ls-tree", "--name-only", f"orchestrator/{thread}")


def test_a_model_with_the_shell_tool_that_swaps_the_worktree_git_runs_nothing(
    tmp_path: Path, repo: Path, server: FakeAnthropic, mechanism: str
) -> None:
    """The swap as one bash command of a model role, inside the sandbox (bubblewrap, and the
    unshare fallback). Should the sandbox show `.git` read-only, the command fails there and
    the work is committed as usual; either way nothing planted runs."""
    store = tmp_path / "store"
    graph = write_graph(tmp_path, "tools: [shell]")
    seen = marker(tmp_path, "fsmonitor")
    command = (
        "mkdir -p .evil/gitdir/objects .evil/gitdir/refs/heads"
        " && printf 'ref: refs/heads/main\\n' > .evil/gitdir/HEAD"
        f" && printf '#!/bin/sh\\nenv > {seen}\\ncat\\n' > .evil/prog.sh"
        " && printf '[core]\\n\\tfsmonitor = sh %s/.evil/prog.sh\\n' \"$PWD\" > .evil/gitdir/config"
        " && echo work > fix.txt"
        " && printf 'gitdir: %s/.evil/gitdir\\n' \"$PWD\" > .git"
    )
    server.reply(FakeResponse.tool_use("bash", {"command": command}, id="toolu_1"))
    server.reply_text("---\n$status: done\n---\nPlanted.")
    run = cli(
        repo,
        "run",
        str(graph),
        "plant",
        "--store",
        str(store),
        ANTHROPIC_BASE_URL=server.url,
        ORCHESTRATOR_SANDBOX_WITH=mechanism,
    )
    assert run.returncode == 0, run.stderr
    thread = the_thread(store)
    worktree = store / "worktrees" / thread
    assert (worktree / ".evil" / "gitdir" / "config").is_file(), "the command did not run"
    if (worktree / ".git").read_text().startswith(f"gitdir: {worktree}/.evil/"):
        assert_refused_and_untouched(tmp_path, repo, store, run, "fsmonitor")
        assert_control_runs(tmp_path, worktree, "fsmonitor")
    else:  # the sandbox kept the link
        assert not seen.exists()
        assert "fix.txt" in git(repo, "ls-tree", "--name-only", f"orchestrator/{thread}")


def test_prune_reports_a_swapped_worktree_and_runs_nothing_in_it(
    tmp_path: Path, repo: Path
) -> None:
    store = tmp_path / "store"
    run = cli(repo, "run", str(python_actor(tmp_path)), "fsmonitor", "--store", str(store))
    assert run.returncode == 0, run.stderr
    worktree = store / "worktrees" / the_thread(store)
    for args in (["--dry-run"], ["--dry-run", "--branches"], [], ["--branches"]):
        pruned = cli(repo, "threads", "prune", *args, "--store", str(store))
        assert "error: the worktree's .git was changed by a role" in pruned.stdout, pruned
        assert not marker(tmp_path, "fsmonitor").exists()
        assert worktree.is_dir()  # reported and skipped, never removed by git
    assert len(branches(repo)) == 2  # nor its branch deleted
    assert_no_secret_anywhere(tmp_path)
    assert_control_runs(tmp_path, worktree, "fsmonitor")


def test_a_swapped_worktree_is_not_resumed(tmp_path: Path, repo: Path) -> None:
    """The link is checked before a thread works in its worktree again."""
    tree = create_worktree(repo, tmp_path / "store", "T1")
    assert ensure_worktree(tree) is False  # the control: the link as git made it
    evil = Path(tree.path) / ".evil"
    subprocess.run(["git", "init", "-q", str(evil)], check=True)
    (Path(tree.path) / ".git").write_text(f"gitdir: {evil}/.git\n")
    with pytest.raises(WorktreeTampered, match="changed by a role"):
        ensure_worktree(tree)


# --------------------------------------------------------------------------- the link check


def swap_for_a_repository(tree: Worktree) -> None:
    """Replace the worktree's `.git` file by a whole repository of the role's own."""
    dot = Path(tree.path) / ".git"
    dot.unlink()
    subprocess.run(["git", "init", "-q", "--separate-git-dir", str(dot), str(tree.path)])


@pytest.mark.parametrize(
    "tamper",
    [
        lambda tree: (Path(tree.path) / ".git").write_text("gitdir: /somewhere/else\n"),
        lambda tree: (Path(tree.path) / ".git").write_text(f"gitdir: {tree.gitdir}\n\n#x\n"),
        lambda tree: (Path(tree.path) / ".git").write_text(f"gitdir: {tree.path}/../x\n"),
        swap_for_a_repository,
    ],
    ids=["elsewhere", "extra-lines", "relative", "a-repository"],
)
def test_every_change_of_the_link_is_refused(tmp_path: Path, repo: Path, tamper: object) -> None:
    tree = create_worktree(repo, tmp_path / "store", "T1")
    (Path(tree.path) / "fix.txt").write_text("work\n")
    assert worktree_changes(tree) == ["?? fix.txt"]  # the control: git runs on a sound link
    tamper(tree)  # type: ignore[operator]
    with pytest.raises(WorktreeTampered, match="changed by a role"):
        worktree_changes(tree)
    with pytest.raises(WorktreeTampered):
        finish_worktree(tree, "x\n")
    assert git(repo, "rev-parse", tree.branch) == tree.base


def test_an_older_sidecar_without_the_link_is_still_checked(tmp_path: Path, repo: Path) -> None:
    store = tmp_path / "store"
    tree = create_worktree(repo, store, "T1")
    assert tree.gitdir and tree.common
    old = {k: v for k, v in json.loads(sidecar_path(store, "T1").read_text()).items()}
    del old["gitdir"], old["common"]
    sidecar_path(store, "T1").write_text(json.dumps(old))
    loaded = load_worktree(store, "T1")
    assert loaded is not None and loaded.gitdir == ""
    (Path(tree.path) / "fix.txt").write_text("work\n")
    assert worktree_changes(loaded) == ["?? fix.txt"]  # found from the repository's side
    (Path(tree.path) / ".git").write_text("gitdir: /somewhere/else\n")
    with pytest.raises(WorktreeTampered):
        worktree_changes(loaded)


# --------------------------------------------------------------------------- the runner itself


def plant_in_config(repo: Path, tmp_path: Path) -> Path:
    """Programs in the repository's own configuration, as a role could write them if the sandbox
    failed to show `.git` read-only: fsmonitor, hooks, an external diff, a pager."""
    seen = tmp_path / "planted-ran-config"
    prog = tmp_path / "prog.sh"
    prog.write_text(f"#!/bin/sh\nenv >> {seen}\ncat >/dev/null\n")
    prog.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in ("post-commit", "pre-commit", "post-checkout"):
        (hooks / name).write_text(prog.read_text())
        (hooks / name).chmod(0o755)
    for key, value in (
        ("core.fsmonitor", f"sh {prog}"),
        ("core.hooksPath", str(hooks)),
        ("diff.external", f"sh {prog}"),
        ("core.pager", f"sh {prog}"),
    ):
        git(repo, "config", key, value)
    return seen


def test_the_runner_switches_off_programs_the_configuration_names(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    seen = plant_in_config(repo, tmp_path)
    (repo / "README.md").write_text("changed\n")
    ident = ["-c", "user.name=x", "-c", "user.email=x@x"]
    for args in (
        ["status"],
        ["diff"],
        ["log", "-p", "-1"],
        ["add", "--all"],
        [*ident, "commit", "-qm", "x"],
        ["checkout", "-q", "-b", "other"],
    ):
        run_git(args, repo)
    assert not seen.exists(), seen.read_text()
    # The control: the same commands through a plain git run the planted programs.
    (repo / "README.md").write_text("changed again\n")
    naive_git(repo, "status")
    naive_git(repo, "diff")
    assert seen.exists() and KEY in seen.read_text()


def test_git_gets_no_secret_in_its_environment(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter the person configured in their global configuration runs (it is theirs: the
    planted-but-allowed way to see git's environment); it sees PATH and HOME, and no key or
    password. The control: run by a plain git as before, the same filter sees both."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("DB_PASS", DB_PASS)
    dump = tmp_path / "filter-env"
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    git(repo, "config", "--global", "filter.dump.clean", f"sh -c 'env > {dump}; cat'")
    (repo / ".gitattributes").write_text("*.txt filter=dump\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    dump.unlink(missing_ok=True)
    tree = create_worktree(repo, tmp_path / "store", "T1")
    (Path(tree.path) / "fix.txt").write_text("the work\n")
    outcome = finish_worktree(tree, "fix\n")
    assert outcome.commit is not None
    seen = dump.read_text()
    assert "PATH=" in seen and "GIT_CONFIG_NOSYSTEM=1" in seen
    assert KEY not in seen and DB_PASS not in seen and "ANTHROPIC" not in seen
    assert set(git_env()) <= {
        "PATH",
        "HOME",
        "XDG_CONFIG_HOME",
        "GIT_CONFIG_GLOBAL",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "TZ",
        "GIT_TERMINAL_PROMPT",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_OPTIONAL_LOCKS",
        "LC_ALL",
        "LANG",
    }
    dump.unlink()
    (Path(tree.path) / "more.txt").write_text("more\n")
    naive_git(Path(tree.path), "add", "--all")
    assert KEY in dump.read_text() and DB_PASS in dump.read_text()


def test_a_git_planted_in_the_worktree_is_not_the_git_that_runs(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person whose PATH holds `.` (or an empty entry): git runs in the worktree, where a role
    may have written a `git` of its own. Only PATH's absolute entries are searched."""
    tree = create_worktree(repo, tmp_path / "store", "T1")
    seen = marker(tmp_path, "path")
    fake = Path(tree.path) / "git"
    fake.write_text(f"#!/bin/sh\nenv > {seen}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", ".:" + os.environ["PATH"])
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert worktree_changes(tree) == ["?? git"]  # the real git answered
    assert not seen.exists()
    # The control: a plain subprocess with that PATH, in the worktree, runs the planted one.
    subprocess.run(["git", "status"], cwd=tree.path, env=dict(os.environ), check=False)
    assert seen.exists() and KEY in seen.read_text()


def test_a_nested_repository_of_the_role_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A role may write a repository inside its worktree (committed as a gitlink when the work
    is): a plain `git status` runs `git status` inside it too, with its configuration."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    repo = make_repo(tmp_path / "repo")
    tree = create_worktree(repo, tmp_path / "store", "T1")
    seen = marker(tmp_path, "nested")
    nested = make_repo(Path(tree.path) / "sub")
    outcome = finish_worktree(tree, "with a nested repository\n")
    assert ("A", "sub") in [(f.status, f.path) for f in outcome.files]
    # A clean filter of the nested repository's own, for its own files: hooks and fsmonitor
    # are off in every git that git starts (`-c` is inherited); this is not.
    git(nested, "config", "filter.x.clean", f"sh -c 'env > {seen}; cat'")
    (nested / ".gitattributes").write_text("* filter=x\n")
    (nested / "README.md").write_text("HELLO\n")  # the same size: git must hash it to know
    assert worktree_changes(tree) == []
    assert run_git(["diff", "--quiet", "HEAD"], tree.path, check=False).returncode == 0
    assert not seen.exists()
    naive_git(Path(tree.path), "status")  # the control
    assert seen.exists() and KEY in seen.read_text()
