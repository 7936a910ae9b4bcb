"""The sandbox around the processes a role starts: its shell tool's commands, its command actor.

Theory of operation. A tool process runs as the orchestrator's user. Without a sandbox it could
read the orchestrator's own environment through `/proc/$PPID/environ` (the API key with it),
write anywhere that user may, and reach any host on the network. `wrap(argv, ...)` returns the
argv that runs `argv` inside a sandbox instead; the caller starts it with an environment already
scrubbed (`scrub.py`) and in a new session, and kills the session's process group on timeout.

With bubblewrap (`bwrap`, preferred):

- a new PID namespace with its own `/proc`: the orchestrator and every other process outside are
  invisible; `/proc/1` is bubblewrap's init, whose environment is the scrubbed one;
- the whole filesystem bound read-only, the workspace (and the role's `writable:` paths) bound
  read-write at the same paths; a private `/dev` and an empty, private `/tmp` in which only the
  command's own files and the running interpreter's stay visible (`visible_through`), so
  sockets under the host's `/tmp` (tmux, ssh-agent, X11) cannot be reached; the home folders
  (`/home`, `/root`, the user's `$HOME`: `hidden_roots`) replaced the same way, so the user's
  keys and tokens (`~/.ssh`, `~/.aws`, `~/.netrc`, a models file) cannot be read, while a
  workspace or `writable:` path inside them is bound over the empty folder and stays the role's;
- over those, the thread's trust boundary (`boundary.py`, fixed when the thread started, never
  read from the workspace here): the repository's git folders read-only (and visible under
  `/tmp`), the thread store hidden, the graph's files read-only; `boundary.views` orders the
  mounts, and both mechanisms make them in that order;
- without network (`network: false`, the shell tool's default): a new network namespace with
  only a loopback of its own, and `/run` hidden behind an empty tmpfs, so host sockets there (a
  Docker socket, D-Bus) cannot be reached either;
- new IPC namespace, all capabilities dropped (root inside cannot remount anything), and
  `--die-with-parent`: when the orchestrator dies the sandbox dies, and when the sandbox's init
  dies the kernel kills every process in its PID namespace, including ones that left the
  process group. That chain of "die with your parent" has gaps: bubblewrap ties the sandbox to
  its own life only at the end of its set-up without looking whether it is still alive then,
  and Linux sends the signal when the thread that started the process ends, not the whole
  orchestrator; an orchestrator killed in the first milliseconds left the command running (7
  in 100 kills here). So `started` also hands the sandbox a lifeline: the read end of a pipe
  whose only writer is the orchestrator, at end of file once every thread of it is gone. The
  command starts through `bash -p`, which exits if that end is reached already, and otherwise
  leaves a watcher that kills every process of the sandbox when it is. bubblewrap is not tied to
  the orchestrator before it ties itself: killed between making the sandbox and letting its init
  go on, it would leave that init blocked for ever.

Fallback, util-linux `unshare` + `setpriv` (when `bwrap` is missing or cannot run): the same
namespaces (`--pid --fork --mount-proc --mount --ipc`, `--net` without network, `--user
--map-root-user` when not root), then `_sandbox_init.py` as PID 1 of the new namespace mounts an
empty tmpfs on `/tmp`, the home folders and `/dev/shm` (and `/run` without network), binds the workspace and the
`writable:` paths onto themselves and makes the boundary's mounts, remounts every other mount
(and the boundary's read-only binds) read-only, and starts the command
through `setpriv` with no capabilities (empty bounding, inheritable and ambient sets,
`no_new_privs`, `noroot` securebits). It does not replace `/dev` (the host's device nodes stay
visible, read-only), which is the one difference from bubblewrap.

Limits (`limits.py`, the role's `sandbox: {pids, memory_mb, disk_mb}`): every tmpfs of the
sandbox's own is sized (`--size`, the init's `size=`), rlimits are set inside it, and `started`
puts the sandbox's first process into a cgroup of its own where the machine gives one (`wrap`
does it through a small step for callers that start the process themselves); `limit_hit` says
afterwards which limit stopped a command.

`mechanism()` finds out once per process what works here by running `true` in each; the
environment variable `ORCHESTRATOR_SANDBOX_WITH` (`bwrap`, `unshare` or `none`) picks one for
tests. When none works, the shell tool refuses to run and a command actor's step suspends,
unless the role says `sandbox: off`; `sandbox_problem(graph)` says so before a run starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..definition.models import Sandbox
from ..errors import WorkspaceError
from . import limits as limiting
from .boundary import Boundary, View, home_roots, interpreter_paths, views
from .limits import Limits

if TYPE_CHECKING:
    pass

Mechanism = Literal["bwrap", "unshare"]
FORCE_VARIABLE = "ORCHESTRATOR_SANDBOX_WITH"
INIT_SCRIPT = Path(__file__).with_name("_sandbox_init.py")
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap) and allow user namespaces, or set `sandbox: off` on the role to run it "
    "without a sandbox"
)


# Run by `bash -p` (no BASH_ENV, no functions from the environment), $0 the lifeline's fd: the
# orchestrator gone already, stop (125); else a watcher kills every process in the sandbox's PID
# namespace once it is gone, and the shell becomes the command (without the lifeline).
LIFELINE_CHECK = (
    'if read -r -t 0 -u "$0"; then exit 125; fi; '
    '{ read -r -u "$0" _; kill -s KILL -- -1; } </dev/null >/dev/null 2>&1 & '
    'eval "exec $0<&-"; exec "$@"'
)


class SandboxUnavailable(WorkspaceError):
    """No sandbox can be made for a process that needs one; the message says what to do."""


class CannotStart(Exception):
    """The process could not be started (its OSError's words)."""


@dataclass(frozen=True)
class Policy:
    """What a sandboxed process may do besides reading the filesystem and writing its workspace."""

    network: bool = False
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()  # kept visible, read-only, inside a hidden home
    limits: Limits = Limits()


def policy_for(setting: Sandbox | Literal["off"] | None, *, agent: bool) -> Policy | None:
    """The policy a role's setting asks for (None: `sandbox: off`); `agent` for command actors."""
    if setting == "off":
        return None
    if setting is None or isinstance(setting, str):
        setting = Sandbox()
    network = setting.network if setting.network is not None else agent
    writable = tuple(expand(p) for p in setting.writable)
    readable = tuple(expand(p) for p in setting.readable)
    return Policy(
        network=network, writable=writable, readable=readable, limits=limiting.of(setting)
    )


def expand(path: str) -> Path:
    return Path(os.path.realpath(os.path.expanduser(path)))


def missing_writable(policy: Policy) -> list[Path]:
    return [p for p in policy.writable if not p.exists()]


# --------------------------------------------------------------------------- what works here


def mechanism() -> Mechanism | None:
    """The sandbox that works on this machine, or None."""
    forced = os.environ.get(FORCE_VARIABLE, "").strip().lower()
    if forced == "none":
        return None
    if forced in ("bwrap", "unshare"):
        return forced if _works(forced) else None  # type: ignore[return-value]
    for kind in ("bwrap", "unshare"):
        if _works(kind):
            return kind  # type: ignore[return-value,unused-ignore]
    return None


@functools.cache
def _works(kind: str) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    with tempfile.TemporaryDirectory(prefix="orchestrator-sandbox-probe-") as ws:
        try:
            argv = wrap(
                ["true"],
                workspace=Path(ws),
                policy=Policy(),
                kind=kind,  # type: ignore[arg-type]
                counted=False,
            )
            done = subprocess.run(argv, capture_output=True, timeout=20, env=_probe_env())
        except (OSError, subprocess.SubprocessError, SandboxUnavailable):
            return False
    return done.returncode == 0


def _probe_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def reset() -> None:
    """Forget what was probed (tests that change PATH or the forcing variable)."""
    _works.cache_clear()
    lifeline_shell.cache_clear()
    limiting.reset()


@functools.cache
def lifeline_shell() -> str | None:
    """The bash that runs LIFELINE_CHECK, by its real path (the sandbox keeps it visible)."""
    found = shutil.which("bash")
    return os.path.realpath(found) if found else None


# --------------------------------------------------------------------------- the argv


def wrap(
    argv: list[str],
    *,
    workspace: Path,
    policy: Policy,
    kind: Mechanism | None = None,
    lifeline: int | None = None,
    boundary: Boundary | None = None,
    counted: bool | None = None,
) -> list[str]:
    """`argv` run inside the sandbox; SandboxUnavailable when none can be made.

    `boundary` is the thread's (`boundary.py`): what stays read-only or hidden inside the
    writable paths; without one, only the workspace's own `.git`. With `lifeline` (a pipe's
    read end, passed to the process), the command is stopped once that pipe has no writer
    left (see `started`). `counted`: whether the caller put the sandbox in a cgroup
    (`limits.py`); None: a cgroup of its own (`limits.make_loose_cgroup`) if any."""
    kind = kind or mechanism()
    if kind is None:
        raise SandboxUnavailable("no sandbox can be made on this machine: " + INSTALL_HINT)
    missing = missing_writable(policy)
    if missing:
        raise SandboxUnavailable(
            "the role's `sandbox: writable:` paths must exist: "
            + ", ".join(str(p) for p in missing)
        )
    ws = Path(os.path.realpath(workspace))
    group = limiting.make_loose_cgroup(policy.limits) if counted is None else None
    counted = group is not None if counted is None else counted
    join = limiting.joiner(group) if group is not None else []
    rlimits = limiting.rlimit_text(policy.limits, counted=counted)
    if kind == "bwrap":  # the fallback's init sets them itself
        argv = [*limiting.shim(policy.limits, counted=counted), *argv]
    bash = lifeline_shell()
    if lifeline is not None and bash is not None:
        argv = [bash, "-p", "-c", LIFELINE_CHECK, str(lifeline), *argv]
    readable = visible_through(argv, ws, policy)
    mounts = views(
        boundary or Boundary.bare(ws), ws, policy.writable, hidden_roots(policy), readable
    )
    if kind == "bwrap":
        return join + _bwrap(argv, ws, policy, mounts)
    return join + _unshare(argv, ws, policy, mounts, rlimits)


def hidden_roots(policy: Policy) -> tuple[Path, ...]:
    """The folders the sandbox replaces by empty ones of its own: `/tmp`, `/run` without
    network, and the home folders (`/home`, `/root`, and the user's `$HOME` wherever it lies),
    whose keys, tokens and configuration (`~/.ssh`, `~/.aws`, `~/.netrc`, a models file) are no
    role's business. Only folders that exist (a mount point is never made in the host's `/`)."""
    roots = [Path("/tmp"), *home_roots()]
    if not policy.network:
        roots.append(Path("/run"))
    return tuple(r for r in roots if r.is_dir())


def visible_through(argv: list[str], ws: Path, policy: Policy) -> list[Path]:
    """What under a hidden folder must stay readable: the command's own files and interpreter.

    The folder of every argv element that is an existing absolute path (an agent's script, its
    interpreter) and, when that folder is a virtual environment's `bin`, the environment; the
    running interpreter's prefixes and the orchestrator's own code (a process it starts with
    `sys.executable` needs its packages), and the role's `readable:` folders, when they lie
    under `/tmp`, a home folder (or a hidden `/run`). The
    repository's git metadata is the thread boundary's (`boundary.py`), never read from the
    workspace here."""
    roots = hidden_roots(policy)
    wanted: list[Path] = []
    for arg in argv:
        if arg.startswith("/") and os.path.exists(arg):
            folder = Path(os.path.realpath(os.path.dirname(arg)))
            wanted.append(folder)
            if (folder.parent / "pyvenv.cfg").is_file():
                wanted.append(folder.parent)
    wanted += [*interpreter_paths(), *policy.readable]
    found: list[Path] = []
    for path in wanted:
        hidden = any(path.is_relative_to(r) for r in roots)
        bound = any(path.is_relative_to(w) for w in (ws, *policy.writable))
        if hidden and not bound and path not in found:
            found.append(path)
    return found


def _bwrap(argv: list[str], ws: Path, policy: Policy, mounts: list[View]) -> list[str]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable("bwrap is not installed: " + INSTALL_HINT)
    args = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    args += ["--cap-drop", "ALL"]
    if not policy.network:
        args.append("--unshare-net")
    size = limiting.bwrap_size(bwrap, policy.limits)  # before each tmpfs of the sandbox's own
    args += ["--ro-bind", "/", "/", "--dev", "/dev", *size, "--tmpfs", "/dev/shm"]
    args += ["--proc", "/proc"]
    # bwrap covers these itself on Linux; said again because not every kernel honours that
    # (gVisor lets a capability-less root write /proc/sys through bwrap's own cover).
    args += ["--ro-bind", "/proc/sys", "/proc/sys"]
    for part in ("sysrq-trigger", "irq", "bus"):
        args += ["--ro-bind-try", f"/proc/{part}", f"/proc/{part}"]
    for view in mounts:  # ordered: a path's ancestors first, so the most specific one wins
        path = str(view.path)
        source = [] if view.kind in ("tmpfs", "hide") else [path]  # bound onto itself
        sized = size if view.kind == "tmpfs" else []  # a hidden folder takes no writes at all
        args += [*sized, *_BWRAP[view.kind], *source, path]
    return [*args, "--chdir", str(ws), "--", *argv]


# An empty folder for `hide` is mode 0555: the sandbox's root, without capabilities, cannot
# write it. The protected paths are bound "-try": one gone since the thread started has
# nothing left to protect (and nothing of it to show).
_BWRAP: dict[str, list[str]] = {
    "tmpfs": ["--tmpfs"],
    "hide": ["--perms", "0555", "--tmpfs"],
    "pin": ["--bind-try"],
    "rw": ["--bind"],
    "ro": ["--ro-bind-try"],
}


def _unshare(
    argv: list[str], ws: Path, policy: Policy, mounts: list[View], rlimits: str
) -> list[str]:
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    if unshare is None or setpriv is None:
        raise SandboxUnavailable(
            "neither bwrap nor unshare and setpriv are installed: " + INSTALL_HINT
        )
    args = [unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "--mount", "--ipc", "--uts"]
    args += ["--propagation", "private"]
    if not policy.network:
        args.append("--net")
    if os.geteuid() != 0:
        args += ["--user", "--map-root-user"]
    init = [sys.executable, "-I", "-S", str(INIT_SCRIPT), "--chdir", str(ws), "--setpriv", setpriv]
    init += ["--size", str(policy.limits.disk_mb * limiting.MB), "--rlimits", rlimits]
    for view in mounts:  # in order, as for bubblewrap
        init += [_INIT[view.kind], str(view.path)]
    return [*args, "--", *init, "--", *argv]


_INIT = {
    "tmpfs": "--tmpfs",
    "hide": "--hide",
    "pin": "--pin",
    "rw": "--writable",
    "ro": "--readonly",
}


_warned: set[str] = set()


def warn_unsandboxed(role_name: str, what: str) -> None:
    """Say on stderr, once per role and process, that a role runs without a sandbox."""
    if role_name in _warned:
        return
    _warned.add(role_name)
    sys.stderr.write(
        f"orchestrator: WARNING: role {role_name!r} runs its {what} WITHOUT a sandbox "
        "(`sandbox: off`): they can read the orchestrator's processes and write anywhere "
        "its user may\n"
    )
    sys.stderr.flush()


@contextlib.asynccontextmanager
async def started(
    argv: list[str],
    *,
    workspace: Path,
    policy: Policy | None,
    boundary: Boundary | None = None,
    **options: Any,
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`argv` started in the sandbox (`policy`; None runs it bare) in a session of its own, tied
    to the orchestrator's life: it dies when the orchestrator dies, even while the sandbox is
    being set up (the lifeline). `options` go to `asyncio.create_subprocess_exec`; raises
    SandboxUnavailable, or CannotStart. When the block ends, however it ends, the process's
    group is killed if the process is still running, then the lifeline is let go."""
    reader = writer = -1
    process: asyncio.subprocess.Process | None = None
    group: limiting.Cgroup | None = None
    try:
        kind = mechanism() if policy is not None else None
        if kind is not None and policy is not None:
            group = limiting.make_cgroup(policy.limits)
        lifeline = kind is not None and lifeline_shell() is not None
        # bubblewrap ties itself to the orchestrator (`--die-with-parent`) just before it lets
        # the sandbox's init go on; killed earlier than that by a tie of ours, it would leave
        # that init blocked for ever (on an eventfd only bubblewrap writes). The lifeline covers
        # the time before bubblewrap's tie, so ours is only for the other cases.
        tie = not (lifeline and kind == "bwrap")
        if lifeline:
            reader, writer = os.pipe()  # inherited by no other process: the reader by this child
        if policy is not None:
            argv = wrap(
                argv,
                workspace=workspace,
                policy=policy,
                kind=kind,
                lifeline=reader if lifeline else None,
                boundary=boundary,
                counted=group is not None,
            )
        prepare = functools.partial(_prepare, os.getpid(), tie, group) if tie or group else None
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=str(workspace),
                start_new_session=True,
                preexec_fn=prepare,
                pass_fds=(reader,) if lifeline else (),
                **options,
            )
        except OSError as exc:
            raise CannotStart(exc.strerror or str(exc)) from None
        except subprocess.SubprocessError:  # _prepare failed: the cgroup could not be joined
            raise CannotStart("it could not join its sandbox's cgroup") from None
        if policy is not None:
            limiting.track(process.pid, policy.limits, group)
        if lifeline:
            os.close(reader)
            reader = -1
        yield process
    finally:
        if process is not None and process.returncode is None:
            kill_group(process)
        for fd in (reader, writer):
            if fd >= 0:
                os.close(fd)
        if process is not None:
            limiting.untrack(process.pid)
        if group is not None:
            await limiting.remove(group)


limit_hit = limiting.process_hit  # which limit stopped a process `started` ran, or None


def kill_group(process: asyncio.subprocess.Process) -> None:
    """Kill the process's session (it leads one: `started`), whatever of it is still there."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _prepare(parent: int, tie: bool, group: limiting.Cgroup | None) -> None:
    """In the child, before exec: join the sandbox's cgroup, tie the child to the orchestrator."""
    if group is not None:
        group.join()
    if tie:
        die_with_parent(parent)


def die_with_parent(parent: int) -> None:
    """In the child, before exec: ask Linux to kill it if the orchestrator dies.

    Kept through the sandbox: the signal kills unshare (or bwrap when there is no lifeline),
    whose `--kill-child` (`--die-with-parent`) kills the sandbox's init, and with it every
    process in its PID namespace."""
    if sys.platform.startswith("linux"):
        import ctypes  # deferred: only a forked child on Linux needs it

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)
