"""Showing a thread while the session advances it, and its outcome after: for run and threads."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..actors.recording import Recording
from ..core.events import ThreadStatus
from ..core.outcomes import Outcome, ResumeRequested
from ..definition.models import Graph
from ..errors import OrchestratorError, StoreError
from ..run.options import RunOptions, ThreadResult
from ..run.waiting import Question
from ..views.plural import plural
from .common import EXIT_OK, EXIT_PROBLEMS, EXIT_WAITING, fail_error
from .display import PlainPrinter, json_line
from .live import LiveView, live_possible

if TYPE_CHECKING:
    from ..run.contract import ThreadSession


def drive(
    session: ThreadSession,
    graph: Graph,
    thread_id: str,
    options: RunOptions,
    as_json: bool,
    *,
    recording: Recording | None = None,
    first: Outcome | None = None,
    live: bool | None = None,
) -> int:
    """Advance a thread through the session, showing its events; returns the exit code.

    The view: `--json` lines, else the live view when stderr is a terminal (`live=None` decides
    by that), else plain lines.
    """
    view = choose_view(graph, session, thread_id, options, as_json, live)
    try:
        with view:
            result = asyncio.run(
                session.advance(graph, thread_id, options=options, replay=recording, first=first)
            )
            # A replayed thread that its user continued after an ending is continued here too,
            # with the recorded message; each recorded resume once.
            used: set[int] = set()
            while recording is not None and (
                mark := recording.resume_at(result.steps, result.ending)
            ):
                if mark.after in used:
                    break
                used.add(mark.after)
                first = ResumeRequested(mark.message)
                result = asyncio.run(
                    session.advance(
                        graph, thread_id, options=options, replay=recording, first=first
                    )
                )
    except KeyboardInterrupt:
        row = session.thread(thread_id)
        if row.state == ThreadStatus.WAITING:
            click.echo(
                f"\ninterrupted: thread {thread_id} waits for a person; answer it with\n"
                f"  orchestrator threads answer {thread_id}",
                err=True,
            )
        elif recording is not None:
            # Resumed, its remaining steps would go to a real model, in this folder.
            click.echo(
                f"\ninterrupted: the replay (thread {thread_id}) stopped; run the same command "
                "again to watch it from the start (`threads resume` would ask a real model for "
                "the steps left, and let it change files here)",
                err=True,
            )
        else:
            click.echo(
                f"\ninterrupted: thread {thread_id} is {row.state}; continue it with\n"
                f"  orchestrator threads resume {thread_id}",
                err=True,
            )
        tree = session.worktree(thread_id)
        if tree is not None:
            click.echo(
                f"  (its work so far is in {shown(tree.workspace)}, branch {tree.branch})",
                err=True,
            )
        return EXIT_WAITING
    except OrchestratorError as exc:
        if isinstance(exc, StoreError) and exc.kind in ("full", "io", "busy") and not exc.hint:
            # The thread is as it was at its last event: say how to go on once it is fixed.
            exc.hint = (
                f"thread {thread_id} keeps every step saved before; once that is fixed, "
                f"continue it with: orchestrator threads resume {thread_id}"
            )
        fail_error(exc)
    question = None
    if result.state == ThreadStatus.WAITING and not as_json:
        question = session.question(thread_id, graph)
    replayed = recording is not None and result.state == ThreadStatus.COMPLETED and not as_json
    if replayed:
        click.echo("\nthe recorded run's final message, replayed:", err=True)
    code = report(result, as_json, question)
    if replayed:
        click.echo(
            "\n(a replay: the recorded replies were played back. No model was called, no tool "
            "ran and no file was changed now, including any file the message above lists: it "
            "tells what the recorded run did; without --replay the same command runs the roles "
            "for real.)",
            err=True,
        )
    return code


def choose_view(
    graph: Any, session: Any, thread_id: str, options: Any, as_json: bool, live: bool | None
) -> Any:
    """Install the event printer on `options` and return a context manager for the run."""
    if as_json:
        options.on_event = lambda stored, state: click.echo(json_line(stored, thread_id))
        options.on_child_event = lambda child, stored, state: click.echo(json_line(stored, child))
        return contextlib.nullcontext()
    if live is None:
        live = live_possible()
    if not live:
        options.on_event = printer = PlainPrinter(thread_id)
        options.on_child_event = printer.child
        return contextlib.nullcontext()
    view = LiveView.for_thread(graph, session, thread_id, interactive=options.interactive)
    options.on_event = view
    options.on_child_event = view.child
    options.on_progress = view.progress  # inside a step: the tool call now, tokens streaming
    return view


EXIT_FOR_STATE = {
    ThreadStatus.COMPLETED: EXIT_OK,
    ThreadStatus.SUSPENDED: EXIT_WAITING,
    ThreadStatus.WAITING: EXIT_WAITING,
}


def report(result: ThreadResult, as_json: bool, question: Question | None = None) -> int:
    """The outcome, as the result object (--json) or as lines for a person; the exit code.

    A thread that waits for a person shows the `threads answer` commands of `question`.
    """
    tree = result.worktree
    if as_json:
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False))
    elif result.ending is not None:  # an ending: completed, or failed with a failure ending
        click.echo(result.final or "")
        if result.state == ThreadStatus.FAILED:
            click.echo(f"thread {result.thread_id} failed: {result.reason}", err=True)
        if result.recovery:
            click.echo(f"recovery: {result.recovery}", err=True)
        if tree is not None and "head" in tree:
            click.echo(branch_report(tree))
    else:
        if result.state in (ThreadStatus.SUSPENDED, ThreadStatus.WAITING):
            click.echo(f"thread {result.thread_id} is {result.state}: {result.reason}", err=True)
            if result.state == ThreadStatus.SUSPENDED:
                hint = f"orchestrator threads resume {result.thread_id} [--message TEXT]"
                click.echo(f"  continue with: {hint}", err=True)
            elif question is not None and question.role is not None:
                click.echo(
                    "  answer with" + (" one of:" if len(question.forms) > 1 else ":"), err=True
                )
                for line in question.hints():
                    click.echo(f"    {line}", err=True)
                click.echo(
                    "  or, in a terminal, to be asked for each field: "
                    f"orchestrator threads answer {result.thread_id}\n"
                    f"  the question: orchestrator threads show {result.thread_id}",
                    err=True,
                )
            else:
                hint = f"orchestrator threads answer {result.thread_id}"
                click.echo(f"  continue with: {hint}", err=True)
        else:
            click.echo(f"thread {result.thread_id} {result.state}: {result.reason}", err=True)
        if tree is not None:
            click.echo(
                f"  the work so far is in {shown(tree['path'])} (branch {tree['branch']})",
                err=True,
            )
    return EXIT_FOR_STATE.get(result.state, EXIT_PROBLEMS)


def branch_report(tree: dict[str, Any]) -> str:
    """Where the work is: the branch, its commit, the files changed, and what to do next."""
    files = tree.get("files") or []
    branch, base = tree["branch"], tree["base"][:10]
    lines = [""]
    if files:
        lines.append(
            f"Branch {branch}: {plural(len(files), 'file')} changed "
            f"since {base}, committed as {tree['head'][:10]}"
        )
        lines += [f"  {f['status']} {f['path']}" for f in files]
    else:
        lines.append(f"Branch {branch}: no files changed since {base}")
    lines.append(f"Worktree: {shown(tree['path'])} (your checkout was not touched; nothing pushed)")
    repo = tree.get("repo", "")
    git = "git" if _inside(Path.cwd(), repo) else f"git -C {shown(repo)}"
    if files:
        lines.append(f"  review: {git} diff {base} {branch}")
        lines.append(f"  take it: {git} merge {branch}")
    lines.append(
        f"  clean up: orchestrator threads prune (or {git} worktree remove {shown(tree['path'])})"
    )
    return "\n".join(lines)


def shown(path: str | Path) -> str:
    """A path as a person reads it: relative to the current directory when it is below it."""
    p = Path(path)
    try:
        rel = p.resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):
        return str(p)
    return str(rel) if str(rel) != "." else "."


def _inside(path: Path, folder: str) -> bool:
    if not folder:
        return False
    try:
        path.resolve().relative_to(Path(folder).resolve())
    except (ValueError, OSError):
        return False
    return True
