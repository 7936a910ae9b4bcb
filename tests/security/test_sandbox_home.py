"""The sandbox hides the host's home folders (docs/security.md: no role sees `~/.ssh`, `~/.aws`, ...).

Attacks, under bubblewrap and the `unshare` fallback: a role's shell command and a command
actor read a file planted in a folder under the REAL home of the test's user (`$HOME`, `/root`
in CI) and under `/home/<someone>`: not found. Controls: the same file is read (and written)
when its folder is listed under the role's `sandbox: writable:`, and a workspace placed under
the home stays visible and writable while the rest of the home does not.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.actors.base import ActRequest
from orchestrator.actors.command import CommandProcessActor
from orchestrator.definition.models import Role, Sandbox
from orchestrator.tools import sandbox as sandboxing
from orchestrator.tools.boundary import home_roots
from orchestrator.tools.shell import Shell
from orchestrator.tools.workspace import Workspace

SECRET = "home-secret-5e1f"


@pytest.fixture
def durable() -> Iterator[Path]:
    """A workspace outside /tmp and the homes (the sandbox hides both)."""
    path = Path(tempfile.mkdtemp(prefix="home-test-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _home_folder(where: str) -> Iterator[Path]:
    made_home = False
    if where == "own":
        parent = Path(os.path.realpath(os.path.expanduser("~")))
    else:
        parent = Path("/home")
        if not parent.is_dir():
            if os.geteuid() != 0:
                pytest.skip("no /home here, and only root may make one")
            parent.mkdir()
            made_home = True
    folder = Path(tempfile.mkdtemp(prefix=".orchestrator-home-test-", dir=parent))
    (folder / "credentials").write_text(SECRET)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if made_home:
            shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture(params=["own", "home"], ids=["real-HOME", "slash-home"])
def planted(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A folder holding a secret file under the real `$HOME` of this process, or `/home`."""
    yield from _home_folder(request.param)


def shell(ws: Path, command: str, **sandbox: object) -> str:
    setting = Sandbox(**sandbox) if sandbox else None  # type: ignore[arg-type]
    tool = Shell(Workspace(ws), sandbox=setting, role_name="r")
    text, _ = asyncio.run(tool.run({"command": command}))
    return text


def test_the_roots_hold_the_real_home() -> None:
    roots = sandboxing.hidden_roots(sandboxing.Policy())
    home = Path(os.path.realpath(os.path.expanduser("~")))
    assert any(home.is_relative_to(r) for r in roots), roots
    assert Path("/") not in roots


@pytest.mark.parametrize("home", ["/", "/usr", "/var"])
def test_a_home_that_holds_the_system_is_not_hidden(
    home: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", home)
    assert home_roots() == [Path("/home"), Path("/root")]


def test_a_home_elsewhere_is_hidden_too(
    mechanism: str, durable: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: a service account's home outside `/home` (`/var/lib/x`); control: the same
    file read once the folder is writable."""
    home = Path(tempfile.mkdtemp(prefix="home-elsewhere-", dir="/var/tmp"))
    try:
        (home / ".netrc").write_text(SECRET)
        monkeypatch.setenv("HOME", str(home))
        assert home in home_roots()
        assert SECRET not in shell(durable, f"cat {home}/.netrc")
        assert SECRET in shell(durable, f"cat {home}/.netrc", writable=[str(home)])
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_a_shell_command_cannot_read_a_file_under_a_home(
    mechanism: str, durable: Path, planted: Path
) -> None:
    """Attack: `cat ~/.../credentials` (and a listing of its folder) from a role's shell."""
    text = shell(durable, f"cat {planted}/credentials")
    assert SECRET not in text and "No such file" in text, text
    listing = shell(durable, f"ls -a {planted.parent}")
    assert planted.name not in listing, listing


def test_control_the_file_is_read_when_its_folder_is_writable(
    mechanism: str, durable: Path, planted: Path
) -> None:
    """Control: the same command reads it (and writes beside it) once the role lists it."""
    text = shell(
        durable, f"cat {planted}/credentials; echo ok > {planted}/out", writable=[str(planted)]
    )
    assert SECRET in text, text
    assert (planted / "out").read_text() == "ok\n"


def test_control_a_readable_folder_is_read_but_not_written(
    mechanism: str, durable: Path, planted: Path
) -> None:
    """Control: `sandbox: readable:` shows the folder (a toolchain under `~`) read-only."""
    text = shell(
        durable, f"cat {planted}/credentials; echo x > {planted}/out", readable=[str(planted)]
    )
    assert SECRET in text and "Read-only file system" in text, text
    assert not (planted / "out").exists()


AGENT = (
    "import sys; sys.stdin.read()\n"
    "try:\n    seen = open({path!r}).read()\n"
    "except OSError as exc:\n    seen = 'refused: ' + type(exc).__name__\n"
    "print('---\\n---\\n' + seen)"
)


def agent_request(ws: Path, **sandbox: object) -> ActRequest:
    setting = Sandbox(**sandbox)  # type: ignore[arg-type]
    role = Role(description="d", goal="g", frontmatter={}, sandbox=setting)
    return ActRequest(thread_id="T", step=1, role_name="agent", role=role, prompt="p", workspace=ws)


def agent_reads(ws: Path, path: Path, **sandbox: object) -> str:
    import sys  # here: the interpreter that plays the agent

    # The path is in the code, not an argument of its own: the sandbox keeps the command's own
    # files (an absolute path in its argv) visible, and the graph's author, not a role, says them.
    code = AGENT.format(path=str(path))
    actor = CommandProcessActor([sys.executable, "-c", code], timeout=60)
    return asyncio.run(actor.play(agent_request(ws, **sandbox))).text


def test_a_command_actor_cannot_read_a_file_under_a_home(
    mechanism: str, durable: Path, planted: Path
) -> None:
    text = agent_reads(durable, planted / "credentials")
    assert SECRET not in text and "refused: FileNotFoundError" in text, text


def test_control_a_command_actor_reads_it_when_listed(
    mechanism: str, durable: Path, planted: Path
) -> None:
    text = agent_reads(durable, planted / "credentials", writable=[str(planted)])
    assert SECRET in text, text


def test_a_workspace_under_the_home_stays_visible_and_writable(
    mechanism: str, planted: Path
) -> None:
    """Control for the hidden home: a user's checkout in `~/src/x` is still the role's, while
    its neighbour in the same home is out of sight."""
    ws = planted / "src" / "project"
    ws.mkdir(parents=True)
    (ws / "README").write_text("the project")
    text = shell(ws, f"cat README; echo made > new.txt; cat {planted}/credentials")
    assert "the project" in text and (ws / "new.txt").read_text() == "made\n", text
    assert SECRET not in text, text
    text = agent_reads(ws, ws / "README")
    assert "the project" in text, text
