"""Python actors, Python tools and MCP tools: what each costs, next to the alternative.

Three comparisons in one run, each side by side with what a graph would use otherwise:

1. A deterministic step. A thread of N steps (default 200) where one role answers N times: as a
   Python actor (`actor: {python: ...}`) and as a command actor (`actor: {command: [python3,
   script]}`, the way to do it without this feature), both through the real runner and the
   SQLite store. Reported: milliseconds per step and the ratio.
2. A Python tool call. `ToolBox.run` on a Python tool (input validated by pydantic, a sync
   function run in a worker thread, the result scrubbed of secrets) against calling the
   function directly. Reported: microseconds per call and the ratio.
3. An MCP tool call. A server written with the `mcp` package's `MCPServer`: its start (process,
   handshake, tool list) through orchestrator's pool, and one call through the pool against
   the same call made on a bare `mcp` ClientSession. Reported: milliseconds and the ratio.

    python bench/actors.py [--steps 200] [--calls 2000] [--mcp-calls 200] [--no-sandbox]

The command actor and the MCP server run in the sandbox by default, as they would in a real run;
`--no-sandbox` measures them unconfined.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from orchestrator import run_thread
from orchestrator.definition.models import McpServer
from orchestrator.tools.mcp_client import ServerPool
from orchestrator.tools.pytools import load_tool
from orchestrator.tools.toolbox import ToolBox

GRAPH = """\
name: loop
description: One role answers N times.
roles:
  counter:
    description: Counts
    goal: Count.
    ACTOR
    SANDBOX
    frontmatter:
      oneOf:
        - type: object
          properties: { $status: { const: more }, n: { type: integer } }
          required: [$status, n]
        - type: object
          properties: { $status: { const: done }, n: { type: integer } }
          required: [$status, n]
limits: { max_steps: 100000, max_visits: 100000 }
graph:
  $START:
    _: { role: counter, prompt: "0" }
  counter:
    more: { role: counter, prompt: "{{n}}" }
    done: { role: $END, prompt: "{{n}}" }
"""

COUNTER_PY = """\
def count(call):
    n = int(call.prompt) + 1
    return {"$status": "more" if n < LIMIT else "done", "n": n}
"""

COUNTER_SCRIPT = """\
import sys
prompt = sys.stdin.read()
n = int(prompt.rsplit("# Your instruction", 1)[1].split()[0]) + 1
print(f"---\\n$status: {'more' if n < LIMIT else 'done'}\\nn: {n}\\n---")
"""

TOOL_PY = '''\
def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Args:
        a: the first
        b: the second
    """
    return a + b
'''

SERVER_PY = """\
from mcp.server import MCPServer

server = MCPServer("bench")


@server.tool()
def add(a: int, b: int = 1) -> int:
    \"\"\"Add two numbers.\"\"\"
    return a + b


server.run()
"""


def steps(folder: Path, n: int, sandbox: bool) -> dict[str, float]:
    (folder / "counter.py").write_text(COUNTER_PY.replace("LIMIT", str(n)))
    (folder / "counter_cmd.py").write_text(COUNTER_SCRIPT.replace("LIMIT", str(n)))
    box = "" if sandbox else "sandbox: off"
    variants = {
        "python actor": 'actor: { python: "counter:count" }',
        "command actor": f"actor: {{ command: [{sys.executable}, {folder / 'counter_cmd.py'}] }}",
    }
    out: dict[str, float] = {}
    for label, actor in variants.items():
        path = folder / f"{label.split()[0]}" / "loop.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(GRAPH.replace("ACTOR", actor).replace("SANDBOX", box))
        if label == "python actor":
            (path.parent / "counter.py").write_text(COUNTER_PY.replace("LIMIT", str(n)))
        started = time.perf_counter()
        result = run_thread(path, {"task": "count"}, store=folder / "store", workspace=folder)
        elapsed = time.perf_counter() - started
        assert result.state == "completed" and result.steps == n, (label, result.reason)
        out[label] = elapsed / n * 1000
    return out


def python_tool(folder: Path, calls: int) -> dict[str, float]:
    (folder / "benchtool.py").write_text(TOOL_PY)
    tool = load_tool("benchtool:add", str(folder))
    box = ToolBox(folder, [], extra=[tool])

    async def through_toolbox() -> float:
        started = time.perf_counter()
        for i in range(calls):
            text, is_error = await box.run("add", {"a": i})
            assert not is_error and text == str(i + 1)
        return (time.perf_counter() - started) / calls * 1e6

    async def in_a_thread() -> float:
        started = time.perf_counter()
        for i in range(calls):
            assert await asyncio.to_thread(tool.function, a=i) == i + 1
        return (time.perf_counter() - started) / calls * 1e6

    direct_started = time.perf_counter()
    for i in range(calls):
        assert tool.function(a=i) == i + 1
    direct = (time.perf_counter() - direct_started) / calls * 1e6
    return {
        "ToolBox.run (python tool)": asyncio.run(through_toolbox()),
        "asyncio.to_thread(f) alone": asyncio.run(in_a_thread()),
        "direct call": direct,
    }


def mcp_calls(folder: Path, calls: int, sandbox: bool) -> dict[str, float]:
    from mcp import ClientSession  # why: the mcp extra, only for this part
    from mcp.client.stdio import StdioServerParameters, stdio_client

    script = folder / "bench_server.py"
    script.write_text(SERVER_PY)
    spec = McpServer(command=[sys.executable, str(script)])

    async def through_pool() -> tuple[float, float]:
        pool = ServerPool()
        started = time.perf_counter()
        server = await pool.server(spec, folder, "off" if not sandbox else _default(), "bench")
        start_ms = (time.perf_counter() - started) * 1000
        tool = server.tools[0]
        started = time.perf_counter()
        for i in range(calls):
            text, is_error = await tool.call({"a": i}, folder)
            assert not is_error and text == str(i + 1), text
        per_call = (time.perf_counter() - started) / calls * 1000
        await pool.aclose()
        return start_ms, per_call

    async def bare() -> tuple[float, float]:
        params = StdioServerParameters(command=sys.executable, args=[str(script)])
        with open(folder / "bare.err", "w") as errlog:
            started = time.perf_counter()
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await session.list_tools()
                start_ms = (time.perf_counter() - started) * 1000
                started = time.perf_counter()
                for i in range(calls):
                    result = await session.call_tool("add", {"a": i})
                    assert result.content[0].text == str(i + 1)
                per_call = (time.perf_counter() - started) / calls * 1000
        return start_ms, per_call

    ours = asyncio.run(through_pool())
    theirs = asyncio.run(bare())
    return {
        "start: orchestrator pool": ours[0],
        "start: bare mcp client": theirs[0],
        "call: orchestrator pool": ours[1],
        "call: bare mcp client": theirs[1],
    }


def _default() -> Any:
    from orchestrator.definition.models import Sandbox  # why: only the sandboxed variant needs it

    return Sandbox()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--mcp-calls", type=int, default=200)
    parser.add_argument("--no-sandbox", action="store_true")
    args = parser.parse_args()
    sandbox = not args.no_sandbox
    print(f"python {platform.python_version()} · {platform.machine()} · sandbox: {sandbox}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        s = steps(folder, args.steps, sandbox)
        print(f"\n1. a deterministic step, {args.steps} steps, SQLite store (ms per step)")
        for label, value in s.items():
            print(f"   {label:<28} {value:8.2f}")
        print(f"   command / python            {s['command actor'] / s['python actor']:8.1f}x")

        t = python_tool(folder, args.calls)
        print(f"\n2. a python tool call, {args.calls} calls (us per call)")
        for label, value in t.items():
            print(f"   {label:<28} {value:8.1f}")
        ratio = t["ToolBox.run (python tool)"] / t["asyncio.to_thread(f) alone"]
        print(f"   toolbox / to_thread alone   {ratio:8.1f}x")

        m = mcp_calls(folder, args.mcp_calls, sandbox)
        print(f"\n3. an MCP tool, {args.mcp_calls} calls (ms)")
        for label, value in m.items():
            print(f"   {label:<28} {value:8.2f}")
        call_ratio = m["call: orchestrator pool"] / m["call: bare mcp client"]
        start_ratio = m["start: orchestrator pool"] / m["start: bare mcp client"]
        print(f"   start: pool / bare          {start_ratio:8.2f}x")
        print(f"   call: pool / bare           {call_ratio:8.2f}x")


if __name__ == "__main__":
    main()
