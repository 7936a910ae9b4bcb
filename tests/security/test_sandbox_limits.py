"""The sandbox's limits: processes, memory, disk (orchestrator/tools/limits.py).

Every attack runs beside a control: the same action under the limit (a few processes, a small
allocation, a small file) succeeds, so a test that sees the attack fail is seeing the limit, not
a sandbox that cannot fork, allocate or write at all. Each runs once per mechanism (`bwrap`,
`unshare`: ORCHESTRATOR_SANDBOX_WITH) and, for memory, once per enforcement (a cgroup per
sandbox, and rlimits alone: ORCHESTRATOR_SANDBOX_LIMITS_WITH=rlimit). The attacks are bounded by
their own numbers as well (a fork loop stops after 200, an allocation is 1 GB), so a missing
limit shows as a failed assertion, not as a machine brought down.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.actors.base import ActorError, ActRequest
from orchestrator.actors.command import CommandProcessActor
from orchestrator.definition.models import Graph, Role, Sandbox
from orchestrator.tools import Workspace
from orchestrator.tools import limits as limiting
from orchestrator.tools import sandbox as sandboxing
from orchestrator.tools.shell import Shell

FORKS = """
import os, sys, time
made = 0
for _ in range({n}):
    try:
        if os.fork() == 0:
            time.sleep(20)
            os._exit(0)
    except OSError as exc:
        print(f"forked {{made}}, then: {{exc.strerror}}")
        sys.exit(1)
    made += 1
print(f"forked {{made}}")
"""
ALLOCATE = "python3 -c 'x = bytearray({mb} * 1024 * 1024); print(\"allocated\", len(x) >> 20)'"


def bounded_by_cgroup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(limiting.FORCE_VARIABLE, raising=False)
    if limiting.enforcement() != "cgroup":
        why = "no cgroup can be made here (see limits.py); rlimits are tested instead"
        if os.environ.get("CI"):  # CI's machines can make one: never skip the bound there
            pytest.fail(f"{why}; CI runs these tests, never skips them")
        pytest.skip(why)


@pytest.fixture(params=["cgroup", "rlimit"])
def enforcement(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "cgroup":
        bounded_by_cgroup(monkeypatch)
    else:
        monkeypatch.setenv(limiting.FORCE_VARIABLE, "rlimit")
        assert limiting.enforcement() == "rlimit"
    return str(request.param)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def shell(ws: Path, command: str, **limits: int) -> tuple[str, bool]:
    tool = Shell(Workspace(ws), sandbox=Sandbox(**limits), role_name="r", timeout=90)
    return asyncio.run(tool.run({"command": command}))


def forks(ws: Path, n: int, pids: int) -> tuple[str, bool]:
    (ws / "forks.py").write_text(FORKS.format(n=n))
    return shell(ws, "python3 forks.py", pids=pids)


def made(text: str) -> int:
    found = re.search(r"forked (\d+)", text)
    assert found, text
    return int(found.group(1))


# ---------------------------------------------------------------------- processes


@pytest.fixture
def processes_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """What bounds processes here: a cgroup, or (not as root, where Linux does not enforce it)
    RLIMIT_NPROC inside the sandbox's user namespace."""
    if os.geteuid() == 0:
        bounded_by_cgroup(monkeypatch)
    else:
        monkeypatch.setenv(limiting.FORCE_VARIABLE, "rlimit")


def test_a_fork_bomb_stays_under_the_process_limit(
    mechanism: str, processes_bounded: None, ws: Path
) -> None:
    """Attack: 200 forks of sleeping processes with `pids: 24`; the sandbox refuses the fork
    that would pass 24, the tool says which limit and how to raise it, and the next command
    runs as usual."""
    text, error = forks(ws, 200, pids=24)
    assert made(text) < 24, text
    assert "Resource temporarily unavailable" in text
    assert error and "process limit (24 processes; raise it with sandbox: {pids: ...})" in text
    assert shell(ws, "echo still here", pids=24) == ("still here\n", False)


def test_control_a_few_processes_fit_under_the_limit(
    mechanism: str, processes_bounded: None, ws: Path
) -> None:
    text, error = forks(ws, 10, pids=24)
    assert made(text) == 10 and not error, text
    assert "limit" not in text


WRAPPED = """
import json, os, subprocess, sys
from pathlib import Path
from orchestrator.definition.models import Sandbox
from orchestrator.tools import limits, sandbox
ws, n = Path(sys.argv[1]), sys.argv[2]
policy = sandbox.policy_for(Sandbox(pids=24), agent=True)
argv = sandbox.wrap([sys.executable, "forks.py"], workspace=ws, policy=policy)
done = subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=60)
print(json.dumps([done.stdout + done.stderr, [str(f) for g in limits._loose for f in g.folders()]]))
"""


def test_a_process_its_caller_starts_is_bounded_too(
    mechanism: str, processes_bounded: None, ws: Path
) -> None:
    """An MCP server or Claude Code (`wrap`, started by their own clients) gets a cgroup too,
    joined before the sandbox starts, and removed when the orchestrator exits. Attack: 200
    forks under `pids: 24`; control: 10."""
    for n, bounded in ((200, True), (10, False)):
        (ws / "forks.py").write_text(FORKS.format(n=n))
        done = subprocess.run(
            [sys.executable, "-c", WRAPPED, str(ws), str(n)],
            capture_output=True,
            text=True,
            timeout=120,
            env=os.environ,
        )
        assert done.returncode == 0, done.stderr
        text, folders = json.loads(done.stdout)
        assert (made(text) < 24) if bounded else (made(text) == n), text
        assert not any(Path(folder).exists() for folder in folders), folders  # removed at exit


# ---------------------------------------------------------------------- memory


def test_a_large_allocation_fails_inside_the_sandbox(
    mechanism: str, enforcement: str, ws: Path
) -> None:
    """Attack: 1 GB with `memory_mb: 256`: the command fails (OOM-killed in its cgroup, or
    refused by RLIMIT_DATA), the orchestrator goes on, and the tool says which limit."""
    text, error = shell(ws, ALLOCATE.format(mb=1024), memory_mb=256)
    assert "allocated" not in text and "[exit code" in text
    said = "memory limit (256 MB; raise it with sandbox: {memory_mb: ...})"
    assert error and said in text, text
    if enforcement == "cgroup":  # the cgroup's oom_kill count is sure; the rlimit's words a hint
        assert "the command hit the sandbox's memory limit" in text
    assert shell(ws, "echo still here", memory_mb=256) == ("still here\n", False)


def test_control_a_small_allocation_fits(mechanism: str, enforcement: str, ws: Path) -> None:
    text, error = shell(ws, ALLOCATE.format(mb=64), memory_mb=256)
    assert "allocated 64" in text and not error, text


def test_a_command_actor_over_its_memory_suspends_the_step(
    mechanism: str, enforcement: str, ws: Path
) -> None:
    """The same allocation by a command actor's process: the step suspends (ActorError) with the
    sentence; the control, a small allocation, replies."""

    def play(mb: int) -> str:
        argv = [sys.executable, "-c", f"import sys; x = bytearray({mb} << 20); print('ok', {mb})"]
        role = Role(
            description="d",
            goal="g",
            frontmatter={},
            actor={"command": argv},
            sandbox=Sandbox(memory_mb=256),
        )
        request = ActRequest(
            thread_id="T", step=1, role_name="agent", role=role, prompt="p", workspace=ws
        )
        return asyncio.run(CommandProcessActor(argv, timeout=60).play(request)).text

    with pytest.raises(ActorError) as failed:
        play(1024)
    assert "memory limit (256 MB; raise it with sandbox: {memory_mb: ...})" in str(failed.value)
    assert play(32).strip() == "ok 32"


# ---------------------------------------------------------------------- disk


def test_the_sandboxes_tmp_holds_only_disk_mb(mechanism: str, ws: Path) -> None:
    """Attack: 300 MB into /tmp (and /dev/shm) as files of 8 MB, each under the file size limit,
    with `disk_mb: 64`: the tmpfs is full at 64 MB."""
    for folder in ("/tmp", "/dev/shm"):
        fill = (
            f"for i in $(seq 1 38); do head -c 8M /dev/zero > {folder}/f$i "
            f"|| {{ cat {folder}/f* | wc -c; exit 1; }}; done"
        )
        text, error = shell(ws, fill, disk_mb=64)
        assert "No space left on device" in text, text
        assert 56 << 20 < int(text.split("\n")[1]) <= 64 << 20, text
        assert error and "disk limit (64 MB per file and per temporary folder" in text


def test_control_a_small_temporary_file_fits(mechanism: str, ws: Path) -> None:
    text, error = shell(ws, "head -c 32M /dev/zero > /tmp/f && du -sb /tmp | cut -f1", disk_mb=64)
    assert int(text) >= 32 << 20 and not error, text


def test_a_file_over_the_size_limit_cannot_be_written_in_the_workspace(
    mechanism: str, ws: Path
) -> None:
    """Attack: a 100 MB file in the workspace with `disk_mb: 16` stops at 16 MB (RLIMIT_FSIZE)."""
    text, error = shell(ws, "head -c 100M /dev/zero > big", disk_mb=16)
    assert "File size limit exceeded" in text and "[exit code 153]" in text, text  # SIGXFSZ
    assert (ws / "big").stat().st_size <= 16 << 20
    assert error and "the command hit the sandbox's disk limit (16 MB" in text


def test_control_a_file_under_the_limit_is_written(mechanism: str, ws: Path) -> None:
    text, error = shell(ws, "head -c 8M /dev/zero > small && echo written", disk_mb=16)
    assert text == "written\n" and not error, text
    assert (ws / "small").stat().st_size == 8 << 20
    text, error = shell(ws, "head -c 100M /dev/zero > big && echo written", disk_mb=128)
    assert text == "written\n" and not error, text  # the same file, with a larger limit


# ---------------------------------------------------------------------- settings


@pytest.mark.parametrize("prlimit", ["", None], ids=["prlimit", "python"])
def test_both_ways_of_setting_rlimits_set_them(prlimit: str | None, tmp_path: Path) -> None:
    """Under bubblewrap the rlimits are set by util-linux `prlimit`, or by Python without it;
    either way a write past the file size limit ends the command by SIGXFSZ."""
    shim = limiting.shim(limiting.Limits(30, 300, 3), counted=False, prlimit=prlimit)
    assert ("prlimit" in shim[0]) == (prlimit == "")
    seen = subprocess.run(
        [*shim, "bash", "-c", "ulimit -f; ulimit -u; ulimit -d"], capture_output=True, text=True
    )
    assert seen.stdout.split() == [str(3 * 1024), "30", str(300 * 1024)], seen
    counted = limiting.shim(limiting.Limits(30, 300, 3), counted=True, prlimit=prlimit)
    seen = subprocess.run([*counted, "bash", "-c", "ulimit -f"], capture_output=True, text=True)
    assert seen.stdout.split() == [str(3 * 1024)], seen
    with open(tmp_path / "f", "wb") as out:
        big = subprocess.run([*counted, "head", "-c", "5M", "/dev/zero"], stdout=out)
    assert big.returncode == -signal.SIGXFSZ and (tmp_path / "f").stat().st_size == 3 << 20


def test_the_defaults_apply_without_a_setting(mechanism: str, ws: Path) -> None:
    text, _ = asyncio.run(Shell(Workspace(ws), role_name="r").run({"command": "ulimit -f"}))
    assert text.strip() == str(limiting.DEFAULT_DISK_MB * 1024)  # 1024-byte blocks
    policy = sandboxing.policy_for(None, agent=False)
    assert policy is not None and policy.limits == limiting.Limits(512, 2048, 1024)
    policy = sandboxing.policy_for(Sandbox(pids=7, disk_mb=9), agent=True)
    assert policy is not None and policy.limits == limiting.Limits(7, 2048, 9)


def test_each_sandbox_gets_its_own_cgroup_and_it_is_removed(
    mechanism: str, monkeypatch: pytest.MonkeyPatch, ws: Path
) -> None:
    bounded_by_cgroup(monkeypatch)
    text, _ = shell(ws, "cat /proc/self/cgroup")
    assert f"{limiting.PREFIX}{os.getpid()}-" in text, text
    parents = limiting._parents()
    assert parents is not None
    for parent in parents[1:]:
        assert not list(parent.glob(f"{limiting.PREFIX}{os.getpid()}-*"))


def test_cgroups_a_killed_orchestrator_left_are_swept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next orchestrator removes the (empty) cgroups of one that is gone; a live one's stay."""
    bounded_by_cgroup(monkeypatch)
    gone = subprocess.Popen(["true"])
    gone.wait()
    parents = limiting._parents()
    assert parents is not None
    left = [parent / f"{limiting.PREFIX}{gone.pid}-0" for parent in {parents[1], parents[2]}]
    alive = [parent / f"{limiting.PREFIX}{os.getpid()}-999" for parent in {parents[1], parents[2]}]
    for folder in left + alive:
        folder.mkdir()
    try:
        limiting.reset()
        assert limiting.enforcement() == "cgroup"
        assert not any(folder.exists() for folder in left)
        assert all(folder.exists() for folder in alive)
    finally:
        for folder in left + alive:
            if folder.exists():
                folder.rmdir()


BAD = ["0", "-1", "'64'", "2.5", "true", "null-ish"]


@pytest.mark.parametrize("key", ["pids", "memory_mb", "disk_mb"])
@pytest.mark.parametrize("value", BAD)
def test_the_limits_are_strict_positive_integers(
    key: str, value: str, write_graph: Callable[..., Path]
) -> None:
    from orchestrator.definition.loader import GraphError, load_graph

    with pytest.raises(GraphError) as failed:
        load_graph(write_graph(GRAPH.replace("SANDBOX", f"{{{key}: {value}}}")))
    said = [p.format() for p in failed.value.problems]
    assert any(f"roles.dev.sandbox.{key}: must be" in line for line in said), said
    assert all(":8:" in line for line in said), said  # the line of the role's `sandbox:`


def test_the_limits_load(make_graph: Callable[..., Graph]) -> None:
    graph = make_graph(GRAPH.replace("SANDBOX", "{pids: 64, memory_mb: 512, disk_mb: 256}"))
    assert graph.roles["dev"].sandbox == Sandbox(pids=64, memory_mb=512, disk_mb=256)


def test_a_graph_without_limits_keeps_its_hash(make_graph: Callable[..., Graph]) -> None:
    """Threads started before the limits existed still resume: their graph's hash is the same
    (computed by the code before this change)."""
    graph = make_graph(GRAPH.replace("SANDBOX", "{network: true}"))
    assert graph.hash == OLD_HASH
    assert make_graph(GRAPH.replace("SANDBOX", "{network: true, pids: 9}")).hash != OLD_HASH


GRAPH = """
name: limits
description: d
roles:
  dev:
    description: d
    goal: g
    tools: [shell]
    sandbox: SANDBOX
    frontmatter: { type: object, properties: { $status: { const: ok } }, required: [$status] }
graph:
  $START: { _: { role: dev, prompt: "go" } }
  dev: { ok: { role: $END, prompt: "done" } }
"""
OLD_HASH = "sha256:4b37cf7d2999ccacc95a7b13707b7f2e762d95e52952a913e330a9c950715f5d"
