"""PID 1 of the fallback sandbox (`sandbox.py`, util-linux `unshare`): mounts, then the command.

Run as `python -I -S _sandbox_init.py --chdir WS --setpriv PATH --size BYTES --rlimits
NAME=VALUE,... [--KIND PATH]... -- ARGV...` by
`unshare --pid --fork --mount-proc --mount --propagation private ...`, so it is PID 1 of a new
PID namespace and root of a new mount namespace (of a user namespace when the orchestrator is
not root). Standard library only: it runs with `-I -S`, outside the package. The mounts are the
thread boundary's (`boundary.views`), in the order given (a path's ancestors first): `--tmpfs`
an empty folder (`/tmp`, `/run`), `--hide` an empty one of mode 0555 (the thread store),
`--writable` and `--pin` bound read-write onto themselves, `--readonly` bound read-only.

1. Hold each path to bind (an `O_PATH` descriptor) before anything is mounted over it; a
   `--readonly` or `--pin` path that is gone is skipped (nothing left to protect).
2. A minimal `/dev` (tmpfs with the null, zero, full, random, urandom and tty nodes bound from the
   host, a new devpts instance, its own `/dev/shm`); `/dev/shm` and every `--tmpfs` folder hold
   at most `--size` bytes (`limits.py`).
3. The mounts, in order, binds from the held descriptors.
4. Every mount whose most specific rule is the host's or `--readonly` remounted read-only (its
   nosuid/nodev/noexec flags kept); a mount that may not be remounted fails the start (exit 125)
   rather than stay writable.
5. Set the rlimits (`--rlimits`, e.g. `FSIZE=1073741824,NPROC=512`) here, inside the user
   namespace, where RLIMIT_NPROC counts the sandbox's processes only.
6. Start the command through `setpriv` with no capabilities and `no_new_privs`, wait for it while
   reaping orphans, and exit with its status. When this process dies, the kernel kills every
   process left in the namespace.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import signal
import stat
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_RELATIME = 1 << 21
MOUNT_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
}
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
BINDS = ("writable", "pin", "readonly")  # bound onto themselves: `readonly` made read-only

_libc = ctypes.CDLL(None, use_errno=True)


def fail(message: str) -> None:
    sys.stderr.write(f"orchestrator sandbox (unshare): {message}\n")
    sys.stderr.flush()
    os._exit(125)


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    def enc(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    if _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), target)


def under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def mount_points() -> list[tuple[str, int]]:
    """(mount point, per-mount flags) of every mount, from /proc/self/mountinfo."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as info:
        for line in info:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")  # \040 for spaces, etc.
            flags = sum(MOUNT_FLAGS.get(opt, 0) for opt in fields[5].split(","))
            found.append((point, flags))
    return found


def make_dev(held_devices: dict[str, int], size: str) -> None:
    mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755")
    for name, fd in held_devices.items():
        path = f"/dev/{name}"
        open(path, "w").close()
        mount(f"/proc/self/fd/{fd}", path, None, MS_BIND)
        os.close(fd)
    os.mkdir("/dev/pts")
    mount(
        "devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620"
    )
    os.symlink("pts/ptmx", "/dev/ptmx")
    os.mkdir("/dev/shm")
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777" + size)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0")):
        os.symlink(target, f"/dev/{name}")
    os.symlink("/proc/self/fd/1", "/dev/stdout")
    os.symlink("/proc/self/fd/2", "/dev/stderr")


def bind(path: str, fd: int) -> None:
    if not os.path.lexists(path):  # hidden by one of the tmpfs mounts: recreate the mount point
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.mkdir(path)
        else:
            open(path, "w").close()
    mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
    os.close(fd)


def governing(point: str, ops: list[tuple[str, str]]) -> str:
    """The kind of the most specific mount made over `point` ("host" for the host's own)."""
    found, length = "host", -1
    for kind, path in ops:
        if under(point, [path]) and len(path) >= length:
            found, length = kind, len(path)
    return found


def main(argv: list[str]) -> int:
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    ops: list[tuple[str, str]] = []  # (kind, path) in the order to mount them
    chdir, setpriv, size, rlimits = "/", "setpriv", "", ""
    i = 0
    while i < len(options):
        name, value = options[i], options[i + 1]
        i += 2
        if name == "--chdir":
            chdir = value
        elif name == "--setpriv":
            setpriv = value
        elif name == "--size":
            size = f",size={value}"
        elif name == "--rlimits":
            rlimits = value
        else:
            ops.append((name.removeprefix("--"), value))
    try:
        held: dict[str, int] = {}
        for kind, path in ops:  # held before anything is mounted over them
            if kind in BINDS:
                try:
                    held[path] = os.open(path, os.O_PATH)
                except FileNotFoundError:
                    if kind == "writable":
                        raise
        devices = {name: os.open(f"/dev/{name}", os.O_PATH) for name in DEVICES}
        make_dev(devices, size)
        done: list[tuple[str, str]] = [("dev", "/dev")]
        for kind, path in ops:
            if kind in ("tmpfs", "hide"):
                if path == "/run" and not os.path.isdir(path):
                    continue
                os.makedirs(path, exist_ok=True)  # a hidden store inside another tmpfs
                mode = "mode=1777" + size if kind == "tmpfs" else "mode=0555"
                mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, mode)
            elif path in held:
                bind(path, held.pop(path))
            else:
                continue
            done.append((kind, path))
        for point, flags in mount_points():
            if governing(point, done) not in ("host", "readonly"):
                continue
            try:
                mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.EINVAL):  # hidden under another mount
                    continue
                fail(f"cannot make {point} read-only: {exc.strerror}")
        os.chdir(chdir)
        for item in filter(None, rlimits.split(",")):
            name, value = item.split("=")
            kind = getattr(resource, "RLIMIT_" + name)
            hard = resource.getrlimit(kind)[1]  # never above it: an unprivileged user cannot
            limit = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)
            resource.setrlimit(kind, (limit, limit))
    except OSError as exc:
        fail(f"{exc.filename or ''}: {exc.strerror}")
    caps = ["--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all", "--no-new-privs"]
    caps.append("--securebits=+noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked")
    try:
        child = os.fork()
    except OSError as exc:
        fail(f"fork: {exc.strerror}")
    if child == 0:
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it; the command must not
        try:
            os.execv(setpriv, [setpriv, *caps, "--", *command])
        except OSError as exc:
            sys.stderr.write(f"{command[0]}: {exc.strerror}\n")
        os._exit(127)
    while True:  # PID 1: reap orphans until the command itself ends
        pid, status = os.wait()
        if pid == child:
            return os.waitstatus_to_exitcode(status) % 256


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
