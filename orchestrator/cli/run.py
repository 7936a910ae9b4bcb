"""`orchestrator run`: start a thread of a graph and advance it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import click

from .common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    EXIT_WAITING,
    fail,
    load_graph_or_exit,
    open_store,
    parse_assignments,
    store_option,
    typed_inputs,
)


@click.command()
@click.argument("graph_arg", metavar="GRAPH")
@click.argument("task", required=False)
@click.option(
    "-i",
    "--input",
    "inputs",
    multiple=True,
    metavar="KEY=VALUE|KEY=@FILE",
    help="A thread input; @FILE reads the value from a file.",
)
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory the roles work in (default: the current directory).",
)
@click.option(
    "--in-place",
    is_flag=True,
    help="Work directly in the workspace, even when it is a git repository "
    "(by default a thread whose roles edit files or run commands gets its own git worktree "
    "on a new branch, orchestrator/THREAD-ID).",
)
@click.option("--model", default=None, help="Model alias or id for every role.")
@click.option(
    "--replay",
    "replay_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Play a recording instead of calling models.",
)
@click.option(
    "--max-steps", type=click.IntRange(min=1), default=None, help="Override limits.max_steps."
)
@click.option(
    "--batch",
    "batch_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Run one thread per line of this JSONL file (each line a JSON object of inputs; "
    "-i values apply to every line).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="With --batch: how many threads run at once.",
)
@store_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event, result last.")
def run(
    graph_arg: str,
    task: str | None,
    inputs: tuple[str, ...],
    workspace: Path | None,
    in_place: bool,
    model: str | None,
    replay_path: Path | None,
    max_steps: int | None,
    batch_path: Path | None,
    concurrency: int,
    store_dir: Path | None,
    as_json: bool,
) -> None:
    """Run GRAPH (a path, or a name in ./graphs or the bundled graphs) as a new thread.

    TASK fills the graph's only required input (or `task` for graphs without inputs).
    When some role may edit files or run commands and the workspace is in a git repository, the
    thread works in its own git worktree on branch orchestrator/THREAD-ID, which gets the work
    as a commit when the thread completes; your checkout is never touched (--in-place opts out).
    Exit codes: 0 completed, 1 failed or the graph has errors, 2 usage, 3 suspended or waiting.
    """
    from ..linter import lint
    from ..problems import has_errors

    graph = load_graph_or_exit(graph_arg)
    problems = lint(graph)
    if has_errors(problems):
        for problem in problems:
            click.echo(problem.format(), err=True)
        fail(
            "the graph has errors; fix them before running (see `orchestrator validate`)",
            EXIT_PROBLEMS,
        )

    if batch_path is not None:
        if task is not None or replay_path is not None:
            fail("--batch takes its inputs from the file: no TASK and no --replay")
        from ..runner import RunOptions
        from .batch import run_batch_command

        code = run_batch_command(
            graph,
            batch_path,
            typed_inputs(graph.input_schema, parse_assignments(inputs)),
            store=open_store(store_dir),
            folder=ready_workspace(graph, workspace, replay=False),
            in_place=in_place,
            concurrency=concurrency,
            options=RunOptions(max_steps=max_steps, model=model),
            as_json=as_json,
        )
        sys.exit(code)
    recording = None
    if replay_path is not None:
        from ..recording import RecordingError, load_recording

        try:
            recording = load_recording(replay_path)
        except RecordingError as exc:
            fail(str(exc))
        if recording.graph and recording.graph != graph.name:
            click.echo(
                f"note: the recording is of graph '{recording.graph}', "
                f"replaying it through '{graph.name}'",
                err=True,
            )
        if recording.graph_hash and recording.graph_hash != graph.hash:
            click.echo("note: the graph changed since the recording was made", err=True)

    values = thread_inputs(graph, task, inputs, recording)
    from ..ids import new_thread_id
    from ..runner import InputError, RunOptions, check_inputs, start_thread

    try:
        check_inputs(graph, values)  # before a worktree is made for a thread that cannot start
    except InputError as exc:
        fail(f"inputs: {exc}")
    folder = ready_workspace(graph, workspace, replay=recording is not None)
    store = open_store(store_dir)
    thread_id = new_thread_id()
    tree = None
    if recording is None and not in_place:
        tree = isolate(graph, folder, store, thread_id)
    try:
        start_thread(
            graph,
            values,
            store,
            workspace=tree.workspace if tree is not None else folder,
            thread_id=thread_id,
        )
    except InputError as exc:
        fail(f"inputs: {exc}")
    if as_json:
        from .display import json_line

        for stored in store.events(thread_id):  # ThreadStarted, appended before the loop
            click.echo(json_line(stored, thread_id))
    else:
        announce(graph, thread_id, recording is not None, tree=tree, folder=folder)
    code = drive(
        graph,
        store,
        thread_id,
        RunOptions(
            max_steps=max_steps, model=model, interactive=sys.stdin.isatty() and not as_json
        ),
        as_json,
        recording,
    )
    sys.exit(code)


def ready_workspace(graph: Any, workspace: Path | None, *, replay: bool) -> Path:
    """The checks before a thread, a worktree and a branch exist for nothing: credentials for
    roles Claude plays (unless replaying), and a workspace that is a directory."""
    from ..actors.anthropic import NO_KEY, env_credentials

    plays_claude = any(role.actor == "anthropic" for role in graph.roles.values())
    if plays_claude and not replay and not env_credentials():
        fail(NO_KEY)
    folder = (workspace or Path.cwd()).resolve()
    if not folder.is_dir():
        fail(f"the workspace {folder} is not a directory")
    return folder


def isolate(graph: Any, folder: Path, store: Any, thread_id: str) -> Any:
    """The thread's git worktree, or None to work in place (nothing edits, or no repository)."""
    from ..workspace_git import (
        WorktreeError,
        create_worktree,
        find_repo,
        needs_isolation,
        uncommitted_changes,
    )

    store_dir = getattr(store, "directory", None)
    if store_dir is None or not needs_isolation(graph):
        return None
    repo = find_repo(folder)
    if repo is None:
        return None
    try:
        dirty = uncommitted_changes(repo, ignore=Path(store_dir))
        tree = create_worktree(folder, store_dir, thread_id)
    except WorktreeError as exc:
        fail(f"cannot give the thread its own git worktree: {exc}", EXIT_PROBLEMS)
    if dirty:
        where = "your checkout" if _inside(Path.cwd(), str(repo)) else str(repo)
        click.echo(
            f"note: {where} has uncommitted changes ({len(dirty)} "
            f"path{'s' if len(dirty) != 1 else ''}); the thread starts from the last commit "
            f"({tree.base[:10]}) and does not see them. Commit them first, or pass --in-place "
            "to work in the checkout itself.",
            err=True,
        )
    return tree


def shown(path: str | Path) -> str:
    """A path as a person reads it: relative to the current directory when it is below it."""
    p = Path(path)
    try:
        rel = p.resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):
        return str(p)
    return str(rel) if str(rel) != "." else "."


def thread_inputs(
    graph: Any, task: str | None, pairs: tuple[str, ...], recording: Any
) -> dict[str, Any]:
    schema = graph.input_schema
    raw = parse_assignments(pairs)
    if task is not None:
        required = list(schema.get("required") or [])
        props = list((schema.get("properties") or {}).keys())
        target = required[0] if len(required) == 1 else ("task" if "task" in props else None)
        if target is None:
            fail(
                f"TASK given, but graph '{graph.name}' has several inputs "
                f"({', '.join(props)}); pass each with -i KEY=VALUE"
            )
        if target in raw:
            fail(f"input '{target}' given twice (as TASK and with -i)")
        raw[target] = task
    values = typed_inputs(schema, raw)
    if recording is not None and not values:
        values = dict(recording.inputs)
    return values


def announce(
    graph: Any, thread_id: str, replay: bool, *, tree: Any = None, folder: Path | None = None
) -> None:
    editors = [n for n, r in graph.roles.items() if "edit" in r.tools]
    shells = [n for n, r in graph.roles.items() if "shell" in r.tools]
    click.echo(f"thread {thread_id} ({graph.name}{', replay' if replay else ''})", err=True)
    if editors:
        click.echo(f"  may edit files: {', '.join(editors)}", err=True)
    if shells:
        click.echo(f"  may run commands: {', '.join(shells)}", err=True)
    if replay:
        if editors or shells:
            click.echo("  replay: recorded replies only; no tool runs, no file changes", err=True)
    elif tree is not None:
        click.echo(
            f"  works on branch {tree.branch} in its own worktree {shown(tree.workspace)}\n"
            "  (your checkout is not touched; --in-place opts out)",
            err=True,
        )
    elif (editors or shells) and folder is not None:
        click.echo(f"  works in place in {shown(folder)}", err=True)


def drive(
    graph: Any,
    store: Any,
    thread_id: str,
    options: Any,
    as_json: bool,
    recording: Any = None,
    resume: bool = False,
    message: str | None = None,
    *,
    live: bool | None = None,
) -> int:
    """Advance a thread, showing events; returns the exit code.

    The view: `--json` lines, else the live view when stderr is a terminal (`live=None` decides
    by that), else plain lines. A thread with a git worktree gets it back if it was removed, and
    its work committed on its branch when it completes.
    """
    from ..runner import ResumeError, advance
    from ..store.base import ThreadBusy
    from ..workspace_git import WorktreeError, ensure_worktree, load_worktree

    tree = load_worktree(getattr(store, "directory", None), thread_id)
    if tree is not None:
        try:
            if ensure_worktree(tree):
                click.echo(f"note: recreated the thread's worktree {shown(tree.path)}", err=True)
        except WorktreeError as exc:
            fail(f"the thread's worktree cannot be used: {exc}", EXIT_PROBLEMS)
    view = choose_view(graph, store, thread_id, options, as_json, live)
    actor_for = None
    if recording is not None:
        from ..recording import ReplayActor

        replay_actor = ReplayActor(recording)
        actor_for = lambda name, role: replay_actor  # noqa: E731
    try:
        with view:
            result = asyncio.run(
                advance(
                    graph,
                    store,
                    thread_id,
                    actor_for=actor_for,
                    options=options,
                    resume=resume,
                    message=message,
                )
            )
    except KeyboardInterrupt:
        click.echo(
            f"\ninterrupted: thread {thread_id} is suspended; continue it with\n"
            f"  orchestrator threads resume {thread_id}",
            err=True,
        )
        if tree is not None:
            click.echo(
                f"  (its work so far is in {shown(tree.workspace)}, branch {tree.branch})",
                err=True,
            )
        return EXIT_WAITING
    except ThreadBusy as exc:
        fail(str(exc), EXIT_PROBLEMS)
    except ResumeError as exc:
        fail(str(exc), EXIT_USAGE)
    outcome = None
    if tree is not None and result.state == "completed":
        outcome = finish(graph, store, thread_id, tree, result)
    code = report(result, as_json, outcome=outcome, tree=tree)
    if recording is not None and result.state == "completed" and not as_json:
        click.echo(
            "\n(a replay: the recorded replies were played, no model was called and no file "
            "changed; without --replay the same command runs the roles for real)",
            err=True,
        )
    return code


def choose_view(
    graph: Any, store: Any, thread_id: str, options: Any, as_json: bool, live: bool | None
) -> Any:
    """Install the event printer on `options` and return a context manager for the run."""
    import contextlib

    from .display import PlainPrinter, json_line

    if as_json:
        options.on_event = lambda stored, state: click.echo(json_line(stored, thread_id))
        return contextlib.nullcontext()
    if live is None:
        from .live import live_possible

        live = live_possible()
    if not live:
        options.on_event = PlainPrinter(thread_id)
        return contextlib.nullcontext()
    from .live import LiveView

    view = LiveView.for_thread(graph, store, thread_id, interactive=options.interactive)
    options.on_event = view
    return view


def finish(graph: Any, store: Any, thread_id: str, tree: Any, result: Any) -> Any:
    """Commit a completed thread's work on its branch; None (with a warning) if git fails."""
    from ..engine import fold
    from ..workspace_git import WorktreeError, commit_message, finish_worktree

    state = fold([s.event for s in store.events(thread_id)])
    text = commit_message(graph.name, thread_id, state.inputs, result.final or "")
    try:
        return finish_worktree(tree, text)
    except WorktreeError as exc:
        click.echo(
            f"warning: could not commit the thread's work on {tree.branch}: {exc}\n"
            f"  the work is in {shown(tree.path)}",
            err=True,
        )
        return None


def report(result: Any, as_json: bool, *, outcome: Any = None, tree: Any = None) -> int:
    if as_json:
        data = result.to_dict()
        if outcome is not None:
            data["worktree"] = outcome.to_dict()
        elif tree is not None:
            data["worktree"] = {"branch": tree.branch, "path": tree.path, "base": tree.base}
        click.echo(json.dumps(data, ensure_ascii=False))
    else:
        if result.state == "completed":
            click.echo(result.final or "")
            if outcome is not None:
                click.echo(branch_report(outcome))
        elif result.state in ("suspended", "waiting"):
            click.echo(f"thread {result.thread_id} is {result.state}: {result.reason}", err=True)
            hint = (
                f"orchestrator threads answer {result.thread_id} --status ..."
                if result.state == "waiting"
                else f"orchestrator threads resume {result.thread_id} [--message TEXT]"
            )
            click.echo(f"  continue with: {hint}", err=True)
        else:
            click.echo(f"thread {result.thread_id} {result.state}: {result.reason}", err=True)
        if tree is not None and result.state != "completed":
            click.echo(
                f"  the work so far is in {shown(tree.workspace)} (branch {tree.branch})",
                err=True,
            )
    return {"completed": EXIT_OK, "suspended": EXIT_WAITING, "waiting": EXIT_WAITING}.get(
        result.state, EXIT_PROBLEMS
    )


def branch_report(outcome: Any) -> str:
    """Where the work is: the branch, its commit, the files changed, and what to do next."""
    tree = outcome.worktree
    files = outcome.files
    lines = [""]
    if files:
        lines.append(
            f"Branch {tree.branch}: {len(files)} file{'s' if len(files) != 1 else ''} changed "
            f"since {tree.base[:10]}, committed as {outcome.head[:10]}"
        )
        lines += [f"  {f.status} {f.path}" for f in files]
    else:
        lines.append(f"Branch {tree.branch}: no files changed since {tree.base[:10]}")
    lines.append(f"Worktree: {shown(tree.path)} (your checkout was not touched; nothing pushed)")
    git = "git" if _inside(Path.cwd(), tree.repo) else f"git -C {shown(tree.repo)}"
    if files:
        lines.append(f"  review: {git} diff {tree.base[:10]} {tree.branch}")
        lines.append(f"  take it: {git} merge {tree.branch}")
    lines.append(f"  clean up: {git} worktree remove {shown(tree.path)}")
    return "\n".join(lines)


def _inside(path: Path, folder: str) -> bool:
    try:
        path.resolve().relative_to(Path(folder).resolve())
    except (ValueError, OSError):
        return False
    return True
