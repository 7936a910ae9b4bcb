"""`orchestrator threads ...`: list, show, resume, answer, cancel, export and prune threads
(fork and diff: cli/forks.py)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..core.events import ThreadStatus
from ..core.outcomes import Answered, ResumeRequested
from ..core.titles import ThreadQuery, one_line
from ..definition.models import Graph
from ..definition.yamlpos import typed_value
from ..errors import OrchestratorError
from ..extract import format_reply
from ..run.options import RunOptions
from ..run.session import SessionError
from ..run.waiting import question_for
from ..store.base import StoredEvent, ThreadRow
from ..views.forks import forks_of, lineage
from ..views.plural import plural
from ..views.story import story_json, story_text
from ..views.summary import summary_row
from .common import (
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    fail,
    parse_assignments,
    read_text_file,
    store_option,
    temporal_option,
    thread_labels,
)
from .drive import drive, shown
from .forks import diff as diff_command
from .forks import fork as fork_command
from .interview import answer_options, ask_in_terminal
from .session import cli_session, fail_session

if TYPE_CHECKING:
    from .session import AnySession


@click.group()
def threads() -> None:
    """Inspect and continue threads."""


threads.add_command(fork_command)
threads.add_command(diff_command)

STATES = [str(s) for s in ThreadStatus if s != ThreadStatus.NEW]


@threads.command("list")
@click.option("--status", "--state", "state", type=click.Choice(STATES), default=None)
@click.option("--graph", default=None, help="Only threads of this graph (its name).")
@click.option(
    "--label",
    "label_items",
    multiple=True,
    metavar="KEY=VALUE",
    help="Only threads with this label (repeatable: all must match).",
)
@click.option("--search", default=None, metavar="TEXT", help="Words found in titles or inputs.")
@store_option
@temporal_option
@click.option("--json", "as_json", is_flag=True)
def list_threads(
    state: str | None,
    graph: str | None,
    label_items: tuple[str, ...],
    search: str | None,
    store_dir: Path | None,
    temporal: str | None,
    as_json: bool,
) -> None:
    """List threads, oldest first; --graph, --label and --search narrow the list."""
    query = ThreadQuery(state, graph, thread_labels(label_items), search)
    try:
        session = _session(store_dir, temporal, readonly=True)
        rows, forks = session.threads(state, query), session.forks()
    except SessionError as exc:  # a Temporal server that cannot be reached
        fail_session(exc)
    if as_json:
        for row in rows:
            origin = {"forked_from": forks[row.id]} if row.id in forks else {}
            click.echo(json.dumps(row.to_dict() | origin, ensure_ascii=False))
        return
    if not rows:
        narrowed = state or graph or label_items or search
        click.echo("no threads" + (" that match" if narrowed else ""))
        return
    for line in thread_table(rows, forks):
        click.echo(line)


GRAPH_WIDTH = 30  # a longer graph name is cut in the table (`threads show` has it whole)
TITLE_WIDTH = 40  # and a longer title (`--json` has it whole)


def thread_table(
    rows: list[ThreadRow], forks: dict[str, dict[str, Any]] | None = None
) -> list[str]:
    """The table `threads list` prints: a child thread (`PARENT.STEP`, a subgraph role's)
    comes right under its parent, indented, and every column's width is measured over all the
    rows, so a child's longer id never pushes its row's columns out of line. A fork says where
    it was forked from after its reason (`forked from ID at step N`)."""
    forks = forks or {}
    now = time.time()
    shown = [(depth, summary_row(row, now=now, why_width=60)) for depth, row in _nested(rows)]
    ids = ["  " * depth + row.id for depth, row in shown]
    graphs = [row.graph[:GRAPH_WIDTH] for _, row in shown]
    # Made one line again: a title read from a store or a memo someone else wrote.
    titles = [one_line(row.title, TITLE_WIDTH) for _, row in _nested(rows)]
    w_title = max(len("TITLE"), *map(len, titles))
    costs = [row.cost for _, row in shown]
    w_id = max(len("ID"), *map(len, ids))
    w_graph = max(len("GRAPH"), *map(len, graphs))
    w_state = max(len("STATE"), *(len(str(row.state)) for _, row in shown))
    w_steps = max(len("STEPS"), *(len(str(row.steps)) for _, row in shown))
    w_cost = max(len("COST"), *map(len, costs))
    lines = [
        f"{'ID':<{w_id}}  {'TITLE':<{w_title}}  {'GRAPH':<{w_graph}}  {'STATE':<{w_state}}  "
        f"{'STEPS':>{w_steps}}  {'COST':>{w_cost}}  UPDATED"
    ]
    for i, (_, row) in enumerate(shown):
        line = (
            f"{ids[i]:<{w_id}}  {titles[i]:<{w_title}}  {graphs[i]:<{w_graph}}  "
            f"{row.state:<{w_state}}  "
            f"{row.steps:>{w_steps}}  {costs[i]:>{w_cost}}  {row.updated}"
        )
        origin = forks.get(row.id)
        notes = [row.why] if row.why else []
        if origin is not None:
            notes.append(f"forked from {origin['thread']} at step {origin['step']}")
        lines.append(line + "".join(f"  {n}" for n in notes))
    return lines


def _nested(rows: list[ThreadRow]) -> list[tuple[int, ThreadRow]]:
    """`rows` in their order, each child thread moved under its parent (depth first); a child
    whose parent is not among them (filtered out by --status) stays where it is, at depth 0."""
    ids = {row.id for row in rows}
    children: dict[str, list[ThreadRow]] = {}
    roots: list[ThreadRow] = []
    for row in rows:
        parent = row.id.rpartition(".")[0]
        if parent and parent in ids:
            children.setdefault(parent, []).append(row)
        else:
            roots.append(row)
    out: list[tuple[int, ThreadRow]] = []

    def visit(row: ThreadRow, depth: int) -> None:
        out.append((depth, row))
        for child in children.get(row.id, []):
            visit(child, depth + 1)

    for row in roots:
        visit(row, 0)
    return out


@threads.command("show")
@click.argument("thread_id")
@store_option
@temporal_option
@click.option("--full", is_flag=True, help="Print long values whole (by default they are cut).")
@click.option("--json", "as_json", is_flag=True, help="Everything, as one JSON object.")
def show(
    thread_id: str, store_dir: Path | None, temporal: str | None, full: bool, as_json: bool
) -> None:
    """Tell the story of a thread: each step, its status, fields, attempts, tokens and time.

    A thread waiting for a person also shows the question and the answers it takes.
    """
    session = _session(store_dir, temporal, readonly=True)
    row = _row(session, thread_id)
    events = _events(session, row.id)
    question = session.question(row.id) if row.state == ThreadStatus.WAITING else None
    children = session.child_events
    forks = session.forks()
    made = forks_of(row.id, forks)
    if as_json:
        data = story_json(row, events, question, children)
        data["forked_from"] = forks.get(row.id)
        data["forks"] = [{"thread": f, "step": n} for f, n in made]
        click.echo(json.dumps(data, ensure_ascii=False, default=str))
    else:
        click.echo(story_text(row, events, question=question, full=full, children=children))
        for line in lineage(forks.get(row.id), made):
            click.echo(line)


def _session(store_dir: Path | None, temporal: str | None, *, readonly: bool = False) -> AnySession:
    return cli_session(store_dir, temporal, readonly=readonly)


def _events(session: AnySession, thread_id: str) -> list[StoredEvent]:
    try:
        return session.events(thread_id)
    except SessionError as exc:
        fail_session(exc)


def _row(session: AnySession, thread_id: str) -> ThreadRow:
    try:
        return session.thread(thread_id)
    except SessionError as exc:
        fail_session(exc)


def _graph_for(session: AnySession, row: ThreadRow, graph_arg: str | None) -> Graph:
    """The thread's graph, loaded and linted: a changed graph with errors does not run."""
    try:
        return session.graph_for(row, graph_arg)
    except OrchestratorError as exc:  # a graph that cannot be loaded, or has errors
        fail_session(exc)


@threads.command("resume")
@click.argument("thread_id")
@click.option("--message", default=None, help="Added to the pending prompt.")
@click.option(
    "--graph",
    "graph_arg",
    default=None,
    help="The graph file, if it moved since the thread started.",
)
@click.option("--max-steps", type=click.IntRange(min=1), default=None)
@click.option("--model", default=None, help="Model alias or id for every role.")
@store_option
@temporal_option
@click.option("--json", "as_json", is_flag=True)
def resume(
    thread_id: str,
    message: str | None,
    graph_arg: str | None,
    max_steps: int | None,
    model: str | None,
    store_dir: Path | None,
    temporal: str | None,
    as_json: bool,
) -> None:
    """Continue a suspended, interrupted or completed thread."""
    session = _session(store_dir, temporal)
    row = _row(session, thread_id)
    graph = _graph_for(session, row, graph_arg)
    options = RunOptions(
        max_steps=max_steps, model=model, interactive=sys.stdin.isatty() and not as_json
    )
    sys.exit(drive(session, graph, row.id, options, as_json, first=ResumeRequested(message)))


@threads.command("answer")
@click.argument("thread_id")
@click.option("--status", "status", default=None, help="The status of the answer.")
@click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="KEY=VALUE",
    help="A frontmatter field (values are read as YAML: 3, true, [a, b]).",
)
@click.option(
    "--file",
    "reply_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A whole reply (frontmatter and body); - reads stdin.",
)
@click.option(
    "--step",
    type=int,
    default=None,
    help="The waiting step to answer, when several wait (parallel branches); default: the first.",
)
@click.option("--graph", "graph_arg", default=None)
@store_option
@temporal_option
@click.option("--json", "as_json", is_flag=True)
def answer(
    thread_id: str,
    status: str | None,
    assignments: tuple[str, ...],
    reply_file: Path | None,
    step: int | None,
    graph_arg: str | None,
    store_dir: Path | None,
    temporal: str | None,
    as_json: bool,
) -> None:
    """Answer for a human role of a waiting thread, then continue it.

    Without --status, --set or --file, in a terminal, it asks for the status and each field
    as `run` does; elsewhere it says which options the answer takes.
    """
    session = _session(store_dir, temporal)
    row = _row(session, thread_id)
    graph = _graph_for(session, row, graph_arg)
    # Which steps may be answered, and with which contract, is the moderator's answer
    # (`allowed()`: a person in a parallel branch, or inside a subgraph's child): asked, not
    # re-derived here.
    try:
        asked = session.allowed(row.id, graph)
    except SessionError as exc:
        fail_session(exc)
    question = question_for(asked, step)
    if question is None:
        if step is not None and asked.answers:
            steps = ", ".join(str(a.top_step) for a in asked.answers)
            fail(f"step {step} of thread {row.id} does not wait for an answer (these do: {steps})")
        fail(asked.why_no_answer)
    role = question.role
    if reply_file is not None:
        if status or assignments:
            fail("use either --file or --status/--set, not both")
        text = read_text_file(reply_file, "--file", dash_is_stdin=True)
    elif not status and not assignments:
        if as_json or not sys.stdin.isatty():
            fail(answer_options(question))
        text = ask_in_terminal(session, graph, question)
    else:
        # Values are typed by the field's schema: `--set budget=300` is a number where the
        # contract says integer, and stays the text "300" where it says string.
        contract = role.contract.for_status(status or "_") if role is not None else None
        schemas = contract.field_schemas if contract is not None else {}
        fields = {
            k: typed_value(v, schemas.get(k, {"type": "any"}))
            for k, v in parse_assignments(assignments, "--set").items()
        }
        text = format_reply(status, fields)
    options = RunOptions(interactive=sys.stdin.isatty() and not as_json)
    first = Answered(text, question.step)
    sys.exit(drive(session, graph, row.id, options, as_json, first=first))


@threads.command("cancel")
@click.argument("thread_id")
@store_option
@temporal_option
def cancel(thread_id: str, store_dir: Path | None, temporal: str | None) -> None:
    """Cancel a thread; it cannot be resumed afterwards. A process running it stops."""
    session = _session(store_dir, temporal)
    try:
        row = session.cancel(thread_id)
    except OrchestratorError as exc:  # no such thread, or one that has ended
        fail_session(exc)
    click.echo(f"thread {row.id} cancelled")
    sys.exit(EXIT_OK)


@threads.command("export")
@click.argument("thread_id")
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the recording here (default: stdout).",
)
@store_option
@temporal_option
def export(thread_id: str, out: Path | None, store_dir: Path | None, temporal: str | None) -> None:
    """Write a thread's recording (docs/format.md section 8), for replays and tests."""
    session = _session(store_dir, temporal, readonly=True)
    row = _row(session, thread_id)
    recording = session.recording(row.id)
    text = recording.dump()
    if out is None:
        click.echo(text, nl=False)
    else:
        try:
            write_whole(out, text)
        except OSError as exc:
            fail(f"cannot write {out}: {exc.strerror or exc}", EXIT_USAGE)
        click.echo(f"wrote {out} ({plural(len(recording.steps), 'step')})", err=True)


def write_whole(path: Path, text: str) -> None:
    """Write a temporary file beside `path`, then rename it: `path` is the old file or the new
    one, never half of one (a full disk, Ctrl-C), and a recording read meanwhile is whole."""
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            os.chmod(temp, path.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


@threads.command("prune")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@click.option(
    "--branches",
    is_flag=True,
    help="Also delete the threads' branches whose commits are all on another branch.",
)
@store_option
def prune(dry_run: bool, branches: bool, store_dir: Path | None) -> None:
    """Remove the git worktrees of threads that completed, failed or were cancelled.

    A worktree with changes not committed is kept, as are the threads' branches unless
    --branches is given; even then a branch with commits on no other branch is kept.
    """
    items = cli_session(store_dir).prune(dry_run=dry_run, branches=branches)
    would = "would remove" if dry_run else "removed"
    for item in items:
        click.echo(f"thread {item.thread_id} ({item.state}):")
        if item.removed_worktree:
            click.echo(f"  {would} worktree {shown(item.tree.path)}")
        if item.deleted_branch:
            click.echo(f"  {'would delete' if dry_run else 'deleted'} branch {item.tree.branch}")
        for note in item.notes:
            click.echo(f"  {'error: ' if item.failed else ''}{note}")
    trees = sum(i.removed_worktree for i in items)
    gone = sum(i.deleted_branch for i in items)
    if not trees and not gone:
        click.echo("nothing to prune" if not items else "nothing removed")
    else:
        click.echo(
            f"{would} {plural(trees, 'worktree')}"
            + (
                f", {'would delete' if dry_run else 'deleted'} {plural(gone, 'branch', 'branches')}"
                if branches
                else ""
            )
            + ("" if branches else "; branches kept (--branches deletes the merged ones)")
        )
    sys.exit(EXIT_PROBLEMS if any(i.failed for i in items) else EXIT_OK)
