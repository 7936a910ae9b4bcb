"""What crosses into and out of a thread's workflow, as dataclasses of JSON values (codec.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ThreadInput:
    """What a thread's workflow starts with: its log so far, its graph and how to run it."""

    thread_id: str
    snapshot: dict[str, Any]  # Graph.model_dump(mode="json"): workers need no graph files
    events: list[dict[str, Any]]  # stored events {seq, at, event}: ThreadStarted at least
    graph_path: str = ""
    max_steps: int | None = None
    model: str | None = None
    first: dict[str, Any] | None = None  # a request judged first: a completed thread resumed
    heartbeat_seconds: float = 10.0
    subgraphs: dict[str, Any] = field(default_factory=dict)  # codec.subgraph_snapshots
    children: dict[str, Any] = field(default_factory=dict)  # the children's logs (children.py)
    max_cost_usd: float | None = None  # a child: what its parent's limits leave
    as_child: bool = False  # a child workflow: it returns whenever it stops (children.py)
    recording: dict[str, Any] | None = None  # a replay: the recording the steps play
    replay_pace: float = 0.0
    worktree: dict[str, Any] | None = None  # vcs/shared.SharedBranch: the thread's branch
    replaying: bool = False  # a replay whose recording comes with the first advance (update)
    reuse: dict[str, Any] | None = None  # a fork with --reuse: the original's kept steps (reuse.py)


@dataclass
class StepInput:
    """The `run_step` activity's argument: the plan, the role it is for, the workspace."""

    role_name: str
    role: dict[str, Any]
    plan: dict[str, Any]
    workspace: str
    replay: dict[str, Any] | None = None  # a replay: the recording whose step is played
    pace: float = 0.0
    worktree: dict[str, Any] | None = None  # the thread's branch: the worker's worktree of it
    reuse: dict[str, Any] | None = None  # a fork's reused step: the original's reply (reuse.py)


@dataclass
class ResumeInput:
    message: str | None = None
    max_steps: int | None = None
    model: str | None = None
    snapshot: dict[str, Any] | None = None  # a changed graph to continue with
    graph_path: str | None = None
    subgraphs: dict[str, Any] | None = None  # with a changed graph: its subgraph roles' graphs


@dataclass
class EventsPage:
    events: list[dict[str, Any]] = field(default_factory=list)
    seq: int = 0  # the thread's last sequence number
    status: str = ""


@dataclass
class ReplayInput:
    recording: dict[str, Any]
    pace: float = 0.0
