"""Running an eval: one thread per case x variant x repeat, judged as it finishes.

The eval's folder (`--out`, default `.orchestrator/evals/SUITE`) holds its own thread store
(`store/`), one folder per run (`runs/VARIANT/CASE/REPEAT/`: the run's `workspace/`, the id of
its `thread`, its `recording.yaml` once judged), `results.jsonl` and `meta.json`. A run's
workspace is made fresh before its thread starts: the case's folder copied, or cloned when it
is the top of a git repository (through vcs/git_safe.py: no hooks, no filters, local transport
only), so no run sees another's files and the source is never touched. Threads work there in
place (the copy is theirs alone).

Replaying (`--replay DIR`): each run's thread replays `DIR/CASE.recording.yaml`, then the files
the recorded run left changed (`DIR/CASE/files/`) are copied into its fresh workspace, since a
replay runs no tool; its cost and time are the recorded run's (`DIR/CASE.result.json`). The
expectations then judge it as any run, the hidden tests run for real.

Continuing: a run already in `results.jsonl` is not run again; a run with a thread that did not
finish (Ctrl-C suspends it) is resumed; any other run starts afresh. `rescore` judges the stored
runs again with the suite as it is now: the thread checks, the command and the Python scorer
run again; a judge's stored verdict is kept, since judging again would call its model.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..actors.recording import RecordingError, load_recording
from ..core.context import template_context
from ..core.events import ThreadStatus
from ..definition.models import Graph
from ..definition.reserved import END
from ..run.options import ActorFor, RunOptions, ThreadResult
from ..run.preflight import InputError, check_inputs
from ..run.session import Session
from ..store.base import ThreadNotFound
from ..vcs.git_safe import WorktreeError, run_git
from . import results
from .expect import EvalRun, Verdict, run_command, run_scorer, thread_checks
from .judge import judge_problem, run_judge
from .suite import Case, Suite


class EvalError(InputError):
    """The eval cannot start (or continue); the message says why and what to do."""


@dataclass(frozen=True)
class Variant:
    name: str
    graph: Graph
    graph_arg: str  # as given: resolved again by a rescore
    model: str | None = None


@dataclass(frozen=True)
class Planned:
    case: Case
    variant: Variant
    repeat: int

    @property
    def key(self) -> str:
        return results.run_key(self.variant.name, self.case.id, self.repeat)


@dataclass
class EvalContext:
    suite: Suite
    folder: Path
    session: Session
    actor_for: ActorFor | None = None  # tests and the Python API: who plays every role
    max_steps: int | None = None
    on_record: Callable[[dict[str, Any]], None] | None = None
    replay: Path | None = None  # recorded runs: CASE.recording.yaml and CASE/files/ each
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def run_dir(self, planned: Planned) -> Path:
        return self.folder / "runs" / planned.variant.name / planned.case.id / str(planned.repeat)


def variant_name(text: str) -> str:
    """A variant's name, safe as a folder name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "variant"


def plan(suite: Suite, variants: list[Variant], repeat: int) -> list[Planned]:
    """Every run, its inputs checked against each variant's graph first."""
    problems = []
    judged: dict[tuple[str, str], str | None] = {}  # (role, graph): its problem, checked once
    for variant in variants:
        for case in suite.cases:
            try:
                check_inputs(variant.graph, case.inputs)
            except InputError as exc:
                problems.append(f"{case.where}: case {case.id!r} on {variant.name}: {exc}")
            judge = case.expect.judge
            said = None
            if judge is not None:
                key = (judge.role, variant.graph_arg)
                if key not in judged:
                    judged[key] = judge_problem(judge, variant.graph_arg, suite.folder)
                said = judged[key]
            if said is not None:
                problems.append(f"{case.where}: case {case.id!r} on {variant.name}: {said}")
    if problems:
        raise EvalError("\n".join(problems))
    return [
        Planned(case, variant, r)
        for case in suite.cases
        for variant in variants
        for r in range(1, repeat + 1)
    ]


def fresh_workspace(source: Path | None, dest: Path) -> None:
    """The run's own copy of the case's folder (a clone of a repository's top)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if source is None:
        dest.mkdir()
    elif (source / ".git").exists():
        try:
            run_git(["clone", "--quiet", "--no-hardlinks", str(source), str(dest)], dest.parent)
        except WorktreeError as exc:
            raise EvalError(f"cannot clone the workspace {source}: {exc}") from None
    else:
        # Not the stores inside it (the eval's own among them: a copy would hold itself).
        shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns(".orchestrator"))


async def run_all(ctx: EvalContext, planned: list[Planned], concurrency: int) -> None:
    done = results.read(ctx.folder)
    limit = asyncio.Semaphore(max(1, concurrency))

    async def one(p: Planned) -> None:
        if p.key in done:
            return
        async with limit:
            result = await _advance(ctx, p)
            record = await judge_run(ctx, p, result.thread_id, judge=None)
            await _keep(ctx, p, record)

    await asyncio.gather(*(one(p) for p in planned))


async def _advance(ctx: EvalContext, p: Planned) -> ThreadResult:
    """The run's thread, started or continued, advanced as far as it goes."""
    where = ctx.run_dir(p)
    marker = where / "thread"
    options = RunOptions(max_steps=ctx.max_steps, model=p.variant.model)
    graph = p.variant.graph
    if marker.is_file():
        thread_id = marker.read_text(encoding="utf-8").strip()
        try:
            state = ctx.session.state(thread_id)
        except ThreadNotFound:
            state = None
        if state is not None:
            if state.status.ended or state.status == ThreadStatus.WAITING:
                view = ctx.session.view(thread_id)
                return ThreadResult.of(thread_id, state, list(view.path))
            if ctx.replay is not None:  # a replay is quick: made again from its start
                pass
            elif state.status == ThreadStatus.SUSPENDED:
                return await ctx.session.resume(
                    graph, thread_id, options=options, actor_for=ctx.actor_for
                )
            else:  # running when its process died: taken over
                return await ctx.session.advance(
                    graph, thread_id, options=options, actor_for=ctx.actor_for
                )
    fresh_workspace(p.case.workspace, where / "workspace")
    started = ctx.session.start(
        graph,
        dict(p.case.inputs),
        folder=where / "workspace",
        in_place=True,
        replay=ctx.replay is not None,
        labels=run_labels(ctx.suite, p),
    )
    marker.write_text(started.thread_id + "\n", encoding="utf-8")
    if ctx.replay is not None:
        return await _replayed(ctx, p, started.thread_id, options)
    return await ctx.session.advance(
        graph, started.thread_id, options=options, actor_for=ctx.actor_for
    )


def run_labels(suite: Suite, p: Planned) -> dict[str, str]:
    """The labels of an eval run's thread: `threads list --label suite=NAME --label case=ID`
    finds the runs of a suite, a case, a variant or a repeat."""
    return {
        "suite": suite.path.stem,
        "case": p.case.id,
        "variant": p.variant.name,
        "repeat": str(p.repeat),
    }


def recorded_measures(folder: Path, case: str) -> dict[str, Any] | None:
    """The recorded run's cost, tokens and seconds (CASE.result.json), if it kept them."""
    path = folder / f"{case}.result.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def recorded(folder: Path, case: str) -> tuple[Path, Path]:
    """A recorded run of `case`: its recording, and the folder of the files it left changed."""
    return folder / f"{case}.recording.yaml", folder / case / "files"


async def _replayed(
    ctx: EvalContext, p: Planned, thread_id: str, options: RunOptions
) -> ThreadResult:
    """The thread replayed from its recording; then the files the recorded run left changed
    are put in the workspace (a replay runs no tool, so it changes no file itself)."""
    assert ctx.replay is not None
    recording_path, files = recorded(ctx.replay, p.case.id)
    try:
        recording = load_recording(recording_path)
    except RecordingError as exc:
        raise EvalError(str(exc)) from None
    result = await ctx.session.advance(
        p.variant.graph, thread_id, options=options, replay=recording
    )
    if files.is_dir():
        shutil.copytree(files, ctx.run_dir(p) / "workspace", dirs_exist_ok=True)
    return result


def eval_run(ctx: EvalContext, p: Planned, thread_id: str) -> tuple[EvalRun, int, float]:
    """The run as the expectations see it, its tokens and its seconds."""
    state = ctx.session.state(thread_id)
    view = ctx.session.view(thread_id)
    steps = view.committed
    context = template_context(p.variant.graph, state, END, "")
    context["$final"] = state.final
    context["$ending"] = state.ending
    run = EvalRun(
        case=p.case.id,
        variant=p.variant.name,
        inputs=dict(state.inputs),
        workspace=ctx.run_dir(p) / "workspace",
        state=str(state.status),
        ending=state.ending,
        path=tuple(view.path),
        steps=state.committed,
        cost_usd=state.cost_usd,
        final=state.final,
        context=context,
    )
    tokens = sum(
        int(s.usage.get("input_tokens", 0)) + int(s.usage.get("output_tokens", 0)) for s in steps
    )
    return run, tokens, sum(s.duration_s for s in steps)


async def judge_run(
    ctx: EvalContext, p: Planned, thread_id: str, *, judge: dict[str, Any] | None
) -> dict[str, Any]:
    """The run's record. `judge`: a stored judge verdict to keep (a rescore) instead of
    asking the judge again."""
    run, tokens, seconds = eval_run(ctx, p, thread_id)
    measured = recorded_measures(ctx.replay, p.case.id) if ctx.replay is not None else None
    if measured is not None:  # a replay costs nothing and takes no time: the recorded run's
        run = dataclasses.replace(run, cost_usd=float(measured.get("cost_usd", 0.0)))
        tokens, seconds = int(measured.get("tokens", 0)), float(measured.get("seconds", 0.0))
    expect = p.case.expect
    verdicts: list[Verdict] = thread_checks(p.case, run)
    if expect.command is not None:
        verdicts.append(await run_command(expect.command, run.workspace))
    if expect.python is not None:
        verdicts.append(await run_scorer(expect.python, ctx.suite.folder, run))
    judge_thread, judge_cost = None, 0.0
    if expect.judge is not None:
        if judge is not None:
            verdicts.append(Verdict.of(judge["verdict"]))
            judge_thread, judge_cost = judge.get("thread"), float(judge.get("cost_usd", 0.0))
        else:
            verdict, judge_thread, judge_cost = await run_judge(
                ctx.session,
                expect.judge,
                p.variant.graph_arg,
                ctx.suite.folder,
                run,
                ctx.actor_for,
            )
            verdicts.append(verdict)
    return {
        "key": p.key,
        "case": p.case.id,
        "variant": p.variant.name,
        "repeat": p.repeat,
        "thread": thread_id,
        "state": run.state,
        "ending": run.ending,
        "path": list(run.path),
        "steps": run.steps,
        "tokens": tokens,
        "cost_usd": round(run.cost_usd, 6),
        "seconds": round(seconds, 3),
        "verdicts": [v.to_dict() for v in verdicts],
        "passed": all(v.passed for v in verdicts),
        "judge": None
        if judge_thread is None and expect.judge is None
        else {
            "thread": judge_thread,
            "cost_usd": round(judge_cost, 6),
            "verdict": next(v.to_dict() for v in verdicts if v.name == "judge"),
        },
    }


async def _keep(ctx: EvalContext, p: Planned, record: dict[str, Any]) -> None:
    """The record on disk (and its recording beside the run) before anything else happens."""
    where = ctx.run_dir(p)
    recording = ctx.session.recording(record["thread"]).dump()
    (where / "recording.yaml").write_text(recording, encoding="utf-8")
    record["recording"] = str((where / "recording.yaml").relative_to(ctx.folder))
    async with ctx.lock:
        results.append(ctx.folder, record)
    if ctx.on_record is not None:
        ctx.on_record(record)


async def rescore(ctx: EvalContext, planned: list[Planned]) -> list[dict[str, Any]]:
    """Judge every stored run again with the suite as it is now; calls no model."""
    stored = results.read(ctx.folder)
    fresh: list[dict[str, Any]] = []
    for p in planned:
        old = stored.get(p.key)
        if old is None:
            continue
        keep = old.get("judge") if isinstance(old.get("judge"), dict) else None
        if keep is None or not isinstance(keep.get("verdict"), dict):
            keep = {
                "thread": None,
                "verdict": Verdict(
                    "judge", False, 0.0, "not judged: a rescore calls no model"
                ).to_dict(),
            }
        record = await judge_run(ctx, p, old["thread"], judge=keep)
        record["recording"] = old.get("recording")
        fresh.append(record)
        if ctx.on_record is not None:
            ctx.on_record(record)
    results.rewrite(ctx.folder, fresh)
    return fresh
