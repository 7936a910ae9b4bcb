"""Replay reports: what replaying a recording through the current graph found.

Replaying recordings through the current graph: "same route", or the first divergence.

Why this module exists
----------------------
A recording (docs/format.md section 8) holds a thread's replies. Users keep recordings as tests of
their graphs: when they change a graph, they want to know whether the recorded threads would
still take the same route, and where they would not. Replaying runs the *real* engine (routing,
extraction, repairs, templates, guards) in an in-memory store, with a `ReplayActor` that feeds
step N's recorded replies when the engine asks for step N. Nothing here re-implements routing;
this module only reads the replayed thread's event log and compares it with the recording.

What "same route" means
-----------------------
A recording's steps are a prefix of a route. Its `state` says what came after the last step:

* `completed`, or no `state` at all (a hand-written recording, like docs/format.md section 8's example): the
  route ended at `$END` right after the last step.
* any other state (`suspended`, `waiting`, `running`, `failed`, `cancelled`): the recorded
  thread stopped mid-route, so the recording says nothing about what follows its last step.

A replay takes the *same route* when

1. the graph asked for every recorded step, in order, with the recorded role, and accepted that
   step's recorded reply (after its recorded rejected attempts, which must still be rejected);
2. and then ended where the recording ended: at `$END` for a completed recording; for one that
   stopped mid-route, by asking for a step the recording does not hold (or because the last
   recorded reply is a `$SUSPEND`), and never by reaching `$END` there.

Anything else is a divergence, and the first one is returned as data (`Divergence`), never
raised. A template that fails to render or a status without an edge is a divergence even at the
end of a recording that stopped mid-route: the graph is broken there whatever the recording
says. A limit (`max_visits`) reached during the replay is not a change of route; the replay
resumes past it, as the recorded thread's user did, and notes it. Statuses need no separate
check: a step's status is read from its recorded reply, so same reply, same status.

A thread continued after an ending (`$START.resume`) is exported with where (`resumed:` in the
recording: after which step, from which ending, with which message). The replay resumes there
with the recorded message when the graph ends there too; it must end there, in the recorded
ending (else `continues` or `ending` at the next step), and then goes on as recorded.

The recording's `graph_hash` is compared with the graph's and the result is reported
(`same`, `changed`, `missing`); a difference never stops a replay, since a changed graph is
exactly what a replay is for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..actors.recording import Recording
from ..core.events import Event
from ..definition.models import END, SINGLE_EXIT
from .trace import Trace

ARROW = " → "


class DivergenceKind(StrEnum):
    """Stable identifiers of divergences (they appear in `replay --json`)."""

    ROUTE = "route"  # the graph routes step N to another role than the recording holds
    ENDED_EARLY = "ended-early"  # the graph reaches $END where the recording goes on
    CONTINUES = "continues"  # the recording ended at $END; the graph asks for another step
    REJECTED = "rejected"  # the recorded reply no longer satisfies the role's schema
    REPAIRS = "repairs"  # max_repairs now ends the step before the recorded accepted reply
    ATTEMPT_ACCEPTED = "attempt-accepted"  # a reply rejected when recorded is now accepted
    NO_EDGE = "no-edge"  # a recorded status no longer has an edge
    TEMPLATE = "template"  # an edge prompt no longer renders
    INPUTS = "inputs"  # the recorded inputs no longer satisfy the graph's inputs schema
    SUSPENDED = "suspended"  # a recorded `$SUSPEND` stops the thread where the route goes on
    STOPPED = "stopped"  # the thread stopped for another reason (the message says which)
    ENDING = "ending"  # the graph ends where the recording did, in another ending


@dataclass(frozen=True)
class Divergence:
    """The first place where the graph no longer does what the recording did.

    `recorded_role` is the role the recording holds at `step`, `"$END"` when the recording
    ended there, or None when it holds nothing there (it stopped mid-route). `graph_role` is
    the role the graph now chooses for `step`, `"$END"`, or None when it could not choose.
    `edge` is the (source, status, target) the graph took or tried, when there is one.
    """

    kind: DivergenceKind
    step: int
    recorded_role: str | None
    graph_role: str | None
    message: str
    errors: tuple[str, ...] = ()
    edge: tuple[str, str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": str(self.kind),
            "step": self.step,
            "recorded_role": self.recorded_role,
            "graph_role": self.graph_role,
            "edge": (
                None
                if self.edge is None
                else {"source": self.edge[0], "status": self.edge[1], "target": self.edge[2]}
            ),
            "errors": list(self.errors),
            "message": self.message,
        }


@dataclass
class ReplayReport:
    """The outcome of replaying one recording through one graph."""

    recording: Recording
    graph: str
    graph_hash: str  # same | changed | missing: the recording's graph_hash against the graph's
    divergence: Divergence | None
    trace: Trace  # the replayed thread, for assertions on prompts and frontmatter
    notes: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list, repr=False)

    @property
    def same_route(self) -> bool:
        return self.divergence is None

    @property
    def name(self) -> str:
        return self.recording.path or f"<recording of {self.recording.graph or self.graph}>"

    @property
    def replayed(self) -> int:
        """How many recorded steps the graph took as recorded."""
        if self.divergence is None:
            return len(self.recording.steps)
        return min(self.divergence.step - 1, len(self.recording.steps))

    @property
    def path(self) -> list[str]:
        return list(self.trace.path)

    @property
    def statuses(self) -> list[str]:
        return self.trace.statuses

    def route_text(self, limit: int | None = None) -> str:
        """`writer(drafted) → reviewer(approved) → $END`, up to `limit` committed steps."""
        steps = [s for s in self.trace.steps if s.status is not None][:limit]
        parts = [s.role if s.status == SINGLE_EXIT else f"{s.role}({s.status})" for s in steps]
        if limit is None and self.trace.path[-1:] == [END]:
            parts.append(END)
        return ARROW.join(parts) or "(no step)"

    def summary(self) -> str:
        """One line: `NAME: same route, 4 steps` or `NAME: diverges at step 3 (route)`."""
        if self.divergence is None:
            n = len(self.recording.steps)
            return f"{self.name}: same route, {n} step{'s' if n != 1 else ''}"
        return f"{self.name}: diverges at step {self.divergence.step} ({self.divergence.kind})"

    def describe(self) -> str:
        """Readable, several lines: the verdict, the divergence's details, the notes."""
        lines = [self.summary()]
        if self.divergence is None:
            lines.append(f"  route: {self.route_text()}")
        else:
            d = self.divergence
            lines.append(f"  {d.message}{':' if d.errors else ''}")
            lines.extend(f"    - {error}" for error in d.errors)
            lines.append(f"  replayed as recorded: {self.route_text(self.replayed)}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "recording": self.name,
            "graph": self.graph,
            "same_route": self.same_route,
            "steps": len(self.recording.steps),
            "replayed": self.replayed,
            "path": self.path,
            "statuses": self.statuses,
            "state": self.trace.state,
            "graph_hash": self.graph_hash,
            "divergence": None if self.divergence is None else self.divergence.to_dict(),
            "notes": list(self.notes),
        }


def _label(edge: tuple[str, str, str]) -> str:
    return f"{edge[0]} --{edge[1]}--> {edge[2]}"
