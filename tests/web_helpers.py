"""Shared pieces of the web page's tests: `orchestrator serve` as a real process, and the
system's headless Chromium driven by Playwright (never a downloaded browser, never skipped:
CI installs Debian's `chromium`; a missing one fails the tests with the command that installs
it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = (
    os.environ.get("ORCHESTRATOR_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium() -> Iterator[Any]:
    """A Playwright browser on the system's Chromium."""
    # deferred: only the browser tests load Playwright
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), (
        f"no Chromium at {CHROMIUM}: `apt-get install -y chromium` (as .ci/run does)"
    )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class Served:
    """`orchestrator serve` running in a process of its own; `url` is what it printed (the
    address with `?token=`), `base` that address without it, `token` the token."""

    def __init__(
        self,
        store: Path | None,
        *extra: str,
        env: dict[str, str] | None = None,
        temporal: tuple[str, str] | None = None,
    ):
        """`store`, or `temporal` (address, task queue): where the threads are."""
        command = [sys.executable, "-m", "orchestrator", "serve"]
        if temporal is not None:
            command += ["--temporal", temporal[0], "--task-queue", temporal[1]]
        else:
            command += ["--store", str(store)]
        self.process = subprocess.Popen(
            [*command, "--port", "0", *extra],
            env=env or dict(os.environ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        self.lines: list[str] = []
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise AssertionError(f"serve ended: {self.process.stderr.read()}")  # type: ignore[union-attr]
            self.lines.append(line)
            found = re.search(r"(http://\S+)", line)
            if found:
                self.url = found.group(1)
            if "Ctrl-C" in line:  # the last line printed before serving
                break
        self.base, _, query = self.url.partition("?")
        self.token = query.removeprefix("token=")
        self.origin = self.base.rstrip("/")

    def at(self, path: str) -> str:
        """The address of `path` with the token: a browser's first visit, which sets the
        cookie and is sent on to the same address without it."""
        joiner = "&" if "?" in path else "?"
        return f"{self.base}{path}{joiner}token={self.token}" if self.token else self.base + path

    def headers(self, **more: str) -> dict[str, str]:
        """What a program sends: the token, and the server's own Origin (needed by a POST)."""
        return {"Authorization": f"token {self.token}", "Origin": self.origin, **more}

    def stop(self) -> str:
        self.process.terminate()
        try:
            _, err = self.process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err


@contextmanager
def served(
    store: Path | None,
    *extra: str,
    env: dict[str, str] | None = None,
    temporal: tuple[str, str] | None = None,
) -> Iterator[Served]:
    server = Served(store, *extra, env=env, temporal=temporal)
    try:
        yield server
    finally:
        server.stop()


def in_thread(function: Any, *args: Any, **kw: Any) -> Any:
    """Call `function` on a thread of its own: Playwright's sync API keeps an event loop on
    the test's thread, where `asyncio.run` (inside `run_thread`) may not start another."""
    # deferred: only the browser tests need it
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(function, *args, **kw).result(timeout=120)
