"""Judging one finished run against its case's expectations (docs/evals.md).

Each expectation gives a `Verdict`: passed or not, a score in [0, 1], and why. The checks on
the thread (ending, path, fields, cost) read its log only; `command` runs in the run's final
workspace inside the sandbox, as a role's commands run (tools/sandbox.py: the workspace
writable, the rest of the machine read-only, no network, the home folders and the eval's
store hidden, a scrubbed environment), because the files it runs were written by the roles.
Its `copy` (the hidden tests) is put into the workspace by `copy_over`, which never writes
through a link a role left there. `python` calls the suite's own scorer. A run passes when its thread completed and every
verdict passed.
"""

from __future__ import annotations

import asyncio
import inspect
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..definition.pyref import PyRefError, load
from ..tools import sandbox as sandboxing
from ..tools.scrub import Secrets, safe_environment
from .suite import Case, Command

OUTPUT_TAIL = 2000  # characters of a command's output kept in its verdict


@dataclass(frozen=True)
class Verdict:
    name: str  # the expectation: ending, path_contains, fields, command, python, judge, ...
    passed: bool
    score: float
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "score": self.score,
            "detail": self.detail,
        }

    @classmethod
    def of(cls, data: dict[str, Any]) -> Verdict:
        return cls(data["name"], bool(data["passed"]), float(data["score"]), data.get("detail", ""))


@dataclass(frozen=True)
class EvalRun:
    """What a Python scorer is given about a finished run. Plain data: keep it or not."""

    case: str
    variant: str
    inputs: dict[str, Any]
    workspace: Path  # the run's final workspace (its files were written by the roles)
    state: str
    ending: str | None
    path: tuple[str, ...]
    steps: int
    cost_usd: float
    final: str | None
    context: dict[str, Any] = field(default_factory=dict)  # `$steps`, `$inputs`, ... at the end


def _verdict(name: str, passed: bool, detail: str = "") -> Verdict:
    return Verdict(name, passed, 1.0 if passed else 0.0, detail)


def lookup(context: dict[str, Any], dotted: str) -> tuple[bool, Any]:
    """`$steps.tester.result` in the thread's final template context: (found, value)."""
    value: Any = context
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False, None
    return True, value


def thread_checks(case: Case, run: EvalRun) -> list[Verdict]:
    """The verdicts read from the thread alone: no process, no model."""
    expect = case.expect
    out = [_verdict("completed", run.state == "completed", f"the thread is {run.state}")]
    if expect.ending is not None:
        out.append(
            _verdict("ending", run.ending == expect.ending, f"ended {run.ending or 'nowhere'}")
        )
    if expect.path_contains:
        missing = [r for r in expect.path_contains if r not in run.path]
        shown = " -> ".join(run.path) or "(no steps)"
        detail = f"missing {', '.join(missing)} in {shown}" if missing else shown
        out.append(_verdict("path_contains", not missing, detail))
    for name, wanted in expect.fields.items():
        found, value = lookup(run.context, name)
        said = repr(value) if found else "absent"
        out.append(_verdict(f"fields:{name}", found and value == wanted, f"{name} is {said}"))
    if expect.max_cost_usd is not None:
        ok = run.cost_usd <= expect.max_cost_usd
        out.append(
            _verdict(
                "max_cost_usd", ok, f"${run.cost_usd:.4f} of at most ${expect.max_cost_usd:.4f}"
            )
        )
    return out


def copy_over(source: Path, workspace: Path) -> None:
    """Copy the suite's folder into a workspace the roles wrote. Whatever the workspace holds
    under the names the folder brings is removed first, without following it: a role could
    have put a symlink there (`hidden_tests -> ~/.config`), through which a plain copy, made
    by this process outside any sandbox, would write wherever the link points. What is then
    written is made fresh here, so no path of it goes through a link."""
    for entry in source.iterdir():
        target = workspace / entry.name
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)  # does not follow the links inside it
        elif target.exists():  # a FIFO, a socket: not a place to write to either
            target.unlink()
        if entry.is_dir():
            shutil.copytree(entry, target, symlinks=True)
        else:
            shutil.copy2(entry, target, follow_symlinks=False)


async def run_command(command: Command, workspace: Path) -> Verdict:
    """The command in the final workspace, sandboxed; exit status 0 passes."""
    if command.copy is not None:  # the hidden tests: never in the workspace while roles ran
        copy_over(command.copy, workspace)
    secrets = Secrets.from_environment()
    policy = sandboxing.policy_for(None, agent=False)
    try:
        async with sandboxing.started(
            ["/bin/sh", "-c", command.run],
            workspace=workspace,
            policy=policy,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=safe_environment(),
        ) as proc:
            try:
                out, _ = await asyncio.wait_for(proc.communicate(), command.timeout)
            except TimeoutError:
                return _verdict("command", False, f"`{command.run}` took over {command.timeout}s")
    except (sandboxing.SandboxUnavailable, sandboxing.CannotStart) as exc:
        return _verdict("command", False, f"`{command.run}` was not started: {exc}")
    text = secrets.redact(out.decode(errors="replace")).strip()
    tail = text[-OUTPUT_TAIL:]
    code = proc.returncode
    return _verdict("command", code == 0, f"`{command.run}` exited {code}: {tail}")


async def run_scorer(ref: str, folder: Path, run: EvalRun) -> Verdict:
    """The suite's Python scorer: a bool, a number in [0, 1] (0.5 or more passes), or a
    mapping {score, reason} (or {passed, reason})."""
    try:
        function = load(ref, folder)
        value = function(run)
        if inspect.isawaitable(value):
            value = await value
    except PyRefError as exc:
        return _verdict("python", False, f"{ref}: {exc}")
    except Exception as exc:  # the scorer's own failure is this run's verdict, not a crash
        return _verdict("python", False, f"{ref} raised {type(exc).__name__}: {exc}")
    return scored("python", value, ref)


def scored(name: str, value: Any, where: str, min_score: float = 0.5) -> Verdict:
    """A scorer's or a judge's answer as a verdict."""
    reason = ""
    if isinstance(value, dict):
        reason = str(value.get("reason", ""))
        if "passed" in value and "score" not in value:
            value = bool(value["passed"])
        else:
            value = value.get("score")
    if isinstance(value, bool):
        return Verdict(name, value, 1.0 if value else 0.0, reason)
    if isinstance(value, (int, float)) and 0 <= value <= 1:
        return Verdict(name, value >= min_score, float(value), reason)
    return _verdict(name, False, f"{where} gave {value!r}: not a bool or a score in [0, 1]")
