"""The sandbox's views of a thread, fixed when it starts (tools/boundary.py, the trust boundary).

Attacks, each beside a control that shows the same action succeeding where it is allowed (or
with the defence off), under bubblewrap and the `unshare` fallback:

- a `.git` file a role writes (`gitdir: /tmp/hostdir`) does not make the next sandbox show that
  host folder (its files, its unix sockets): the sandbox no longer reads the workspace's `.git`;
- in an in-place run (a folder holding the graph, its Python actor module, the store and a
  models file, and a repository or not) a role's processes cannot rewrite the module, the
  store, the models file, the graph file or `.git/config`, nor read the store, while a file
  next to them is written; a module changed on disk mid-thread is not imported again;
- a command actor whose interpreter is a virtual environment under `/tmp` (which the sandbox
  replaces by its own) finds its packages, and a process that cannot start says "inside the
  sandbox".
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator import run_thread
from orchestrator.actors.base import ActorError, ActRequest
from orchestrator.actors.command import CommandProcessActor
from orchestrator.definition.models import Role, Sandbox
from orchestrator.store.sqlite import SqliteStore
from orchestrator.tools import sandbox as sandboxing
from orchestrator.tools.boundary import Boundary, at_start
from orchestrator.tools.shell import Shell
from orchestrator.tools.toolbox import ToolBox
from orchestrator.tools.workspace import Workspace


@pytest.fixture
def durable() -> Iterator[Path]:
    """A folder outside /tmp (the sandbox hides /tmp whole, which would hide any attack)."""
    path = Path(tempfile.mkdtemp(prefix="views-test-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def shell(ws: Path, command: str, boundary: Boundary | None, **sandbox: object) -> str:
    setting = Sandbox(**sandbox) if sandbox else None  # type: ignore[arg-type]
    tool = Shell(Workspace(ws), sandbox=setting, role_name="r", boundary=boundary)
    text, _ = asyncio.run(tool.run({"command": command}))
    return text


# --------------------------------------------------------------------- gitdir: /tmp/hostdir


@pytest.fixture
def hostdir(tmp_path: Path) -> Iterator[Path]:
    """A host folder under /tmp with a secret file and a listening unix socket."""
    folder = tmp_path / "hostdir"
    folder.mkdir()
    (folder / "secret.txt").write_text("host-secret-71c3")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / "agent.sock"))
    listener.listen(8)
    listener.settimeout(0.1)
    yield folder
    listener.close()


PROBE = (
    'cat {d}/secret.txt; python3 -c "import socket; s = socket.socket(socket.AF_UNIX); '
    "s.connect('{d}/agent.sock'); print('connected')\""
)


def test_a_gitdir_a_role_writes_does_not_show_a_host_folder(
    mechanism: str, durable: Path, hostdir: Path
) -> None:
    """Attack: the role writes `.git` pointing at a host folder; the next command reads there."""
    ws = durable / "ws"
    ws.mkdir()
    fixed = at_start(ws, graph=None, store_dir=None, worktree=None)  # no repository at start
    shell(ws, f"echo 'gitdir: {hostdir}' > .git", fixed)
    assert (ws / ".git").read_text().strip() == f"gitdir: {hostdir}"  # the role's own file
    text = shell(ws, PROBE.format(d=hostdir), fixed)
    assert "host-secret" not in text and "connected" not in text, text


def test_a_worktrees_git_file_cannot_be_rewritten(
    mechanism: str, durable: Path, hostdir: Path
) -> None:
    """Attack: a `.git` that exists at thread start (a worktree's file) is read-only, so it
    cannot be pointed at a host folder, and it is never read again anyway."""
    repo, ws = durable / "repo", durable / "wt"
    git = ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "one"], cwd=repo, check=True)
    subprocess.run([*git, "worktree", "add", "-q", str(ws)], cwd=repo, check=True)
    fixed = at_start(ws, graph=None, store_dir=None, worktree=None)
    before = (ws / ".git").read_text()
    text = shell(ws, f"echo 'gitdir: {hostdir}' > .git; git log --oneline | wc -l", fixed)
    assert (ws / ".git").read_text() == before, text
    assert text.split()[-1] == "1", text  # git still works in the worktree
    text = shell(ws, PROBE.format(d=hostdir), fixed)
    assert "host-secret" not in text and "connected" not in text, text


def test_control_the_host_folder_is_reachable_when_made_visible(
    mechanism: str, durable: Path, hostdir: Path
) -> None:
    """Control: the same command reads the file and reaches the socket when the folder is
    deliberately visible (a `writable:` path), and reads the file once it is in the
    workspace: the probe can see what the attack looked for."""
    ws = durable / "ws"
    ws.mkdir()
    fixed = at_start(ws, graph=None, store_dir=None, worktree=None)
    text = shell(ws, PROBE.format(d=hostdir), fixed, writable=[str(hostdir)])
    assert "host-secret-71c3" in text and "connected" in text, text
    # What reading the `.git` file at each command made of it (the defence off): the folder
    # it names bound read-only into the sandbox, its socket reachable.
    shown = Boundary(fixed.root, git=(hostdir,))
    text = shell(ws, PROBE.format(d=hostdir), shown)
    assert "host-secret-71c3" in text and "connected" in text, text
    shutil.copy(hostdir / "secret.txt", ws / "secret.txt")
    assert "host-secret-71c3" in shell(ws, f"cat {ws}/secret.txt", fixed)


# --------------------------------------------------------------------- in-place runs

GRAPH = """\
name: inplace
description: A role's process attacks the orchestrator's files; a Python function runs after.
roles:
  attacker:
    description: Tries to change what the orchestrator runs next
    goal: Attack.
    actor: { command: [bash, attack.sh] }
    SANDBOX
    frontmatter:
      type: object
      properties: { results: { type: string } }
      required: [results]
  meddler:
    description: The test itself, changing the module on disk mid-thread
    goal: Meddle.
    actor: { python: "meddle:meddle" }
    frontmatter:
      type: object
      properties: { saw: { type: string } }
      required: [saw]
  picker:
    description: The graph's own Python code
    goal: Pick.
    actor: { python: "picker:pick" }
    frontmatter:
      type: object
      properties: { code: { type: string } }
      required: [code]
graph:
  $START:
    _: { role: attacker, prompt: "go" }
  attacker:
    _: { role: meddler, prompt: "meddle" }
  meddler:
    _: { role: picker, prompt: "pick" }
  picker:
    _: { role: $END, prompt: "{{{code}}}" }
"""

PICKER = 'def pick(call):\n    return {"code": "original"}\n'
MEDDLE = """\
from pathlib import Path


def meddle(call):
    module = Path(__file__).with_name("picker.py")
    saw = "original" if '"original"' in module.read_text() else "changed"
    module.write_text(EVIL_TEXT)
    return {"saw": saw}
""".replace("EVIL_TEXT", repr('def pick(call):\n    return {"code": "meddled"}\n'))

ATTACK = r"""
cat > /dev/null
try() { if sh -c "$2" 2>/dev/null; then echo "$1=ok"; else echo "$1=refused"; fi; }
{
try module "echo 'def pick(call): return {}' > picker.py"
try pycache "mkdir -p __pycache__ && : > __pycache__/picker.cpython-99.pyc"
try storeread "head -c 15 .orchestrator/threads.db | grep -q SQLite"
try store ": >> .orchestrator/threads.db"
try models "echo 'default: evil' > models.yaml"
try graph "echo 'name: evil' >> inplace.yaml"
try gitconfig "test -d .git && printf '[core]\n\tfsmonitor = touch /tmp/pwned\n' >> .git/config"
try rename "mv .git moved-git"
try control "echo fine > notes.txt"
} | tr '\n' ' ' > results.txt
printf -- '---\nresults: "%s"\n---\ndone\n' "$(cat results.txt)"
"""


def in_place_project(folder: Path, *, repo: bool, sandbox: str) -> Path:
    (folder / "inplace.yaml").write_text(GRAPH.replace("SANDBOX", sandbox))
    (folder / "picker.py").write_text(PICKER)
    (folder / "meddle.py").write_text(MEDDLE)
    (folder / "attack.sh").write_text(ATTACK)
    (folder / "models.yaml").write_text("default: sonnet\n")
    if repo:
        git = ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid"]
        subprocess.run([*git, "init", "-q"], cwd=folder, check=True)
        subprocess.run([*git, "add", "-A"], cwd=folder, check=True)
        subprocess.run([*git, "commit", "-q", "-m", "project"], cwd=folder, check=True)
    return folder


def run_in_place(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, str], str]:
    monkeypatch.setenv("ORCHESTRATOR_MODELS_FILE", str(folder / "models.yaml"))
    store = SqliteStore(folder / ".orchestrator")
    result = run_thread(
        folder / "inplace.yaml", {"task": "t"}, store=store, workspace=folder, in_place=True
    )
    assert result.state == "completed", result.reason
    results = dict(p.split("=") for p in (folder / "results.txt").read_text().split())
    return results, result.final or ""


@pytest.mark.parametrize("repo", [False, True], ids=["folder", "repository"])
def test_in_place_roles_cannot_change_the_orchestrators_files(
    mechanism: str, durable: Path, repo: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: the role rewrites the Python module (and plants bytecode), the store, the models
    file, the graph and `.git/config`, and moves `.git` away: all refused; the module that runs
    next is the one imported when the thread started, though the test edits it meanwhile."""
    folder = in_place_project(durable, repo=repo, sandbox="")
    config = (folder / ".git" / "config").read_text() if repo else ""
    results, final = run_in_place(folder, monkeypatch)
    for what in ("module", "pycache", "storeread", "store", "models", "graph", "rename"):
        assert results[what] == "refused", (what, results)
    assert results["gitconfig"] == "refused", results
    assert results["control"] == "ok" and (folder / "notes.txt").read_text() == "fine\n"
    assert (folder / "models.yaml").read_text() == "default: sonnet\n"
    assert "evil" not in (folder / "inplace.yaml").read_text()
    assert not (folder / "moved-git").exists()
    if repo:
        assert (folder / ".git" / "config").read_text() == config
    steps = SqliteStore(folder / ".orchestrator").threads()
    assert len(steps) == 1  # the store is intact
    assert "meddled" in (folder / "picker.py").read_text()  # the test's edit mid-thread...
    assert final == "original"  # ...was not imported: the code the thread started with ran


@pytest.mark.parametrize("repo", [False, True], ids=["folder", "repository"])
def test_control_without_a_sandbox_the_same_role_changes_them(
    durable: Path, repo: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control: with `sandbox: off` the same script rewrites the module, the models file and
    `.git/config`, reads the store and could write it: the probes see what they look for. The
    module it rewrote still is not what runs next."""
    folder = in_place_project(durable, repo=repo, sandbox="sandbox: off")
    results, final = run_in_place(folder, monkeypatch)
    for what in ("module", "storeread", "store", "models", "graph", "control"):
        assert results[what] == "ok", (what, results)
    assert results["gitconfig"] == ("ok" if repo else "refused"), results
    assert "fsmonitor" in (folder / "moved-git" / "config").read_text() if repo else True
    assert final == "original"


def test_the_file_tools_refuse_the_orchestrators_files(durable: Path) -> None:
    """Attack and control through the file tools of an in-place thread's boundary."""
    folder = in_place_project(durable, repo=True, sandbox="")
    from orchestrator.definition.loader import load_graph  # why: only this test loads the graph

    (folder / ".orchestrator").mkdir()
    (folder / ".orchestrator" / "threads.db").write_text("db")
    graph = load_graph(folder / "inplace.yaml")
    fixed = at_start(folder, graph=graph, store_dir=folder / ".orchestrator", worktree=None)
    box = ToolBox(folder, ["read", "edit"], boundary=fixed)
    for path in ("picker.py", ".orchestrator/threads.db", ".git/config", "inplace.yaml"):
        text, is_error = asyncio.run(
            box.run("str_replace_based_edit_tool", {"command": "view", "path": path})
        )
        assert is_error, (path, text)
    text, is_error = asyncio.run(
        box.run(
            "str_replace_based_edit_tool",
            {"command": "create", "path": "notes.txt", "file_text": "fine"},
        )
    )
    assert not is_error and (folder / "notes.txt").read_text() == "fine", text


# --------------------------------------------------------------------- a venv under /tmp


@pytest.fixture
def tmp_venv(tmp_path: Path) -> Path:
    """A virtual environment under /tmp with a package of its own in site-packages."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    found = list(venv.glob("lib/python*/site-packages"))
    assert found, list(venv.rglob("*"))[:20]
    (found[0] / "views_probe_pkg.py").write_text("WHERE = 'from the venv'\n")
    return venv


def agent_request(ws: Path) -> ActRequest:
    role = Role(description="d", goal="g", frontmatter={})
    return ActRequest(thread_id="T", step=1, role_name="agent", role=role, prompt="p", workspace=ws)


AGENT = (
    "import sys, views_probe_pkg; sys.stdin.read(); print('---\\n---\\n' + views_probe_pkg.WHERE)"
)


def test_a_venv_interpreter_under_tmp_finds_its_packages(
    mechanism: str, durable: Path, tmp_venv: Path
) -> None:
    python = str(tmp_venv / "bin" / "python")
    reply = asyncio.run(
        CommandProcessActor([python, "-c", AGENT], timeout=60).play(agent_request(durable))
    )
    assert "from the venv" in reply.text


def test_control_a_hidden_venv_fails_and_says_inside_the_sandbox(
    mechanism: str, durable: Path, tmp_venv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control: without the venv kept visible the same agent cannot start, and the error says
    where it failed."""
    monkeypatch.setattr(sandboxing, "visible_through", lambda argv, ws, policy: [])
    python = str(tmp_venv / "bin" / "python")
    with pytest.raises(ActorError) as caught:
        asyncio.run(
            CommandProcessActor([python, "-c", AGENT], timeout=60).play(agent_request(durable))
        )
    assert "inside the sandbox" in caught.value.message


def test_the_running_interpreters_prefix_stays_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    """The orchestrator's own environment under /tmp (CI's clone) stays readable."""
    monkeypatch.setattr(sys, "prefix", "/tmp/ci-clone/.venv")
    seen = sandboxing.visible_through(["true"], Path("/var/tmp"), sandboxing.Policy())
    assert Path("/tmp/ci-clone/.venv") in seen


# --------------------------------------------------------------------- moving a parent away

MOVE = "mv a b && mkdir -p a/flows && echo evil > a/flows/picker.py; echo done"


def nested(ws: Path) -> Boundary:
    (ws / "a" / "flows").mkdir(parents=True)
    (ws / "a" / "flows" / "picker.py").write_text(PICKER)
    root = Path(os.path.realpath(ws))
    return Boundary(root, read_only=(root / "a" / "flows",))


def test_a_protected_folder_cannot_be_swapped_by_moving_its_parent(
    mechanism: str, durable: Path
) -> None:
    """Attack: move the protected folder's parent away and put a folder of one's own in its
    place. The folders between the workspace and a protected path are mount points in the
    sandbox, which cannot be renamed."""
    fixed = nested(durable)
    text = shell(durable, MOVE, fixed)
    assert (durable / "a" / "flows" / "picker.py").read_text() == PICKER, text
    assert not (durable / "b").exists(), text


def test_control_without_the_pins_the_parent_moves(
    mechanism: str, durable: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control: with the folders in between not bound (the defence off), the same command
    replaces the protected file: the attack is real."""
    from orchestrator.tools import boundary  # why: to switch the one defence off

    monkeypatch.setattr(boundary, "_between", lambda path, writable: [])
    fixed = nested(durable)
    text = shell(durable, MOVE, fixed)
    assert (durable / "a" / "flows" / "picker.py").read_text() == "evil\n", text


# --------------------------------------------------------------------- committing on purpose

COMMIT = (
    "git -c user.name=T -c user.email=t@e.invalid commit -q --allow-empty -m two; "
    "git log --oneline | wc -l"
)


def test_git_metadata_is_writable_only_when_a_role_names_it(mechanism: str, durable: Path) -> None:
    """Attack: a role commits in an in-place repository (it writes `.git`): refused. Control:
    the same command works when the role's `writable:` names the `.git` folder, the one way
    to let a role commit; a wider `writable:` path does not open it."""
    git = ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid"]
    repo = durable / "repo"
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "one"], cwd=repo, check=True)
    fixed = at_start(repo, graph=None, store_dir=None, worktree=None)
    assert shell(repo, COMMIT, fixed).split()[-1] == "1"
    assert shell(repo, COMMIT, fixed, writable=[str(durable)]).split()[-1] == "1"
    assert shell(repo, COMMIT, fixed, writable=[str(repo / ".git")]).split()[-1] == "2"


def test_search_skips_a_store_that_is_not_a_hidden_folder(durable: Path) -> None:
    """Attack: a store named without a dot inside the workspace is searched for its contents.
    Control: the same text in a workspace file is found."""
    store = durable / "state"
    store.mkdir()
    (store / "threads.txt").write_text("needle-in-the-store")
    (durable / "notes.txt").write_text("needle-in-the-notes")
    fixed = at_start(durable, graph=None, store_dir=store, worktree=None)
    box = ToolBox(durable, ["read"], boundary=fixed)
    text, _ = asyncio.run(box.run("search_files", {"pattern": "needle"}))
    assert "needle-in-the-notes" in text and "needle-in-the-store" not in text, text


def test_a_worktree_inside_the_hidden_store_stays_writable(mechanism: str, durable: Path) -> None:
    """Control for the hidden store: a thread's worktree lives inside it and stays the role's,
    while the store's own files next to it are out of sight and cannot be made."""
    store = durable / ".orchestrator"
    ws = store / "worktrees" / "T1"
    ws.mkdir(parents=True)
    (store / "threads.db").write_text("SQLite format 3")
    fixed = at_start(ws, graph=None, store_dir=store, worktree=None)
    text = shell(ws, f"echo mine > a.txt; cat {store}/threads.db; : > {store}/new.db", fixed)
    assert (ws / "a.txt").read_text() == "mine\n", text
    assert "SQLite" not in text and not (store / "new.db").exists(), text


def test_a_resumed_thread_uses_what_was_recorded_at_start(durable: Path, hostdir: Path) -> None:
    """Attack: a `.git` written after the thread started (no repository then) is not what a
    resume's boundary is made of: the record is. Control: a boundary found anew from the
    workspace, as a per-command reading did, takes the role's `.git` into account."""
    from orchestrator.tools import boundary as trust  # why: the record's functions

    store, ws = durable / "store", durable / "ws"
    store.mkdir()
    ws.mkdir()
    fixed = at_start(ws, graph=None, store_dir=store, worktree=None)
    trust.record(fixed, store, "T1")
    subprocess.run(["git", "init", "-q", str(hostdir)], check=True)  # a valid gitdir
    (ws / ".git").write_text(f"gitdir: {hostdir}/.git\n")
    resumed = trust.of_thread(ws, "T1", None, store, None)
    assert resumed.git == () and hostdir / ".git" not in resumed.protected
    anew = at_start(ws, graph=None, store_dir=None, worktree=None)
    assert Path(os.path.realpath(hostdir / ".git")) in anew.git


def test_a_store_that_is_the_workspace_keeps_its_files_read_only(
    mechanism: str, durable: Path
) -> None:
    """Attack: with `--store .` the store cannot be hidden (it is the workspace): its database
    and records are read-only instead. Control: a file beside them is written."""
    (durable / "threads.db").write_text("db")
    (durable / "boundaries").mkdir()
    fixed = at_start(durable, graph=None, store_dir=durable, worktree=None)
    text = shell(durable, "echo x > threads.db; echo x > boundaries/T.json; echo ok > a.txt", fixed)
    assert (durable / "threads.db").read_text() == "db", text
    assert not (durable / "boundaries" / "T.json").exists(), text
    assert (durable / "a.txt").read_text() == "ok\n", text
