"""`orchestrator init`: the files of a new project, from one of the bundled starters.

A starter is a folder under `starters/` (package data): a graph in `graphs/`, its library roles
in `roles/`, a recording in `tests/recordings/` and what is common to all of them, made here: a
pytest file that replays every recording and runs one routing test, `pytest.ini`, a models file
in `.orchestrator/` (with a `.gitignore` that keeps the thread store out of git but the models
file in it) and a README of next steps. The `solve-issue` starter copies the bundled graph and
role library, so the project can change them.

`plan` computes every file (path -> text) without touching the disk; `write` refuses when any of
them exists already, before writing anything, so `init` never overwrites a file or leaves half a
project behind.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from ..definition.loader import bundled_graphs_dir, bundled_roles_dir


class Starter(enum.Enum):
    REVIEW_LOOP = "review-loop"
    SOLVE_ISSUE = "solve-issue"
    BLANK = "blank"


@dataclass(frozen=True)
class Shape:
    """What the generated test and README say about a starter's graph."""

    graph: str  # the graph's name: graphs/NAME.yaml
    inputs: str  # `-i` options of a first run
    routes: str  # a routing test's body: replies, inputs and the path it asserts


SHAPES = {
    Starter.REVIEW_LOOP: Shape(
        "review",
        '-i topic="owls"',
        """    trace = simulate(
        GRAPH,
        [reply("drafted", draft="Owls hunt at night."), reply("approved")],
        {"topic": "owls"},
    )
    assert trace.path == ["writer", "reviewer", "$END"]""",
    ),
    Starter.SOLVE_ISSUE: Shape(
        "solve-issue",
        "-i issue=@ISSUE.md --workspace PATH/TO/REPO",
        """    done = reply("done", summary="Fixed the sum.", files_changed=["calc.py"])
    replies = {
        "planner": [reply("ready", plan="Fix the sum.", files=["calc.py"])],
        "developer": [done, done],
        "reviewer": [reply("rejected", comments="Add a test."), reply("approved", summary="ok")],
        "tester": [reply("passed", test_command="pytest", test_output_summary="5 passed")],
    }
    trace = simulate(GRAPH, replies, {"issue": "sum() is off by one"})
    assert trace.path == [
        "planner", "developer", "reviewer", "developer", "reviewer", "tester", "$END"
    ]""",
    ),
    Starter.BLANK: Shape(
        "main",
        '-i task="Name three primary colours."',
        """    trace = simulate(GRAPH, [reply("done", result="Red, yellow, blue.")], {"task": "colours"})
    assert trace.path == ["worker", "$END"]""",
    ),
}

TEST_FILE = '''"""Routing tests of graphs/{graph}.yaml: no model is called, no key is needed.

Every recording in tests/recordings/ must still take the same route through the graph; record
more with `orchestrator threads export THREAD_ID -o tests/recordings/NAME.yaml`.
"""

from pathlib import Path

import pytest

from orchestrator.testing import assert_same_route, recordings, reply, simulate

ROOT = Path(__file__).resolve().parents[1]
GRAPH = ROOT / "graphs" / "{graph}.yaml"


@pytest.mark.parametrize("recording", recordings(ROOT / "tests" / "recordings"))
def test_recorded_routes(recording: Path) -> None:
    assert_same_route(GRAPH, recording)


def test_a_route() -> None:
{routes}
'''

PYTEST_INI = "[pytest]\ntestpaths = tests\n"

MODELS_FILE = """\
# The models file of this project (docs/models.md): aliases, the default model and prices.
# Found next to the thread store, it may add aliases and raise prices; a change it makes to the
# built-in models is announced when a thread starts.
default: sonnet
# aliases:
#   cheap: claude-haiku-5-5
"""

# The thread store (threads.db, worktrees) stays out of git; the models file is the project's.
STORE_GITIGNORE = "*\n!.gitignore\n!models.yaml\n"

README = """\
# {name}

Made by `orchestrator init --template {template}`.

- `graphs/{graph}.yaml`: the graph: its roles, and the edges their statuses take.
- `roles/`: the roles' goals, procedures and output contracts (`extends:` finds them here).
- `tests/`: routing tests; `tests/recordings/` holds recorded threads that CI replays.
- `.orchestrator/models.yaml`: the models file (aliases, default model, prices).

Next steps:

1. Check the graph and its roles: `orchestrator validate {validate}`
2. Run the tests (no model is called): `python -m pytest`
3. Watch a recorded thread play: `orchestrator run {graph} {inputs} --replay {recording}`
4. Run it on a model: set `ANTHROPIC_API_KEY`, then `orchestrator run {graph} {inputs}`
5. Watch threads in a browser: `orchestrator serve`

Change a role's `frontmatter:` or an edge, then `orchestrator validate` and `python -m pytest`:
a recording that no longer takes the same route fails with the step where it diverges.
"""


def plan(starter: Starter, name: str) -> dict[str, str]:
    """Every file of a new project (relative path -> text), from `starter`."""
    shape = SHAPES[starter]
    out: dict[str, str] = {}
    if starter is Starter.SOLVE_ISSUE:
        out["graphs/solve-issue.yaml"] = (bundled_graphs_dir() / "solve-issue.yaml").read_text(
            encoding="utf-8"
        )
        for role in ("planner", "developer", "reviewer", "tester"):
            out[f"roles/{role}.md"] = (bundled_roles_dir() / f"{role}.md").read_text(
                encoding="utf-8"
            )
    base = files(__package__).joinpath("starters", starter.value)
    for folder in ("graphs", "roles", "tests/recordings"):
        here = base.joinpath(folder)
        if here.is_dir():
            for item in sorted(here.iterdir(), key=lambda p: p.name):
                if item.name.endswith((".yaml", ".md")):
                    out[f"{folder}/{item.name}"] = item.read_text(encoding="utf-8")
    recording = next(p for p in sorted(out) if p.startswith("tests/recordings/"))
    out[f"tests/test_{shape.graph.replace('-', '_')}.py"] = TEST_FILE.format(
        graph=shape.graph, routes=shape.routes
    )
    out["pytest.ini"] = PYTEST_INI
    out[".orchestrator/models.yaml"] = MODELS_FILE
    out[".orchestrator/.gitignore"] = STORE_GITIGNORE
    out["README.md"] = README.format(
        name=name,
        template=starter.value,
        graph=shape.graph,
        inputs=shape.inputs,
        recording=recording,
        validate="graphs/ roles/" if any(p.startswith("roles/") for p in out) else "graphs/",
    )
    return out


class InitRefused(Exception):
    """`init` would overwrite files: nothing was written."""

    def __init__(self, folder: Path, existing: list[str]) -> None:
        self.folder, self.existing = folder, existing
        super().__init__(f"{folder} already has {', '.join(existing)}")


def write(folder: Path, planned: dict[str, str]) -> list[str]:
    """Write `planned` under `folder`; refuse, writing nothing, when any file exists."""
    existing = [rel for rel in planned if _taken(folder, rel)]
    if existing:
        raise InitRefused(folder, existing)
    for rel, text in planned.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as out:  # "x": never follow or replace a file
            out.write(text)
    return list(planned)


def _taken(folder: Path, rel: str) -> bool:
    """Whether `rel` exists under `folder`, or a folder on its way is a link (which `mkdir` and
    `open` would follow out of the project)."""
    path = folder
    for part in Path(rel).parts[:-1]:
        path = path / part
        if path.is_symlink():
            return True
    target = folder / rel
    return target.exists() or target.is_symlink()
