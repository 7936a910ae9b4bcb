"""The sandbox of the shell tool and of command actors, with bubblewrap and with the fallback.

Every test that needs a sandbox runs once per mechanism (`bwrap`, and `unshare` + `setpriv`),
forced through ORCHESTRATOR_SANDBOX_WITH; none is skipped: CI installs bubblewrap, and util-linux
is on every Debian machine. A variable with a secret name and a recognisable value stands for the
orchestrator's credentials: the sandbox must hide it even though it is in the orchestrator's own
`/proc/PID/environ`, which the controls (`sandbox: off`) show is readable without a sandbox.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.actors.base import ActorError, ActRequest
from orchestrator.actors.command import CommandProcessActor
from orchestrator.definition.models import Graph, Role, Sandbox
from orchestrator.tools import Workspace
from orchestrator.tools import sandbox as sandboxing
from orchestrator.tools.boundary import at_start
from orchestrator.tools.sandbox import policy_for
from orchestrator.tools.sandbox_needs import sandbox_problem, unsandboxed_roles
from orchestrator.tools.shell import Shell
from tests.process_helpers import COMMAND_ACTOR_STEP, live_with, marker, wait_until

HIDDEN = "orchestrator-only-value-4f2a9c"


@pytest.fixture(autouse=True)
def _fresh_probe() -> Iterator[None]:
    sandboxing.reset()
    sandboxing._warned.clear()
    yield
    sandboxing.reset()


@pytest.fixture(params=["bwrap", "unshare"])
def mechanism(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(sandboxing.FORCE_VARIABLE, request.param)
    # In our environ, never in the child's. Not secret-named: the output's redaction would
    # hide a secret-named variable's value from the controls, which must see it.
    monkeypatch.setenv("PROBE_HIDDEN_VALUE", HIDDEN)
    assert sandboxing.mechanism() == request.param, (
        f"{request.param} cannot make a sandbox on this machine (bubblewrap installed? "
        "util-linux unshare and setpriv?)"
    )
    return request.param


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the workspace and outside /tmp (which the sandbox replaces by its own)."""
    path = Path(tempfile.mkdtemp(prefix="sandbox-test-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


RUNNER = """
import asyncio, json, sys
from pathlib import Path
from orchestrator.actors.base import ActRequest
from orchestrator.actors.command import CommandProcessActor
from orchestrator.definition.models import Role, Sandbox
from orchestrator.tools import Workspace
from orchestrator.tools.shell import Shell
kind, ws, sandbox, payload = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
if kind == "shell":
    setting = Sandbox(**sandbox) if isinstance(sandbox, dict) else sandbox
    shell = Shell(Workspace(ws), sandbox=setting, role_name="dev")
    text, err = asyncio.run(shell.run({"command": payload}))
else:
    fields = {"description": "d", "goal": "g", "frontmatter": {}, "actor": {"command": payload}}
    if sandbox is not None:
        fields["sandbox"] = sandbox
    request = ActRequest(thread_id="T", step=1, role_name="agent", role=Role(**fields),
                         prompt="p", workspace=Path(ws))
    text = asyncio.run(CommandProcessActor(payload, timeout=60).play(request)).text
print(json.dumps(text))
"""


def in_orchestrator(kind: str, ws: Path, payload: Any, sandbox: Any = None) -> tuple[str, str]:
    """Run the shell tool or a command actor in a fresh process whose initial environment holds
    the hidden value (`/proc/PID/environ` shows a process's initial environment only)."""
    env = dict(os.environ, PROBE_HIDDEN_VALUE=HIDDEN)
    args = [kind, str(ws), json.dumps(sandbox), json.dumps(payload)]
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


@pytest.fixture
def server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that answers `pong`; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"pong")

    worker = threading.Thread(target=serve, daemon=True)
    worker.start()
    yield listener.getsockname()[1]
    stop.set()
    worker.join(5)
    listener.close()


def shell(ws: Path, command: str, sandbox: Any = None, **kw: Any) -> tuple[str, bool]:
    return asyncio.run(
        Shell(Workspace(ws), sandbox=sandbox, role_name="r", **kw).run({"command": command})
    )


CONNECT = (
    "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=3);"
    ' print(s.recv(4).decode())"'
)
PROC_PEEK = (
    r"tr '\0' '\n' < /proc/$PPID/environ; tr '\0' '\n' < /proc/1/environ; "
    r"cat /proc/[0-9]*/environ | tr '\0' '\n'; echo pid=$$ ppid=$PPID"
)


# ---------------------------------------------------------------------- the shell tool


def test_shell_cannot_see_the_orchestrators_environment(mechanism: str, ws: Path) -> None:
    text, _ = in_orchestrator("shell", ws, PROC_PEEK)
    assert HIDDEN not in text and "PROBE_HIDDEN_VALUE" not in text
    assert "ppid=1" in text  # the sandbox's init, not the orchestrator
    text, _ = shell(ws, f"ls /proc/{os.getpid()}/environ && echo visible || echo invisible")
    if os.getpid() > 64:  # a small PID could exist inside the namespace too
        assert "invisible" in text


def test_shell_control_without_sandbox_sees_it(ws: Path) -> None:
    """The control: unsandboxed, the same commands read the orchestrator's environment."""
    text, stderr = in_orchestrator("shell", ws, PROC_PEEK, sandbox="off")
    assert HIDDEN in text
    assert "WITHOUT a sandbox" in stderr and "'dev'" in stderr  # loud


def test_shell_cannot_write_outside_the_workspace(
    mechanism: str, ws: Path, tmp_path: Path, outside: Path
) -> None:
    existing = outside / "outside.txt"
    existing.write_text("original\n")
    for command in (
        f"echo pwned > {existing}",
        f"touch {outside}/new.txt",
        "touch /etc/pwned-by-sandbox-test",
        f"mkdir {outside}/dir",
        "mount -o remount,rw / ",
        "echo x > /proc/sys/kernel/domainname",
    ):
        text, err = shell(ws, command)
        assert "[exit code" in text, (command, text)
    assert existing.read_text() == "original\n"
    assert not (outside / "new.txt").exists() and not (outside / "dir").exists()
    assert not Path("/etc/pwned-by-sandbox-test").exists()
    # /tmp is the sandbox's own: writes there land in it, never in the real /tmp
    text, err = shell(ws, f"echo pwned > {tmp_path}/t.txt && cat {tmp_path}/t.txt")
    assert "pwned" in text and not (tmp_path / "t.txt").exists()


def test_shell_works_inside_the_workspace(mechanism: str, ws: Path) -> None:
    command = (
        "echo hello > made.txt && python3 -c \"print(open('made.txt').read().strip() * 2)\" && "
        "git init -q repo && cd repo && echo a > a && git add a && "
        "git -c user.email=t@example.invalid -c user.name=T commit -q -m first && "
        "git log --oneline | wc -l && echo tmp > /tmp/scratch && cat /tmp/scratch"
    )
    text, err = shell(ws, command)
    assert not err and "[exit code" not in text, text
    assert text.split() == ["hellohello", "1", "tmp"]
    assert (ws / "made.txt").read_text() == "hello\n"
    assert (ws / "repo" / ".git").is_dir()


def test_shell_has_no_network_unless_the_role_allows_it(
    mechanism: str, ws: Path, server: int
) -> None:
    text, err = shell(ws, CONNECT.format(port=server))
    assert "pong" not in text and "[exit code" in text
    text, err = shell(ws, CONNECT.format(port=server), sandbox=Sandbox(network=True))
    assert "pong" in text, text


def test_shell_control_network_without_sandbox(ws: Path, server: int) -> None:
    text, err = shell(ws, CONNECT.format(port=server), sandbox="off")
    assert "pong" in text


def test_shell_writable_paths(mechanism: str, ws: Path, outside: Path) -> None:
    cfg = outside / "cfg"
    cfg.mkdir()
    text, err = shell(ws, f"echo saved > {cfg}/settings", sandbox=Sandbox(writable=[str(cfg)]))
    assert "[exit code" not in text and (cfg / "settings").read_text() == "saved\n"
    text, err = shell(ws, f"echo x > {outside}/elsewhere", sandbox=Sandbox(writable=[str(cfg)]))
    assert "[exit code" in text and not (outside / "elsewhere").exists()


def test_shell_timeout_kills_the_whole_sandbox(mechanism: str, ws: Path) -> None:
    word = marker()
    script = f"import time; time.sleep(60)  # {word}"
    text, err = shell(
        ws, f"setsid python3 -c '{script}' & python3 -c '{script}' & sleep 60", timeout=1.5
    )
    assert err and "timed out" in text
    assert wait_until(lambda: not live_with(word))


def test_shell_refuses_when_no_sandbox_can_be_made(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sandboxing.FORCE_VARIABLE, "none")
    text, err = shell(ws, "touch ran")
    assert err and "was not run" in text and "bubblewrap" in text and "sandbox: off" in text
    assert not (ws / "ran").exists()
    text, err = shell(ws, "touch ran", sandbox="off")  # the explicit opt-out still runs
    assert not err and (ws / "ran").exists()


def test_shell_refuses_a_missing_writable_path(mechanism: str, ws: Path, tmp_path: Path) -> None:
    text, err = shell(ws, "true", sandbox=Sandbox(writable=[str(tmp_path / "nope")]))
    assert err and "must exist" in text


# ---------------------------------------------------------------------- command actors

AGENT = r"""
import os, socket, sys
sys.stdin.read()
lines = []
for path in (f"/proc/{os.getppid()}/environ", "/proc/1/environ"):
    try:
        lines.append(open(path, "rb").read().decode(errors="replace").replace("\0", "\n"))
    except OSError as exc:
        lines.append(f"{path}: {exc.strerror}")
for path in sys.argv[1:2]:
    try:
        open(path, "a").write("pwned")
        lines.append("outside-write: ok")
    except OSError as exc:
        lines.append(f"outside-write: {exc.strerror}")
open("inside.txt", "w").write("made inside")
lines.append("inside-write: ok")
if len(sys.argv) > 2:
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=3)
        lines.append("network: " + s.recv(4).decode())
    except OSError as exc:
        lines.append(f"network: {exc}")
lines.append(f"pid={os.getpid()} ppid={os.getppid()}")
print("---\n$status: done\n---")
print("\n".join(lines))
"""


def role(sandbox: Any = None) -> Role:
    fields: dict[str, Any] = {"description": "d", "goal": "g", "frontmatter": {}}
    fields["actor"] = {"command": ["x"]}
    if sandbox is not None:
        fields["sandbox"] = sandbox
    return Role(**fields)


def act(ws: Path, argv: list[str], sandbox: Any = None, timeout: float = 60) -> str:
    request = ActRequest(
        thread_id="T", step=1, role_name="agent", role=role(sandbox), prompt="p", workspace=ws
    )
    return asyncio.run(CommandProcessActor(argv, timeout=timeout).play(request)).text


def agent(ws: Path) -> list[str]:
    script = ws / "agent.py"
    script.write_text(AGENT)
    return [sys.executable, str(script)]


def test_agent_cannot_see_the_orchestrator_or_write_outside(
    mechanism: str, ws: Path, outside: Path, server: int
) -> None:
    target = outside / "outside.txt"
    target.write_text("original")
    text, _ = in_orchestrator("agent", ws, [*agent(ws), str(target), str(server)])
    assert HIDDEN not in text and "PROBE_HIDDEN_VALUE" not in text
    assert "outside-write: Read-only file system" in text
    assert target.read_text() == "original"
    assert "inside-write: ok" in text and (ws / "inside.txt").read_text() == "made inside"
    assert "network: pong" in text  # agents call their own model API: network on by default
    assert "ppid=1" in text


def test_agent_network_can_be_turned_off(
    mechanism: str, ws: Path, tmp_path: Path, server: int
) -> None:
    text = act(ws, [*agent(ws), str(tmp_path / "x"), str(server)], sandbox={"network": False})
    assert "network: pong" not in text and "network:" in text


def test_agent_writable_paths(mechanism: str, ws: Path, outside: Path) -> None:
    config = outside / "agent-config"
    config.mkdir()
    text = act(ws, [*agent(ws), str(config / "state.json")], sandbox={"writable": [str(config)]})
    assert "outside-write: ok" in text and (config / "state.json").read_text() == "pwned"


def test_agent_control_without_sandbox(ws: Path, outside: Path) -> None:
    target = outside / "outside.txt"
    text, stderr = in_orchestrator("agent", ws, [*agent(ws), str(target)], sandbox="off")
    assert HIDDEN in text  # read from the orchestrator's /proc/PID/environ
    assert "outside-write: ok" in text and target.read_text() == "pwned"
    assert "WITHOUT a sandbox" in stderr and "'agent'" in stderr


def test_agent_runs_when_the_first_bash_on_path_is_in_a_hidden_folder(
    mechanism: str, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lifeline starts the command through the first bash on PATH; under /tmp (which the
    sandbox replaces by an empty one) it must stay visible, or no command could start."""
    folder = Path(tempfile.mkdtemp(prefix="bash-", dir="/tmp"))
    try:
        shutil.copy2(os.path.realpath(shutil.which("bash") or "/bin/bash"), folder / "bash")
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
        sandboxing.reset()
        assert sandboxing.lifeline_shell() == str(folder / "bash")
        assert (
            act(ws, [sys.executable, "-c", "print('hello from inside')"]) == "hello from inside\n"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        monkeypatch.undo()
        sandboxing.reset()


def test_agent_suspends_when_no_sandbox_can_be_made(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sandboxing.FORCE_VARIABLE, "none")
    with pytest.raises(ActorError) as err:
        act(ws, agent(ws))
    assert err.value.kind == "sandbox" and "bubblewrap" in err.value.message
    assert not (ws / "inside.txt").exists()


def test_agent_timeout_kills_the_whole_sandbox(mechanism: str, ws: Path) -> None:
    word = marker()
    script = ws / "slow.py"
    script.write_text(
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', {word!r}],"
        " start_new_session=True)\n"
        "time.sleep(60)\n"
    )
    with pytest.raises(ActorError) as err:
        act(ws, [sys.executable, str(script), word], timeout=2)
    assert err.value.kind == "timeout"
    assert wait_until(lambda: not live_with(word))


def test_agent_dies_with_the_orchestrator(mechanism: str, tmp_path: Path) -> None:
    word = marker()
    started = tmp_path / "started"
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text(f"import time\nopen({str(started)!r}, 'w').write('x')\ntime.sleep(60)\n")
    argv = [sys.executable, "-c", COMMAND_ACTOR_STEP, str(sleeper), word]
    parent = subprocess.Popen(argv, cwd=tmp_path)
    assert wait_until(started.exists, timeout=30)
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=30)
    if not wait_until(lambda: not live_with(word)):
        for pid in live_with(word):
            os.kill(pid, signal.SIGKILL)
        raise AssertionError("the agent outlived the orchestrator")


def test_agent_dies_with_an_orchestrator_killed_while_its_sandbox_starts(
    mechanism: str, tmp_path: Path
) -> None:
    """Killed within milliseconds of starting the agent, while the sandbox sets itself up: no
    agent may be left running (bubblewrap alone left 7 in 100 here, and a resumed thread then
    ran its step twice at once)."""
    word = marker()
    late = tmp_path / "late"
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import sys, time\ntime.sleep(1)\nopen(sys.argv[2], 'w').write('x')\n")
    for trial in range(12):
        argv = [sys.executable, "-c", COMMAND_ACTOR_STEP, str(sleeper), word, f"{late}{trial}"]
        parent = subprocess.Popen(argv, cwd=tmp_path)
        children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children")
        deadline = time.monotonic() + 30
        while not children.read_text().strip():  # polled closely: the window is milliseconds
            assert time.monotonic() < deadline, "the agent was never started"
            time.sleep(0.0002)
        time.sleep(trial * 0.0025)  # 0 to 27.5 ms into the sandbox's set-up
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
    # Each sandbox ends on its own once it sees the orchestrator gone: on a loaded machine its
    # set-up can take a while, so wait (bounded) rather than look once.
    gone = wait_until(lambda: not live_with(word), timeout=20)
    lingering = [_describe(pid) for pid in live_with(word)]
    for pid in live_with(word):
        os.kill(pid, signal.SIGKILL)
    assert gone, f"left running: {lingering}"
    time.sleep(1.2)  # an agent that had started would have written its file by now
    assert not list(tmp_path.glob("late*"))


def _describe(pid: int) -> str:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return f"{pid} (gone)"
    return f"{pid} waiting in {wchan or '-'}: {cmdline[:60]}"


# ---------------------------------------------------------------------- the role setting


def test_policy_defaults() -> None:
    assert policy_for(None, agent=False) == sandboxing.Policy(network=False)
    assert policy_for(None, agent=True) == sandboxing.Policy(network=True)
    assert policy_for(Sandbox(network=False), agent=True) == sandboxing.Policy(network=False)
    assert policy_for("off", agent=False) is None
    home = Path(os.path.realpath(os.path.expanduser("~")))
    assert policy_for(Sandbox(writable=["~/.agent"]), agent=True).writable == (home / ".agent",)  # type: ignore[union-attr]


SANDBOXED = """
name: tools
description: d
roles:
  dev:
    description: d
    goal: g
    tools: [shell]
    SANDBOX
    frontmatter: { type: object, properties: { $status: { const: ok } }, required: [$status] }
  reader:
    description: d
    goal: g
    tools: [read]
    frontmatter: { type: object, properties: { $status: { const: ok } }, required: [$status] }
graph:
  $START: { _: { role: dev, prompt: "go" } }
  dev: { ok: { role: reader, prompt: "read" } }
  reader: { ok: { role: $END, prompt: "done" } }
"""


def test_the_role_setting_loads(make_graph: Callable[..., Graph], tmp_path: Path) -> None:
    graph = make_graph(SANDBOXED.replace("SANDBOX", "sandbox: off"))
    assert graph.roles["dev"].sandbox == "off"
    graph = make_graph(
        SANDBOXED.replace("SANDBOX", f"sandbox: {{ network: true, writable: [{tmp_path}, ~/.x] }}")
    )
    assert graph.roles["dev"].sandbox == Sandbox(network=True, writable=[str(tmp_path), "~/.x"])
    assert make_graph(SANDBOXED.replace("SANDBOX", "")).roles["dev"].sandbox == Sandbox()


@pytest.mark.parametrize(
    "bad", ["sandbox: on", "sandbox: { writable: [relative/path] }", "sandbox: { net: true }"]
)
def test_the_role_setting_rejects_mistakes(bad: str, write_graph: Callable[..., Path]) -> None:
    from orchestrator.definition.loader import GraphError, load_graph

    with pytest.raises(GraphError):
        load_graph(write_graph(SANDBOXED.replace("SANDBOX", bad)))


def test_graph_hash_unchanged_by_the_default_setting(make_graph: Callable[..., Graph]) -> None:
    plain = make_graph(SANDBOXED.replace("SANDBOX", ""))
    off = make_graph(SANDBOXED.replace("SANDBOX", "sandbox: off"))
    assert plain.hash != off.hash
    data = plain.model_dump(mode="json")
    unset = {"pids": None, "memory_mb": None, "disk_mb": None}  # the limits (their own tests)
    empty = {"network": None, "writable": [], "readable": []}  # `readable` left out of the hash
    assert data["roles"]["dev"]["sandbox"] == {**empty, **unset}


def test_sandbox_problem(
    make_graph: Callable[..., Graph], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    graph = make_graph(SANDBOXED.replace("SANDBOX", ""))
    monkeypatch.setenv(sandboxing.FORCE_VARIABLE, "none")
    problem = sandbox_problem(graph)
    assert problem and "'dev' (shell commands)" in problem and "'reader'" not in problem
    assert "bubblewrap" in problem and "sandbox: off" in problem
    assert sandbox_problem(make_graph(SANDBOXED.replace("SANDBOX", "sandbox: off"))) is None
    monkeypatch.setenv(sandboxing.FORCE_VARIABLE, "bwrap")
    assert sandbox_problem(graph) is None
    missing = make_graph(
        SANDBOXED.replace("SANDBOX", f"sandbox: {{ writable: [{tmp_path}/nope] }}")
    )
    assert "writable paths do not exist" in (sandbox_problem(missing) or "")
    assert unsandboxed_roles(make_graph(SANDBOXED.replace("SANDBOX", "sandbox: off"))) == ["dev"]


def test_host_tmp_is_hidden_but_git_metadata_and_the_agents_files_stay(
    mechanism: str, tmp_path: Path
) -> None:
    """/tmp is the sandbox's own: other files there (sockets included) are out of sight, while
    a worktree's repository and the agent's own script stay readable."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "first"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    subprocess.run(
        ["git", "worktree", "add", "-q", str(tmp_path / "wt")], cwd=repo, env=env, check=True
    )
    (tmp_path / "other.txt").write_text("private")
    # The thread's boundary, found when it starts (tools/boundary.py), shows the git metadata.
    fixed = at_start(tmp_path / "wt", graph=None, store_dir=None, worktree=None)
    command = f"cat {tmp_path}/other.txt; git log --oneline | wc -l"
    text, err = shell(tmp_path / "wt", command, boundary=fixed)
    assert "private" not in text and text.split()[-1] == "1", text
    script = tmp_path / "tools" / "agent.py"
    script.parent.mkdir()
    script.write_text("import sys; sys.stdin.read(); print('---\\n$status: done\\n---\\nran')")
    assert "ran" in act(tmp_path / "wt", [sys.executable, str(script)])
