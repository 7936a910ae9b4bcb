"""Orchestrator's faces cannot be used to answer for a person or to reach too far.

`orchestrator serve`: every request needs the token printed at start, on loopback too, and a
request that changes something needs the server's own `Origin`. The first attack is the one
that worked before: a command a role runs, in the real sandbox (bubblewrap, and the unshare
fallback) with its network on, posts an answer to another thread's waiting person. Its control
is the same post with the token and the Origin, which is taken; and with `--no-token` (the
defence switched off) the same command answers.

`orchestrator mcp`, driven by the `mcp` package's own client: a graph, a workspace or a
recording named by the agent must be in the folders the server was given; a graph with
`sandbox: off` runs only with `--allow-unsandboxed`. The controls are the same calls on a
server given the folder or the flag.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from orchestrator import get_thread
from tests.cli_helpers import Project
from tests.test_answer_cli import GRAPH as HUMAN_GRAPH
from tests.test_answer_cli import PROPOSAL
from tests.test_mcp_server import ASK, data_of, run_session, text_of
from tests.web_helpers import Served, served

# A command actor that posts a person's answer to the page, as any local process could.
POKE = """
import http.client, sys, urllib.parse
sys.stdin.read()
url, token, origin = sys.argv[1:4]
parts = urllib.parse.urlsplit(url)
headers = {"Content-Type": "application/x-www-form-urlencoded"}
if token:
    headers["Authorization"] = "token " + token
if origin:
    headers["Origin"] = origin
try:
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    connection.request("POST", parts.path, body="step=2&status=yes&field.budget=5",
                       headers=headers)
    code = connection.getresponse().status
except OSError:
    code = 0
print("---\\n$status: tried\\ncode: %d\\n---\\n" % code)
"""

POKE_GRAPH = """
name: poke
description: A command that posts to the web page.
roles:
  poker:
    description: Posts
    goal: Post.
    actor: { command: [PYTHON, SCRIPT, URL, TOKEN, ORIGIN] }
    frontmatter:
      type: object
      properties: { $status: { const: tried }, code: { type: integer } }
      required: [$status, code]
graph:
  $START: { _: { role: poker, prompt: go } }
  poker: { tried: { role: $END, prompt: "code {{code}}" } }
"""


@pytest.fixture
def waiting(tmp_path: Path) -> Iterator[tuple[Project, str]]:
    """A project whose thread waits for a person (step 2, the boss)."""
    project = Project(tmp_path)
    project.graph(HUMAN_GRAPH, "approve")
    project.script(worker=[PROPOSAL])
    assert project.run("run", "approve", "owls").returncode == 3
    yield project, project.threads()[0]["id"]


def poke(project: Project, url: str, token: str = "", origin: str = "") -> int:
    """Run the poking command as a role, in the sandbox; the HTTP status it got."""
    script = project.root / "poke.py"
    script.write_text(POKE)
    text = POKE_GRAPH.replace("SCRIPT", json.dumps(str(script))).replace("URL", json.dumps(url))
    project.graph(
        text.replace("TOKEN", json.dumps(token)).replace("ORIGIN", json.dumps(origin)), "poke"
    )
    out = project.run("run", "poke", "go", "--json")
    assert out.returncode == 0, out.stderr
    return int(json.loads(out.stdout.splitlines()[-1])["final"].split()[-1])


def state_of(project: Project, thread_id: str, until: str | None = None) -> str:
    for _ in range(200):
        state = get_thread(thread_id, store=project.store).state
        if until is None or state == until:
            return state
        time.sleep(0.1)
    return state


def test_a_sandboxed_command_cannot_answer_a_waiting_person(
    waiting: tuple[Project, str], mechanism: str
) -> None:
    project, thread_id = waiting
    with served(project.store, env=project.env()) as server:
        answer = f"{server.base}threads/{thread_id}/answer"
        assert poke(project, answer) == 401  # attack: no token
        assert poke(project, answer, origin=server.origin) == 401  # a forged Origin alone
        assert state_of(project, thread_id) == "waiting"

        # control: the same post with the token and the server's Origin is taken
        assert poke(project, answer, server.token, server.origin) == 303
        assert state_of(project, thread_id, until="completed") == "completed"
    assert get_thread(thread_id, store=project.store).steps[-1].frontmatter["budget"] == 5


def test_without_the_token_the_same_command_answers(
    waiting: tuple[Project, str], mechanism: str
) -> None:
    """The attack itself, with the defence switched off (`--no-token`): a local process can
    send any Origin it likes, so only the token stops it."""
    project, thread_id = waiting
    server = Served(project.store, "--no-token", env=project.env())
    try:
        assert "?token=" not in server.url
        answer = f"{server.base}threads/{thread_id}/answer"
        assert poke(project, answer, origin=server.origin) == 303
        assert state_of(project, thread_id, until="completed") == "completed"
    finally:
        errors = server.stop()
    assert "warning: --no-token" in errors


def call(
    server: Served, path: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> http.client.HTTPResponse:
    where = urlsplit(server.base)
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
    body = b"" if method == "POST" else None
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    if response.getheader("content-type", "").startswith("text/event-stream"):
        connection.close()  # a live feed never ends: its status is what is asked
    else:
        response.read()
    return response


def test_the_thread_list_needs_the_token(waiting: tuple[Project, str]) -> None:
    project, thread_id = waiting
    with served(project.store, env=project.env()) as server:
        refused = call(server, "/")
        assert refused.status == 401  # attack: a local process reads the threads
        assert call(server, "/events").status == 401  # the live feeds too
        assert call(server, f"/threads/{thread_id}/events").status == 401
        assert call(server, "/static/app.js").status == 401
        assert call(server, f"/?token=not-{server.token}").status == 401
        assert call(server, "/", {"Cookie": f"orchestrator-token-1={server.token}"}).status == 401

        login = call(server, f"/?token={server.token}&state=waiting")
        assert login.status == 303  # control: the printed address, then the page without it
        assert login.headers["location"] == "/?state=waiting"
        cookie = login.headers["set-cookie"]
        port = urlsplit(server.base).port
        assert (
            cookie == f"orchestrator-token-{port}={server.token}; Path=/; HttpOnly; SameSite=Strict"
        )
        with_cookie = {"Cookie": cookie.split(";", 1)[0]}
        assert call(server, "/?state=waiting", with_cookie).status == 200
        assert call(server, f"/threads/{thread_id}/events", with_cookie).status == 200
        assert call(server, "/", {"Authorization": f"token {server.token}"}).status == 200


def test_a_post_needs_the_servers_own_origin(waiting: tuple[Project, str]) -> None:
    project, thread_id = waiting
    with served(project.store, env=project.env()) as server:
        cancel = f"/threads/{thread_id}/cancel"
        token = {"Authorization": f"token {server.token}"}
        for origin in ("http://attacker.example", "null", f"{server.origin}.attacker.example"):
            assert call(server, cancel, {**token, "Origin": origin}, "POST").status == 403
        assert call(server, cancel, token, "POST").status == 403  # no Origin at all
        assert call(server, cancel, {"Origin": server.origin}, "POST").status == 401
        assert state_of(project, thread_id) == "waiting"

        assert call(server, cancel, server.headers(), "POST").status == 303  # control
    assert state_of(project, thread_id) == "cancelled"


def test_no_token_is_refused_off_loopback(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "orchestrator", "serve", "--store", str(tmp_path / "s")]
        + ["--host", "0.0.0.0", "--port", "0", "--no-token"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 2
    assert "--no-token is for a loopback address only" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_token_from_the_environment_is_used_and_checked(tmp_path: Path) -> None:
    env = {**os.environ, "ORCHESTRATOR_SERVE_TOKEN": "a-token-for-scripts-0123"}
    with served(tmp_path / "s", env=env) as server:
        assert server.token == "a-token-for-scripts-0123"
        assert call(server, "/", server.headers()).status == 200
    bad = subprocess.run(
        [sys.executable, "-m", "orchestrator", "serve", "--store", str(tmp_path / "s")],
        env={**env, "ORCHESTRATOR_SERVE_TOKEN": "short"},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert bad.returncode == 2 and "ORCHESTRATOR_SERVE_TOKEN must be" in bad.stderr


# ---------------------------------------------------------------------- orchestrator mcp

UNCONFINED = """
name: unconfined
description: A command run unconfined.
roles:
  runner:
    description: Runs
    goal: Run.
    actor: { command: [PYTHON, "-c", SCRIPT] }
    sandbox: off
    frontmatter: { type: object, properties: { $status: { const: done } }, required: [$status] }
graph:
  $START: { _: { role: runner, prompt: go } }
  runner: { done: { role: $END, prompt: "ran unconfined" } }
"""
SAY_DONE = "import sys; sys.stdin.read(); print('---\\n$status: done\\n---')"
PARENT = """
name: parent
description: Runs the unconfined graph as a child.
roles:
  child: { description: Runs it, graph: unconfined }
graph:
  $START: { _: { role: child, prompt: go } }
  child: { done: { role: $END, prompt: "child done" } }
"""
MARKER = "secretmarker-7f3a"
# A graph whose problem tells a key of the file: what validate_graph would leak of any YAML.
LEAKY = f"name: leaky\ndescription: d\nroles: {{}}\ngraph: {{}}\n{MARKER}: 1\n"


def mcp_session(tmp_path: Path, calls: list[tuple[str, dict[str, Any]]], *flags: str) -> list[Any]:
    """The results of `calls` made in order by the `mcp` client to a server with `flags`."""
    results: list[Any] = []

    async def script(session: Any, project: Path) -> None:
        unconfined = UNCONFINED.replace("PYTHON", json.dumps(sys.executable))
        (project / "graphs" / "unconfined.yaml").write_text(
            unconfined.replace("SCRIPT", json.dumps(SAY_DONE))
        )
        (project / "graphs" / "parent.yaml").write_text(PARENT)
        for name, arguments in calls:
            results.append(await session.call_tool(name, arguments))

    run_session(tmp_path, script, *flags)
    return results


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the project (outside it), with a runnable graph and a leaky one; the
    project's graphs/ links to the runnable one."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "evil.yaml").write_text(ASK.replace("name: ask", "name: evil"))
    (folder / "leaky.yaml").write_text(LEAKY)
    (tmp_path / "project" / "graphs").mkdir(parents=True)
    (tmp_path / "project" / "graphs" / "link.yaml").symlink_to(folder / "evil.yaml")
    return folder


def test_mcp_starts_no_graph_from_outside_the_graph_folders(tmp_path: Path, outside: Path) -> None:
    evil = str(outside / "evil.yaml")
    start = {"inputs": {"task": "x"}}
    refused = mcp_session(
        tmp_path,
        [
            ("start_thread", {"graph": evil, **start}),  # attack: an absolute path
            ("start_thread", {"graph": "graphs/../../outside/evil.yaml", **start}),
            ("start_thread", {"graph": "link", **start}),  # a link out of graphs/
            ("start_thread", {"graph": "graphs/link.yaml", **start}),
            ("start_thread", {"graph": "ask", "workspace": str(outside), **start}),
            ("start_thread", {"graph": "solve-issue", "replay": "/etc/passwd"}),
            ("list_threads", {}),
            ("start_thread", {"graph": "ask", **start}),  # controls: a project graph,
            ("validate_graph", {"graph": "solve-issue"}),  # and a bundled one
        ],
    )
    for result in refused[:6]:
        assert result.is_error and "refused" in text_of(result), text_of(result)
    assert "graphs are taken only from" in text_of(refused[0])
    assert str(tmp_path / "project" / "graphs") in text_of(refused[0])
    assert "--allow-workspace" in text_of(refused[4])
    assert data_of(refused[6]) == []  # nothing was started
    assert data_of(refused[7])["state"] == "waiting"
    assert data_of(refused[8])["valid"] is True

    allowed = mcp_session(  # control: the folder allowed, its graph starts
        tmp_path / "again",
        [("start_thread", {"graph": evil, **start})],
        "--allow-graphs",
        str(outside),
    )
    assert data_of(allowed[0])["state"] == "waiting"


def test_mcp_validate_reads_no_file_outside(tmp_path: Path, outside: Path) -> None:
    leaky = str(outside / "leaky.yaml")
    results = mcp_session(
        tmp_path,
        [
            ("validate_graph", {"graph": "/etc/passwd"}),
            ("validate_graph", {"graph": leaky}),
            ("validate_graph", {"graph": "../outside/leaky.yaml"}),
        ],
    )
    for result in results:
        text = text_of(result)
        assert result.is_error and "refused" in text, text
        assert MARKER not in text and "root:" not in text

    control = mcp_session(
        tmp_path / "again", [("validate_graph", {"graph": leaky})], "--allow-graphs", str(outside)
    )
    assert MARKER in json.dumps(data_of(control[0]))  # what the refusal keeps from the caller


def test_mcp_runs_an_unconfined_graph_only_when_allowed(tmp_path: Path) -> None:
    calls = [
        ("start_thread", {"graph": "unconfined", "inputs": {"task": "x"}}),
        ("start_thread", {"graph": "parent", "inputs": {"task": "x"}}),
        ("list_threads", {}),
    ]
    refused = mcp_session(tmp_path, calls)
    assert refused[0].is_error and "sandbox: off" in text_of(refused[0])
    assert "--allow-unsandboxed" in text_of(refused[0])
    assert refused[1].is_error and "child/runner" in text_of(refused[1])
    assert data_of(refused[2]) == []

    allowed = mcp_session(tmp_path / "again", calls[:1], "--allow-unsandboxed")
    assert data_of(allowed[0])["state"] == "completed"
    assert data_of(allowed[0])["final"] == "ran unconfined"


GATE = """
name: gate
description: A person approves, then a command runs unconfined.
roles:
  boss:
    description: Approves
    goal: Approve.
    actor: human
    frontmatter: { type: object, properties: { $status: { const: go } }, required: [$status] }
  runner:
    description: Runs
    goal: Run.
    actor: { command: [PYTHON, "-c", SCRIPT] }
    sandbox: off
    frontmatter: { type: object, properties: { $status: { const: done } }, required: [$status] }
graph:
  $START: { _: { role: boss, prompt: "Go?" } }
  boss: { go: { role: runner, prompt: run } }
  runner: { done: { role: $END, prompt: "ran unconfined" } }
"""


def gate_waiting(root: Path) -> str:
    """A thread of `gate` started on the command line in root/project, waiting for the boss."""
    graphs = root / "project" / "graphs"
    graphs.mkdir(parents=True)
    text = GATE.replace("PYTHON", json.dumps(sys.executable))
    (graphs / "gate.yaml").write_text(text.replace("SCRIPT", json.dumps(SAY_DONE)))
    run = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", "gate", "go", "--json"]
        + ["--store", str(root / "store")],
        cwd=root / "project",
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 3, run.stderr
    return str(json.loads(run.stdout.splitlines()[-1])["thread"])


def test_mcp_answers_no_unconfined_thread_started_elsewhere(tmp_path: Path) -> None:
    """A thread of a `sandbox: off` graph started on the command line waits for a person: the
    agent cannot answer it (and so run the command) through the server without the flag."""
    thread_id = gate_waiting(tmp_path)
    refused = mcp_session(
        tmp_path,
        [
            ("answer_thread", {"thread": thread_id, "status": "go"}),
            ("resume_thread", {"thread": thread_id}),
        ],
    )
    for result in refused:
        assert result.is_error and "--allow-unsandboxed" in text_of(result), text_of(result)
    assert get_thread(thread_id, store=tmp_path / "store").state == "waiting"

    again = gate_waiting(tmp_path / "again")  # control: the server allows it
    allowed = mcp_session(
        tmp_path / "again",
        [("answer_thread", {"thread": again, "status": "go"})],
        "--allow-unsandboxed",
    )
    assert data_of(allowed[0])["final"] == "ran unconfined"


def test_open_puts_the_token_on_no_command_line(tmp_path: Path) -> None:
    """`serve --open` hands the browser a file only this user can read, which leads on to the
    address with the token; the browser's command line, which any process can read, has no
    token."""
    seen = tmp_path / "browser.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(
        "import sys, pathlib, os\n"
        "page = pathlib.Path(sys.argv[1].removeprefix('file://'))\n"
        f"pathlib.Path({str(seen)!r}).write_text("
        "sys.argv[1] + '\\n' + oct(os.stat(page).st_mode & 0o777) + '\\n' + page.read_text())\n"
    )
    env = {**os.environ, "BROWSER": f"{sys.executable} {browser} %s"}
    with served(tmp_path / "store", "--open", env=env) as server:
        for _ in range(200):
            if seen.exists() and seen.read_text().count("\n") >= 2:
                break
            time.sleep(0.05)
        argument, mode, page = seen.read_text().split("\n", 2)
        assert server.token not in argument and argument.startswith("file://")
        assert mode == "0o600"
        assert f"{server.base}?token={server.token}" in page
