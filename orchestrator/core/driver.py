"""The driver: the one loop around the moderator, for every executor.

Theory of operation
-------------------
A thread advances by one loop, written here once: ask `decide` for the next command, carry it
out, and hand what came of it to `judge`, committing the events it returns. How a command is
carried out is an *executor*'s business, and only that: the local runner (`run/runner.py`: the
actors called in this process, events committed to the thread's store) and the Temporal
workflow (`temporal/workflow.py`: each step an activity on a worker, events kept in the
workflow's history) are the two executors. Neither decides anything: routing, repairs, limits,
branches and children are the moderator's rules (engine.py), asked here.

    Record(event)  executor.commit(event)
    RunStep        executor.single(step, executor.act(command)): the actor's call for the step
                   in flight, stoppable; its outcome is judged
    RunChild       the child thread of a subgraph role's step (S1, S2, S3 and S4 of engine.py): started
                   (executor.start_child) or told to continue (S3), run until it stops
                   (executor.run_child: the driver again, on the child), its end judged (S4)
    RunBranches    executor.branches(work): keep each listed branch running (an actor's call or
                   a child, as above), wait for the first to end, judge those that ended, in
                   step order
    Idle           executor.idle(status): the local runner stops; the workflow waits for a
                   request (or returns once the thread ended)

Deterministic: this module does no I/O, reads no clock and imports nothing of actors, stores,
tools or processes, so the Temporal workflow runs it as it is. It may only await what an
executor gives it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from ..definition.models import Graph
from . import engine
from .commands import Idle, Limits, Record, RunBranches, RunChild, RunStep
from .events import Event, SuspendKind, ThreadStatus
from .outcomes import ActorFailed, Outcome
from .state import ThreadState
from .subgraph import child_outcome, child_request

Work = Callable[[], Awaitable[Outcome | None]]


class Executor(Protocol):
    """How one thread's commands are carried out: in this process, or on Temporal."""

    @property
    def graph(self) -> Graph: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def state(self) -> ThreadState:
        """The fold of the thread's committed events (and of those `commit` just took)."""
        ...

    async def commit(self, event: Event) -> None:
        """Apply the event to the state and keep it (before the state moves on)."""

    async def act(self, command: RunStep) -> Outcome | None:
        """Call the role's actor for the step; None when the thread ended meanwhile."""

    async def single(self, step: int, work: Work) -> Outcome | None:
        """Run the work of the one step in flight, stoppable by a cancel from elsewhere."""

    async def branches(self, work: Mapping[int, Work]) -> list[Outcome]:
        """Keep each branch's work running (start those not running yet, by step number); wait
        for the first to end; the outcomes of those that ended, in step order."""

    async def child_state(self, child: str) -> ThreadState | None:
        """The state of the child thread with this id; None when it was never started."""

    async def start_child(self, command: RunChild, graph: Graph) -> str | None:
        """Create the child thread (S2: `subgraph.child_started`, in the step's folder); why it
        cannot be, or None."""

    async def run_child(
        self, command: RunChild, graph: Graph, first: Outcome | None
    ) -> tuple[ThreadState, float]:
        """Advance the child thread (judging `first` first) until it stops; its state then and
        the seconds it took."""

    async def idle(self, status: ThreadStatus) -> bool:
        """Nothing to do: True to decide again (a request came), False to stop."""

    async def turned(self) -> None:
        """One command was carried out (a workflow may continue as new here)."""


async def drive(executor: Executor) -> None:
    """Advance the thread until the executor stops at an Idle."""
    while True:
        graph = executor.graph  # a resume on Temporal may change the graph and the limits
        command = engine.decide(graph, executor.state, executor.limits)
        match command:
            case Idle():
                if not await executor.idle(command.status):
                    return
            case Record():
                await executor.commit(command.event)
            case RunStep() | RunChild():
                outcome = await executor.single(command.step, _work(executor, command))
                await judge(executor, outcome)
            case RunBranches():
                runs = {run.step: _work(executor, run) for run in command.steps}
                for outcome in await executor.branches(runs):
                    await judge(executor, outcome)
        await executor.turned()


async def judge(executor: Executor, outcome: Outcome | None) -> None:
    """Commit the events that record `outcome` (nothing for None: the thread ended meanwhile)."""
    if outcome is None:
        return
    for event in engine.judge(executor.graph, executor.state, outcome):
        await executor.commit(event)


def _work(executor: Executor, command: RunStep | RunChild) -> Work:
    if isinstance(command, RunChild):
        return lambda: run_child(executor, command)
    return lambda: executor.act(command)


async def run_child(executor: Executor, command: RunChild) -> Outcome:
    """S2-S4: start or continue the child thread of a subgraph step; its end as the outcome."""
    child = executor.graph.subgraph(command.role)
    if child is None:  # S2
        return ActorFailed(
            command.step,
            f"the graph of subgraph role '{command.role}' is not loaded",
            SuspendKind.GRAPH,
        )
    known = await executor.child_state(command.child)
    first = None
    if known is None:
        problem = await executor.start_child(command, child)  # S2
        if problem is not None:
            return ActorFailed(command.step, problem, SuspendKind.GRAPH)
    else:
        first = child_request(child, known, command.message)  # S3
    state, took = await executor.run_child(command, child, first)
    return child_outcome(command, state, took)  # S4
