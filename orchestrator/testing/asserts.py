"""Assertions for graph tests, with failure messages that explain the thread.

`assert trace.path == [...]` works, but when it fails it shows two lists and nothing about why
the thread went elsewhere. These helpers say where the path differs, list each step with its
status, and end with the thread's state and its reason (a suspension's cause, a template error,
an exhausted script) or its final message, which is usually the answer to "why".

They raise plain `AssertionError`, so they work under any test runner; under pytest,
`__tracebackhide__` points the failure at the user's test line rather than at this module.
None of them imports pytest except `recordings()`, which exists to build pytest parameters.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..actors.recording import load_recording, recordings_under
from ..definition.models import END

if TYPE_CHECKING:
    from ..actors.recording import Recording
    from ..definition.models import Graph
    from ..replay import ReplayReport
    from ..replay.trace import Trace, TraceStep

ARROW = " → "


# --------------------------------------------------------------------------- describing a trace


def describe_trace(trace: Trace) -> str:
    """The steps with their statuses, then the thread's state and why it is there."""
    lines = []
    if trace.steps:
        width = max(len(s.role) for s in trace.steps)
        lines.append("steps:")
        for s in trace.steps:
            status = "(not committed)" if s.status is None else s.status
            extra = ""
            if s.attempts:
                n = len(s.attempts)
                extra = f"   after {n} rejected repl{'ies' if n != 1 else 'y'}"
            lines.append(f"  {s.step:>3}  {s.role:<{width}}  {status}{extra}")
    else:
        lines.append("steps: none")
    lines.append(_state_line(trace))
    return "\n".join(lines)


def _state_line(trace: Trace) -> str:
    if trace.state == "completed":
        return f"the thread completed; final message: {_quote(trace.final or '')}"
    reason = f": {trace.reason}" if trace.reason else ""
    return f"the thread is {trace.state}{reason}"


def _quote(text: str, limit: int = 300) -> str:
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return repr(text)


def _route(items: Sequence[str]) -> str:
    return ARROW.join(items) if items else "(empty)"


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def _first_difference(expected: Sequence[str], actual: Sequence[str]) -> int:
    for i, (want, got) in enumerate(zip(expected, actual, strict=False)):
        if want != got:
            return i
    return min(len(expected), len(actual))


def _fail(headline: str, body: str, trace: Trace) -> AssertionError:
    parts = [headline, _indent(body), _indent(describe_trace(trace))]
    return AssertionError("\n".join(part for part in parts if part))


# --------------------------------------------------------------------------- path, statuses, state


def assert_path(trace: Trace, expected: Sequence[str]) -> None:
    """The roles in step order, then `"$END"` when the thread completed."""
    __tracebackhide__ = True
    actual = list(trace.path)
    expected = list(expected)
    if actual == expected:
        return
    i = _first_difference(expected, actual)
    want = repr(expected[i]) if i < len(expected) else "nothing more"
    got = repr(actual[i]) if i < len(actual) else f"nothing more (the thread is {trace.state})"
    # Element i of a path is step i+1's role, or $END where the graph decided step i+1 ends it.
    raise _fail(
        f"path differs at step {i + 1}: expected {want}, got {got}",
        f"expected: {_route(expected)}\nactual:   {_route(actual)}",
        trace,
    )


def assert_statuses(trace: Trace, expected: Sequence[str]) -> None:
    """The committed steps' statuses, in order (`_` for a single-exit role)."""
    __tracebackhide__ = True
    actual = trace.statuses
    expected = list(expected)
    if actual == expected:
        return
    i = _first_difference(expected, actual)
    want = repr(expected[i]) if i < len(expected) else "no more steps"
    got = repr(actual[i]) if i < len(actual) else f"no more steps (the thread is {trace.state})"
    committed = [s for s in trace.steps if s.status is not None]
    role = f" ({committed[i].role})" if i < len(committed) else ""
    raise _fail(
        f"statuses differ at step {i + 1}{role}: expected {want}, got {got}",
        f"expected: {_route(expected)}\nactual:   {_route(actual)}",
        trace,
    )


def assert_state(trace: Trace, expected: str, *, reason_contains: str | None = None) -> None:
    """The thread's state (`completed`, `suspended`, ...), and optionally part of its reason."""
    __tracebackhide__ = True
    if trace.state != expected:
        raise _fail(f"the thread is {trace.state}, expected {expected}", "", trace)
    if reason_contains is not None and reason_contains not in (trace.reason or ""):
        raise _fail(
            f"the thread is {trace.state} as expected, but its reason does not contain "
            f"{reason_contains!r}",
            f"reason: {trace.reason!r}",
            trace,
        )


# --------------------------------------------------------------------------- prompts


def _find_step(trace: Trace, step: int | str, visit: int) -> TraceStep:
    __tracebackhide__ = True
    if isinstance(step, int):
        for s in trace.steps:
            if s.step == step:
                return s
        raise _fail(f"the thread has no step {step}", f"path: {_route(trace.path)}", trace)
    visits = [s for s in trace.steps if s.role == step]
    if not visits:
        raise _fail(f"role '{step}' never ran", f"path: {_route(trace.path)}", trace)
    index = visit - 1 if visit > 0 else visit
    if not -len(visits) <= index < len(visits):
        raise _fail(
            f"role '{step}' ran {len(visits)} time(s); there is no visit {visit}",
            f"path: {_route(trace.path)}",
            trace,
        )
    return visits[index]


def assert_prompt(
    trace: Trace,
    step: int | str,
    *,
    contains: str | Sequence[str] | None = None,
    equals: str | None = None,
    matches: str | None = None,
    visit: int = 1,
) -> str:
    """Check the rendered prompt of a step and return it.

    `step` is a step number (1-based), a role name (its `visit`-th visit, 1-based; -1 is the
    last), or `"$END"` for the final message. `contains` is a text or a list of texts that must
    all occur; `equals` the whole prompt; `matches` a regular expression (`re.search`).
    """
    __tracebackhide__ = True
    if step == END:
        if trace.state != "completed":
            raise _fail(f"the thread did not reach $END (it is {trace.state})", "", trace)
        prompt, what = trace.final or "", "the final message"
    else:
        found = _find_step(trace, step, visit)
        prompt, what = found.prompt, f"the prompt of step {found.step} ({found.role})"
    problems: list[str] = []
    needles = [contains] if isinstance(contains, str) else list(contains or [])
    problems.extend(f"does not contain {n!r}" for n in needles if n not in prompt)
    if equals is not None and prompt != equals:
        problems.append(f"is not equal to {equals!r}")
    if matches is not None and re.search(matches, prompt) is None:
        problems.append(f"does not match /{matches}/")
    if problems:
        shown = "\n".join("| " + line for line in prompt.splitlines()) or "| (empty)"
        raise _fail(f"{what} " + "; ".join(problems), f"{what}:\n{shown}", trace)
    return prompt


# --------------------------------------------------------------------------- recordings


def assert_same_route(
    graph: Graph | str | Path,
    recording: Recording | str | Path,
    *,
    workspace: str | Path | None = None,
) -> ReplayReport:
    """Replay `recording` through `graph`; fail with the first divergence. Returns the report,
    whose `.trace` holds the replayed thread for further assertions."""
    __tracebackhide__ = True
    # late: orchestrator.replay imports orchestrator.testing, so this side of the cycle waits
    from ..replay import replay_recording

    if isinstance(recording, str | Path):  # shown relative to the current directory
        path = Path(recording)
        recording = dataclasses.replace(load_recording(path), path=_shown(path))
    report = replay_recording(graph, recording, workspace=workspace)
    if not report.same_route:
        raise AssertionError(
            f"the recording no longer takes the same route through graph '{report.graph}'\n"
            + _indent(report.describe())
        )
    return report


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


def recording_files(folder: str | Path) -> list[Path]:
    """Every `*.yaml`/`*.yml` file under `folder`, sorted; hidden folders are skipped.

    A relative `folder` is relative to the current directory, like any path; in a test module
    `Path(__file__).parent / "recordings"` does not depend on where pytest was started.
    """
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(
            f"no folder {root} (from {Path.cwd()}); in a test module, "
            f'Path(__file__).parent / "recordings" finds a folder next to the test file'
        )
    found = recordings_under(root)
    if not found:
        raise FileNotFoundError(f"no recordings (*.yaml, *.yml) in {root}")
    return found


def recordings(folder: str | Path) -> list[Any]:
    """`pytest.param`s for every recording under `folder`, each with its file name as its id,
    for `@pytest.mark.parametrize("recording", recordings(HERE / "recordings"))`."""
    import pytest  # only here: the rest of orchestrator.testing works without pytest

    root = Path(folder)
    return [pytest.param(p, id=p.relative_to(root).as_posix()) for p in recording_files(root)]


__all__ = [
    "assert_path",
    "assert_prompt",
    "assert_same_route",
    "assert_state",
    "assert_statuses",
    "describe_trace",
    "recording_files",
    "recordings",
]
