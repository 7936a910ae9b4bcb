"""The limits of a sandbox (`sandbox.py`): how many processes, how much memory, how much disk.

Theory of operation. A role's processes are bounded so that a fork bomb, a runaway allocation or
a command that fills `/tmp` fails inside the sandbox with a clear error instead of taking the
machine (and the orchestrator with it) down. Three numbers, per role (`sandbox: {pids: N,
memory_mb: N, disk_mb: N}`), defaults 512 processes, 2048 MB, 1024 MB:

- disk, everywhere: each tmpfs of the sandbox's own (`/tmp`, `/dev/shm`, a hidden `/run`) holds
  at most `disk_mb` (bubblewrap's `--size`, the fallback's `size=` mount option), and no file may
  grow past `disk_mb` (RLIMIT_FSIZE, so the workspace too);
- processes and memory, with a cgroup where the machine lets the orchestrator make one: a child
  cgroup per sandbox (cgroup v2, or the v1 `pids` and `memory` hierarchies of a hybrid machine),
  with `pids.max` and `memory.max` (no swap), which the sandbox's first process joins before it
  becomes bubblewrap or unshare. It counts every process of the sandbox together, root or not,
  and its counters (`pids.events`, the `oom_kill` count) say afterwards which limit was hit. The
  cgroup is emptied and removed when the sandbox ends (one for a process the orchestrator does
  not start itself, an MCP server or Claude Code, when the orchestrator exits; one a killed
  orchestrator left, by the next orchestrator's sweep);
- else with rlimits set inside the sandbox (by util-linux `prlimit`, or a few lines of Python,
  under bubblewrap; by the fallback's init): RLIMIT_DATA (per process, not the sum) and
  RLIMIT_NPROC, which counts the processes of the sandbox's user namespace but which Linux does
  not enforce for root: an orchestrator running as root on a machine without a writable cgroup
  has no bound on processes (the pid namespace still dies whole with the sandbox).

`enforcement()` decides once per process (like `sandbox.mechanism()`) by making, filling and
removing a probe cgroup; the environment variable `ORCHESTRATOR_SANDBOX_LIMITS_WITH=rlimit`
forces rlimits where a cgroup could be made (tests). `limit_hit` turns what is known after the command ended (the
cgroup's counters, a SIGXFSZ exit, the command's own words) into the sentence a role is shown.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import itertools
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..definition.models import Sandbox

Enforcement = Literal["cgroup", "rlimit"]
FORCE_VARIABLE = "ORCHESTRATOR_SANDBOX_LIMITS_WITH"
DEFAULT_PIDS, DEFAULT_MEMORY_MB, DEFAULT_DISK_MB = 512, 2048, 1024
PREFIX = "orchestrator-sandbox-"
MB = 1024 * 1024

# Run as `python -I -S -c RLIMIT_SHIM NAME=VALUE,... ARGV...` inside bubblewrap (the fallback's
# init sets them itself): the limits are set inside the sandbox's user namespace, where
# RLIMIT_NPROC counts the sandbox's processes only, then the command replaces the shim, with
# SIGXFSZ back to its default (Python ignores it), as it would be under `prlimit`.
RLIMIT_SHIM = (
    "import os, resource, signal, sys\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n"
    "for item in filter(None, sys.argv[1].split(',')):\n"
    "    name, value = item.split('=')\n"
    "    kind = getattr(resource, 'RLIMIT_' + name)\n"
    "    hard = resource.getrlimit(kind)[1]\n"
    "    limit = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)\n"
    "    resource.setrlimit(kind, (limit, limit))\n"
    "try:\n"
    "    os.execvp(sys.argv[2], sys.argv[2:])\n"
    "except OSError as exc:\n"
    "    sys.stderr.write(f'{sys.argv[2]}: {exc.strerror}\\n')\n"
    "    sys.exit(127)\n"
)
# What a command says when a limit stopped it (and RLIMIT_FSIZE's signal): a hint only, which a
# command could print on purpose; the cgroup's counters are the sure way.
DISK_WORDS = ("No space left on device", "File too large", "File size limit exceeded")
MEMORY_WORDS = ("MemoryError", "Cannot allocate memory", "out of memory", "std::bad_alloc")
PIDS_WORDS = ("Resource temporarily unavailable",)


@dataclass(frozen=True)
class Limits:
    """How much a sandbox may use: processes, MB of memory, MB of each file and each tmpfs."""

    pids: int = DEFAULT_PIDS
    memory_mb: int = DEFAULT_MEMORY_MB
    disk_mb: int = DEFAULT_DISK_MB


def of(setting: Sandbox) -> Limits:
    """The limits a role's `sandbox:` setting asks for, the defaults for those it leaves out."""
    return Limits(
        pids=setting.pids or DEFAULT_PIDS,
        memory_mb=setting.memory_mb or DEFAULT_MEMORY_MB,
        disk_mb=setting.disk_mb or DEFAULT_DISK_MB,
    )


def rlimits(limits: Limits, *, counted: bool) -> list[tuple[str, int]]:
    """The rlimits to set inside the sandbox; `counted`: a cgroup bounds processes and memory."""
    found = [("FSIZE", limits.disk_mb * MB)]
    if not counted:
        found += [("NPROC", limits.pids), ("DATA", limits.memory_mb * MB)]
    return [(name, _under_hard(name, value)) for name, value in found]


def _under_hard(name: str, value: int) -> int:
    """`value`, or the orchestrator's own hard limit when lower: the sandbox inherits that one,
    and a process without privileges cannot raise it."""
    hard = resource.getrlimit(getattr(resource, "RLIMIT_" + name))[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def rlimit_text(limits: Limits, *, counted: bool) -> str:
    return ",".join(f"{name}={value}" for name, value in rlimits(limits, counted=counted))


def shim(limits: Limits, *, counted: bool, prlimit: str | None = "") -> list[str]:
    """The argv prefix that sets the rlimits inside bubblewrap, then runs the command:
    util-linux `prlimit` where installed (`prlimit`: its path, "" to look it up, None for
    none), else Python."""
    found = shutil.which("prlimit") if prlimit == "" else prlimit
    if found:
        return [found, *(f"--{n.lower()}={v}" for n, v in rlimits(limits, counted=counted)), "--"]
    return [sys.executable, "-I", "-S", "-c", RLIMIT_SHIM, rlimit_text(limits, counted=counted)]


# --------------------------------------------------------------------------- cgroups


@dataclass(frozen=True)
class Cgroup:
    """One sandbox's cgroup: one folder (v2), or one in each of the pids and memory v1 trees."""

    version: int
    pids: Path
    memory: Path

    def folders(self) -> tuple[Path, ...]:
        return (self.pids,) if self.pids == self.memory else (self.pids, self.memory)

    def join(self) -> None:
        """In the child, before exec: move this process (and so all it starts) into it."""
        for folder in self.folders():
            with open(folder / "cgroup.procs", "w") as procs:
                procs.write("0")

    def hit(self) -> tuple[bool, bool]:
        """(processes, memory): whether the sandbox was refused a fork, had a process OOM-killed."""
        pids = _counter(self.pids / "pids.events", "max")
        events = "memory.events" if self.version == 2 else "memory.oom_control"
        return pids > 0, _counter(self.memory / events, "oom_kill") > 0

    def remove(self) -> bool:
        """Kill what is left in it and remove it; False when it could not be removed (yet)."""
        for folder in self.folders():
            _kill_all(folder)
        removed = True
        for folder in self.folders():
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                removed = False
        return removed


def _counter(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _kill_all(folder: Path) -> None:
    kill = folder / "cgroup.kill"
    if kill.exists():
        with contextlib.suppress(OSError):
            kill.write_text("1")
            return
    try:
        pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


_made = itertools.count()


def make_cgroup(limits: Limits) -> Cgroup | None:
    """A new cgroup holding `limits`, or None when the machine gives none (then: rlimits)."""
    if enforcement() != "cgroup":
        return None
    return _make(_parents(), limits)


def _make(parents: tuple[int, Path, Path] | None, limits: Limits) -> Cgroup | None:
    if parents is None:
        return None
    version, pids_parent, memory_parent = parents
    name = f"{PREFIX}{os.getpid()}-{next(_made)}"
    group = Cgroup(version, pids_parent / name, memory_parent / name)
    memory = limits.memory_mb * MB
    try:
        for folder in group.folders():
            folder.mkdir()
        (group.pids / "pids.max").write_text(str(limits.pids))
        if version == 2:
            (group.memory / "memory.max").write_text(str(memory))
            _try_write(group.memory / "memory.swap.max", "0")
        else:
            (group.memory / "memory.limit_in_bytes").write_text(str(memory))
            _try_write(group.memory / "memory.memsw.limit_in_bytes", str(memory))
    except OSError:
        group.remove()
        return None
    return group


def _try_write(path: Path, text: str) -> None:
    """A setting some kernels lack (no swap accounting): without it swap is simply not bounded."""
    with contextlib.suppress(OSError):
        path.write_text(text)


@functools.cache
def _parents() -> tuple[int, Path, Path] | None:
    """(version, parent of the pids cgroups, parent of the memory cgroups), or None."""
    if not sys.platform.startswith("linux"):
        return None
    mounts = _cgroup_mounts()
    own = _own_cgroups()
    if "" in mounts and "" in own:  # v2: the nearest cgroup that hands pids and memory down
        root = mounts[""]
        folder = root / own[""].lstrip("/")
        while folder.is_relative_to(root):
            if {"pids", "memory"} <= set(_read(folder / "cgroup.subtree_control").split()):
                _sweep(folder)
                if _probe(2, folder, folder):
                    return (2, folder, folder)
                break
            if folder == root:
                break
            folder = folder.parent
    if all(k in mounts and k in own for k in ("pids", "memory")):  # v1: under our own
        pids = mounts["pids"] / own["pids"].lstrip("/")
        memory = mounts["memory"] / own["memory"].lstrip("/")
        _sweep(pids)
        _sweep(memory)
        if _probe(1, pids, memory):
            return (1, pids, memory)
    return None


def _probe(version: int, pids: Path, memory: Path) -> bool:
    made = _make((version, pids, memory), Limits())
    if made is None:
        return False
    return made.remove()


def _sweep(parent: Path) -> None:
    """Remove the empty cgroups that orchestrators no longer running left (killed mid-command)."""
    with contextlib.suppress(OSError):
        for folder in parent.glob(PREFIX + "*"):
            owner = folder.name.removeprefix(PREFIX).split("-")[0]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                with contextlib.suppress(OSError):
                    folder.rmdir()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _cgroup_mounts() -> dict[str, Path]:
    """Where each hierarchy is mounted: "" for cgroup v2, else the v1 controller's name."""
    found: dict[str, Path] = {}
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or fields[3] != "/":
            continue  # a cgroup mounted from below its root: our paths would not match it
        point = Path(fields[4].encode().decode("unicode_escape"))
        if tail[0] == "cgroup2":
            found.setdefault("", point)
        elif tail[0] == "cgroup":
            for option in tail[2].split(","):
                if option in ("pids", "memory"):
                    found.setdefault(option, point)
    return found


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup in each hierarchy ("" for v2), from /proc/self/cgroup."""
    found: dict[str, str] = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                found[controller] = parts[2]
    return found


def enforcement() -> Enforcement:
    """How processes and memory are bounded here: a cgroup per sandbox, or rlimits."""
    forced = os.environ.get(FORCE_VARIABLE, "").strip().lower()
    if forced == "rlimit":
        return "rlimit"
    return "cgroup" if _parents() is not None else "rlimit"


def reset() -> None:
    """Forget what was probed (tests)."""
    _parents.cache_clear()
    _bwrap_sizes.cache_clear()


# --------------------------------------------------------------------------- what a role sees


def limit_hit(
    limits: Limits, cgroup: Cgroup | None, returncode: int | None, output: str = ""
) -> str | None:
    """The sentence that says which limit stopped the command, or None when none did.

    The cgroup's counters are sure and said even when the command went on and succeeded (it was
    refused a fork); the command's own words are a hint, looked at only when it failed."""
    pids, memory = cgroup.hit() if cgroup is not None else (False, False)
    failed = returncode not in (0, None)
    words = output[-4000:] if failed else ""
    guess = cgroup is None
    if memory or (guess and any(w in words for w in MEMORY_WORDS)):
        return _say("memory", f"{limits.memory_mb} MB", "memory_mb", certain=memory)
    if pids or (guess and any(w in words for w in PIDS_WORDS)):
        return _say("process", f"{limits.pids} processes", "pids", certain=pids)
    xfsz = returncode in (-signal.SIGXFSZ, 128 + signal.SIGXFSZ)
    if xfsz or any(w in words for w in DISK_WORDS):
        size = f"{limits.disk_mb} MB per file and per temporary folder"
        return _say("disk", size, "disk_mb", certain=xfsz)
    return None


def _say(what: str, amount: str, key: str, *, certain: bool) -> str:
    verb = "hit" if certain else "may have hit"
    raise_it = f"raise it with sandbox: {{{key}: ...}}"
    return f"the command {verb} the sandbox's {what} limit ({amount}; {raise_it})"


# Run as `python -I -S -c JOIN FOLDER... -- ARGV...` before the sandbox, by callers that start
# the process themselves (`sandbox.wrap`): into the cgroup, then the sandbox replaces it.
JOIN = (
    "import os, sys\n"
    "split = sys.argv.index('--')\n"
    "try:\n"
    "    for folder in sys.argv[1:split]:\n"
    "        with open(folder + '/cgroup.procs', 'w') as procs:\n"
    "            procs.write('0')\n"
    "    os.execv(sys.argv[split + 1], sys.argv[split + 1:])\n"
    "except OSError as exc:\n"
    "    sys.stderr.write(f'orchestrator sandbox: cannot start {sys.argv[split + 1]}: {exc}\\n')\n"
    "    sys.exit(125)\n"
)
_loose: list[Cgroup] = []


def joiner(group: Cgroup) -> list[str]:
    """The argv prefix that moves the process into `group`, then runs the sandbox."""
    return [sys.executable, "-I", "-S", "-c", JOIN, *(str(f) for f in group.folders()), "--"]


def make_loose_cgroup(limits: Limits) -> Cgroup | None:
    """A cgroup for a process started by someone else (an MCP server, Claude Code), whose end
    the orchestrator does not see: emptied and removed when the orchestrator exits (or, were it
    killed, by the next one's sweep)."""
    group = make_cgroup(limits)
    if group is not None:
        if not _loose:
            atexit.register(_remove_loose)
        _loose.append(group)
    return group


def _remove_loose() -> None:
    deadline = time.monotonic() + 2
    while _loose and time.monotonic() < deadline:
        _loose[:] = [group for group in _loose if not group.remove()]
        if _loose:
            time.sleep(0.01)


_tracked: dict[int, tuple[Limits, Cgroup | None]] = {}


def track(pid: int, limits: Limits, group: Cgroup | None) -> None:
    """Remember the limits (and cgroup) of a sandbox's first process, until `untrack`."""
    _tracked[pid] = (limits, group)


def untrack(pid: int) -> None:
    _tracked.pop(pid, None)


def process_hit(process: asyncio.subprocess.Process, output: str = "") -> str | None:
    """Which of its sandbox's limits stopped `process` (ended, inside `sandbox.started`'s
    block), as the sentence to show the role, or None."""
    limits, group = _tracked.get(process.pid, (None, None))
    if limits is None:
        return None
    return limit_hit(limits, group, process.returncode, output)


@functools.cache
def _bwrap_sizes(bwrap: str) -> bool:
    """Whether this bubblewrap can size a tmpfs (`--size`, bubblewrap 0.5 and later)."""
    try:
        shown = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--size" in shown.stdout


def bwrap_size(bwrap: str, limits: Limits) -> list[str]:
    """bubblewrap's options that size the next `--tmpfs` to disk_mb ([] when it cannot: an
    older bubblewrap's tmpfs is not bounded, except by the memory cgroup)."""
    return ["--size", str(limits.disk_mb * MB)] if _bwrap_sizes(bwrap) else []


async def remove(group: Cgroup, *, seconds: float = 2.0) -> None:
    """Remove the cgroup once its last processes are gone (they are reaped a moment after the
    kill); left for a later orchestrator's sweep when they take longer."""
    deadline = time.monotonic() + seconds
    while not group.remove() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
