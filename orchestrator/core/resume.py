"""Resuming a thread (rules J15-J17 of engine.py's theory of operation). Pure."""

from __future__ import annotations

from ..definition.models import RESUME, START, Graph
from .edges import needs_message
from .events import ThreadResumed, ThreadStatus
from .outcomes import Refused, ResumeRequested
from .state import ThreadState


def judge_resume(graph: Graph, state: ThreadState, outcome: ResumeRequested) -> ThreadResumed:
    """J15-J17 of engine.py's theory of operation: whether a resume may happen, and how."""
    tid = state.thread_id
    ended_at_end = state.ending is not None  # an ending, success or failure: $START.resume
    if state.status == ThreadStatus.CANCELLED or (
        state.status == ThreadStatus.FAILED and not ended_at_end
    ):
        raise Refused(f"thread {tid} is {state.status} and cannot be resumed")  # J15
    waits = state.waiting_for.role if state.waiting_for is not None else None
    role = graph.roles.get(waits) if waits is not None else None
    if role is not None and not role.is_subgraph:  # a subgraph's child waits: resume goes on to it
        raise Refused(
            f"thread {tid} waits for a person: answer it with `orchestrator threads answer {tid}`"
        )
    if ended_at_end and graph.edge(START, RESUME) is None:
        raise Refused(f"thread {tid} is {state.status} and its graph has no `$START.resume` edge")
    if ended_at_end and not (outcome.message or "").strip() and needs_message(graph):
        raise Refused(  # J15: rendered without one, the edge would leave the thread stuck
            f"thread {tid} is {state.status}, and its graph's `$START.resume` edge needs a "
            "message ({{{$inputs.message}}}): say what to do next with --message"
        )
    if state.status == ThreadStatus.NEW:
        raise Refused("the thread has not started")
    # J16: its last process died with a step in flight (a waiting step whose role is gone, too)
    interrupted = state.status == ThreadStatus.RUNNING and state.busy
    return ThreadResumed(message=outcome.message, interrupted=interrupted)  # J17
