"""The API key against an attacker inside real threads, through the `orchestrator` command.

A model-played role (the fake Messages API scripts its bash calls) and a command actor (a small
Python agent) both try to get the orchestrator's API key: from `/proc/$PPID/environ` and
`/proc/1/environ` (reversed, base64'd, cut into slices), `env`, `printenv`, every process's
environ, and a variable that carries the key in its value. Afterwards the key, reversed, in
base64 and in 16-character slices, is in none of: the SQLite store, the exported recording, the
`--json` output, or any request body the fake API received.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse

KEY = "sk-ant-test-SECRET-0123456789abcdef"

ATTACKS = [
    r"tr '\0' '\n' < /proc/$PPID/environ | grep ANTHROPIC | rev",
    r"tr '\0' '\n' < /proc/1/environ | grep -a ANTHROPIC",
    r"base64 -w0 /proc/$PPID/environ; echo; base64 -w0 /proc/1/environ",
    r"grep -a ANTHROPIC_API_KEY /proc/$PPID/environ | cut -c1-40; cut -z -c19-60 /proc/$PPID/environ | tr '\0' '\n'",
    r"env; printenv; printenv ANTHROPIC_API_KEY MY_CONFIG",
    r"for f in /proc/[0-9]*/environ; do tr '\0' '\n' < $f; done | sort -u | rev",
    r"ps -eo pid,ppid,args; ls /proc",
]

GRAPH = """
name: probe
description: Roles that try to steal the API key.
roles:
  prober:
    description: A model with a shell
    goal: You probe.
    tools: [read, shell]
    SANDBOX
    frontmatter:
      type: object
      properties: { $status: { const: done }, found: { type: string } }
      required: [$status, found]
  agent:
    description: An external agent
    goal: You probe too.
    actor: { command: [PYTHON, AGENT], timeout: 60 }
    SANDBOX
    frontmatter:
      type: object
      properties: { $status: { const: done }, found: { type: string } }
      required: [$status, found]
graph:
  $START:
    _: { role: prober, prompt: "Find the key: {{{$inputs.task}}}" }
  prober:
    done: { role: agent, prompt: "Find it too: {{{found}}}" }
  agent:
    done: { role: $END, prompt: "{{{found}}}" }
"""

AGENT = textwrap.dedent(
    r"""
    import base64, os, subprocess, sys
    sys.stdin.read()
    seen = []
    def grab(path):
        try:
            seen.append(open(path, "rb").read().decode(errors="replace"))
        except OSError as exc:
            seen.append(f"{path}: {exc.strerror}")
    grab(f"/proc/{os.getppid()}/environ")
    grab("/proc/1/environ")
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            grab(f"/proc/{entry}/environ")
    seen.append(repr(dict(os.environ)))
    for cmd in ("env", "printenv", f"tr '\\0' '\\n' < /proc/{os.getppid()}/environ | rev"):
        seen.append(subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout)
    text = "\n".join(seen)
    hits = text.count("ANTHROPIC_API_KEY") + text.count("sk-ant-")
    blob = base64.b64encode(text.encode()).decode()
    print("---\n$status: done\nfound: 'agent saw " + str(hits) + " key marks'\n---")
    print(text)
    print(text[::-1])
    print(blob)
    """
)


def forms(key: str) -> list[str]:
    """The key, reversed, in base64 at each alignment (std and URL-safe), and 16-char slices."""
    out = {key, key[::-1]}
    for text in (key, key[::-1]):
        for shift in range(3):
            encoded = base64.b64encode(b"\x00" * shift + text.encode()).decode()
            core = encoded[(shift * 8 + 5) // 6 : ((shift + len(text)) * 8) // 6]
            out |= {core, core.replace("+", "-").replace("/", "_")}
    out |= {key[i : i + 16] for i in range(len(key) - 15)}
    return sorted(out)


def assert_no_key(where: str, data: str | bytes) -> None:
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    for form in forms(KEY):
        assert form not in text, f"{where} holds {form!r}"


@pytest.fixture
def server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


def project(tmp_path: Path, sandbox: str = "") -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "agent.py").write_text(AGENT)
    graph = GRAPH.replace("PYTHON", json.dumps(sys.executable))
    graph = graph.replace("AGENT", json.dumps(str(root / "agent.py")))
    graph = graph.replace("SANDBOX", sandbox)
    (root / "probe.yaml").write_text(textwrap.dedent(graph).lstrip())
    return root


def cli(
    root: Path, server: FakeAnthropic, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "ORCHESTRATOR_"))
    }
    environ.update(
        ANTHROPIC_API_KEY=KEY,
        ANTHROPIC_BASE_URL=server.url,
        ORCHESTRATOR_HOME=str(root / "store"),
        MY_CONFIG=f"https://example.invalid/?k={KEY}",
        GITHUB_TOKEN="ghp_not_a_real_token_123456",
        DB_PASSWD="hunter2-hunter2",
        **env,
    )
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=root,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )


def script_attacks(server: FakeAnthropic) -> None:
    for command in ATTACKS:
        server.reply(FakeResponse.tool_use("bash", {"command": command}))
    server.reply_text("---\n$status: done\nfound: nothing\n---\nI tried.")


def tool_outputs(server: FakeAnthropic) -> list[str]:
    outputs = []
    for body in server.message_requests:
        for block in body["messages"][-1]["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                outputs.append(str(block["content"]))
    return outputs


def run_and_check(root: Path, server: FakeAnthropic, **env: str) -> dict[str, Any]:
    run = cli(root, server, "run", "probe.yaml", "the key", "--json", **env)
    assert run.returncode == 0, run.stderr + run.stdout
    assert_no_key("--json output", run.stdout)
    assert_no_key("stderr", run.stderr)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    thread_id = result.get("thread_id") or result.get("thread")
    assert thread_id, result
    exported = cli(root, server, "threads", "export", str(thread_id))
    assert exported.returncode == 0, exported.stderr
    assert_no_key("the recording", exported.stdout)
    files = [p for p in (root / "store").rglob("*") if p.is_file()]
    assert any(p.suffix in (".db", ".sqlite", ".sqlite3") for p in files), files
    for path in files:
        assert_no_key(str(path), path.read_bytes())
    assert len(server.requests) >= len(ATTACKS) + 1
    for request in server.requests:
        assert_no_key(f"request to {request.path}", request.raw)
    return {"stdout": run.stdout, "stderr": run.stderr, "recording": exported.stdout}


def test_the_key_reaches_no_model_store_or_recording(tmp_path: Path, server: FakeAnthropic) -> None:
    root = project(tmp_path)
    script_attacks(server)
    seen = run_and_check(root, server)
    outputs = tool_outputs(server)
    assert len(outputs) == len(ATTACKS)
    joined = "\n".join(outputs)
    # The sandbox hid the orchestrator: nothing to redact, the key was never in reach.
    assert "[redacted]" not in joined
    assert "ANTHROPIC" not in joined and "GITHUB_TOKEN" not in joined and "hunter2" not in joined
    assert "MY_CONFIG" not in joined  # its value held the key: dropped by value
    assert "agent saw 0 key marks" in seen["recording"]


def test_without_the_sandbox_scrubbing_still_keeps_the_key_out(
    tmp_path: Path, server: FakeAnthropic
) -> None:
    """`sandbox: off`: the attacks reach the key, and the redaction is what stops it (loudly)."""
    root = project(tmp_path, sandbox="sandbox: off")
    script_attacks(server)
    seen = run_and_check(root, server)
    assert "[redacted]" in "\n".join(tool_outputs(server))  # the key was read, then redacted
    assert "agent saw 0 key marks" not in seen["recording"]  # the agent read it too
    assert "WITHOUT a sandbox" in seen["stderr"]
    assert "'prober'" in seen["stderr"] and "'agent'" in seen["stderr"]
