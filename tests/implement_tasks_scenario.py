"""A whole implement-tasks thread over the sample repository, to regenerate its demo recording.

The replies are scripted (the task planner's stand-in writes tasks.json as the model would with
its edit tool); the picker and the recorder are the graph's real Python actors, and each task
runs as a real solve-issue child thread. The recording holds the children's steps, so
`orchestrator run implement-tasks --replay examples/implement-tasks.recording.yaml` replays the
whole loop offline.

    python -m tests.implement_tasks_scenario     # writes examples/implement-tasks.recording.yaml
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from orchestrator.actors.base import ActReply, ActRequest
from orchestrator.actors.scripted import ScriptedActor
from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import PythonActor
from orchestrator.run.actors import default_actor_for
from orchestrator.run.options import RunOptions, ThreadResult
from orchestrator.run.session import Session
from orchestrator.store.memory import MemoryStore
from orchestrator.testing import reply
from tests.solve_issue_scenario import sample_repo

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "examples" / "tasks-spec.md"
RECORDING = REPO / "examples" / "implement-tasks.recording.yaml"

TASKS = [
    {
        "id": "T1",
        "title": "Add variance()",
        "description": "Add `variance(values)` to statskit/stats.py: the population variance "
        "(the mean of the squared distances from the mean); ValueError for an empty sequence, "
        "as mean() does. Export it from statskit and test it with ints, floats and Fractions.",
        "depends_on": [],
    },
    {
        "id": "T2",
        "title": "Add stdev()",
        "description": "Add `stdev(values)`: the square root of `variance(values)` (task T1). "
        "Export it from statskit and test it.",
        "depends_on": ["T1"],
    },
    {
        "id": "T3",
        "title": "Add mode()",
        "description": "Add `mode(values)`: the most common value, the smallest of equally "
        "common ones; ValueError for an empty sequence. Export it and test it.",
        "depends_on": [],
    },
]

SOLVES = [  # (planner's plan, developer's summary, tester's summary), one per task in pick order
    (
        "Add variance() after mean() in statskit/stats.py, reusing mean(); add VarianceTest.",
        "variance() returns the mean of squared deviations; 4 new tests.",
        "12 tests pass",
    ),
    (
        "Add stdev() as math.sqrt(variance(values)) beside variance(); add StdevTest.",
        "stdev() is the square root of variance(); 2 new tests.",
        "14 tests pass",
    ),
    (
        "Add mode() with collections.Counter, the smallest of the most common; add ModeTest.",
        "mode() counts with Counter and picks the smallest most common value; 3 new tests.",
        "17 tests pass",
    ),
]


class TaskPlanner:
    """The task planner's stand-in: writes tasks.json (the model's edit tool call), replies."""

    kind = "scripted"

    async def play(self, request: ActRequest) -> ActReply:
        (request.workspace / "tasks.json").write_text(json.dumps(TASKS, indent=2) + "\n")
        body = "T1 and T3 are independent; T2 builds on T1's variance()."
        return ActReply(text=reply("planned", body, count=len(TASKS)), message=request.prompt)


def replies() -> dict[str, list[str]]:
    return {
        "planner": [reply("ready", plan=p, files=["statskit/stats.py"]) for p, _, _ in SOLVES],
        "developer": [
            reply("done", summary=s, files_changed=["statskit/stats.py", "tests/test_stats.py"])
            for _, s, _ in SOLVES
        ],
        "reviewer": [reply("approved", summary="Small, tested, in the module's style.")] * 3,
        "tester": [
            reply("passed", test_command="python3 -m unittest", test_output_summary=t)
            for _, _, t in SOLVES
        ],
    }


def run_scenario(workspace: Path) -> tuple[Session, ThreadResult]:
    graph = load_graph("implement-tasks")
    session = Session(MemoryStore())
    scripted, planner = ScriptedActor(replies()), TaskPlanner()
    python = default_actor_for(RunOptions())

    def actor_for(name: str, role: Any) -> Any:
        if isinstance(role.actor, PythonActor):
            return python(name, role)
        return planner if name == "task-planner" else scripted

    spec = SPEC.read_text(encoding="utf-8")
    tid = session.start(graph, {"spec": spec}, folder=workspace, in_place=True).thread_id
    return session, asyncio.run(session.advance(graph, tid, actor_for=actor_for))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        session, result = run_scenario(sample_repo(Path(tmp) / "repo"))
        assert result.state == "completed", result.reason
        RECORDING.write_text(session.recording(result.thread_id).dump(), encoding="utf-8")
    print(f"wrote {RECORDING.relative_to(REPO)}: {result.final}")


if __name__ == "__main__":
    main()
