"""The recorded run of the solve-issue suite (examples/evals/solve-issue/), made by playing the
roles through the fake Messages API: the model's turns are scripted here, everything else is
real (the `anthropic` client, the editor and shell tools editing each run's copy of the
repository, the sandbox, `orchestrator eval` itself with its hidden tests).

Five of the six fixes are right; the missing-validation one refuses negative amounts but not
overdrafts, and the roles' own checks pass it: the hidden tests are what catch it.

    python -m tests.eval_solve_issue_scenario     # writes examples/evals/solve-issue/recorded/
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from tests.solve_issue_scenario import EDITOR, Body, Turn, bash, reply, role_of, text, tool

REPO = Path(__file__).resolve().parents[1]
SUITE_DIR = REPO / "examples" / "evals" / "solve-issue"
RECORDED = SUITE_DIR / "recorded"
TESTS = "python3 -m unittest"


@dataclass(frozen=True)
class Fix:
    case: str
    repo: str
    file: str
    old: str
    new: str
    plan: str
    summary: str


FIXES = [
    Fix(
        "off-by-one",
        "pager",
        "pager.py",
        "items[start : start + size - 1]",
        "items[start : start + size]",
        "`page()` slices to `start + size - 1`, one short: slice to `start + size`.",
        "page() returns all `size` items of a page; the slice ended one item early.",
    ),
    Fix(
        "wrong-default",
        "wrapper",
        "wrapper.py",
        "DEFAULT_WIDTH = 8  # columns",
        "DEFAULT_WIDTH = 80  # columns",
        "`DEFAULT_WIDTH` is 8 but the docstring and README promise 80: set it to 80.",
        "The default width is 80 columns, as documented.",
    ),
    Fix(
        "empty-input",
        "averages",
        "averages.py",
        "    return sum(values) / len(values)\n",
        "    values = list(values)\n    if not values:\n        return None\n"
        "    return sum(values) / len(values)\n",
        "`average()` divides by `len(values)` even when it is 0: return None for no values.",
        "average() returns None for no values instead of dividing by zero.",
    ),
    Fix(
        "parser-edge",
        "kvparse",
        "kvparse.py",
        'key, value = part.split("=")',
        'key, value = part.split("=", 1)',
        'Split each part on the first `=` only: `part.split("=", 1)`.',
        "parse() splits each pair at its first `=`, so values may contain `=`.",
    ),
    Fix(
        "sort-key",
        "leaderboard",
        "leaderboard.py",
        "key=lambda item: item[0])",
        "key=lambda item: (-item[1], item[0]))",
        "`ranking()` sorts by name: sort by score descending, then by name.",
        "ranking() puts the best score first, ties by name.",
    ),
    Fix(
        "missing-validation",
        "bank",
        "bank.py",
        "    def withdraw(self, amount):\n        self.balance -= amount\n",
        "    def withdraw(self, amount):\n        if amount <= 0:\n"
        '            raise ValueError("a withdrawal must be positive")\n'
        "        self.balance -= amount\n",
        "`withdraw()` checks nothing: refuse amounts that are not positive, like deposit().",
        "withdraw() raises ValueError for amounts that are not positive.",
    ),
]


def turns(fix: Fix) -> dict[str, list[Turn]]:
    return {
        "planner": [
            tool(EDITOR, command="view", path=fix.file),
            text(
                reply(
                    "ready", "The cause is local to one function.", plan=fix.plan, files=[fix.file]
                )
            ),
        ],
        "developer": [
            tool(EDITOR, command="str_replace", path=fix.file, old_str=fix.old, new_str=fix.new),
            bash(f"{TESTS} 2>&1 | tail -n 3"),
            text(reply("done", "The tests pass.", summary=fix.summary, files_changed=[fix.file])),
        ],
        "reviewer": [
            bash(f"cat {fix.file}"),
            text(reply("approved", "The change does what the plan says.", summary=fix.summary)),
        ],
        "tester": [
            bash(f"{TESTS} 2>&1 | tail -n 3"),
            text(
                reply(
                    "passed",
                    "The suite passes.",
                    test_command=TESTS,
                    test_output_summary="the project's tests: OK",
                )
            ),
        ],
    }


class Script:
    """Each role's turns, case after case (the eval runs one case at a time)."""

    def __init__(self) -> None:
        self.turns: dict[str, deque[Turn]] = {}
        for fix in FIXES:
            for role, mine in turns(fix).items():
                self.turns.setdefault(role, deque()).extend(mine)

    def __call__(self, body: Body) -> FakeResponse:
        queue = self.turns.get(role_of(body))
        if not queue:
            return FakeResponse.error(400, f"no turn left for role {role_of(body)!r}")
        turn = queue.popleft()
        return turn(body) if callable(turn) else turn


def changed_files(workspace: Path, source: Path, hidden: Path) -> list[Path]:
    """The files a run left different from its repository (not the hidden tests it was given)."""
    out = []
    for path in sorted(workspace.rglob("*")):
        rel = path.relative_to(workspace)
        if not path.is_file() or "__pycache__" in rel.parts or (hidden / rel).exists():
            continue
        if not (source / rel).is_file() or not filecmp.cmp(path, source / rel, shallow=False):
            out.append(rel)
    return out


def record(out: Path = RECORDED) -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(Script()) as server:
        folder = Path(tmp) / "eval"
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "sk-test-not-a-real-key",
        }
        env.pop("ORCHESTRATOR_MODEL", None)
        run = subprocess.run(
            [sys.executable, "-m", "orchestrator", "eval", str(SUITE_DIR / "suite.yaml")]
            + ["--concurrency", "1", "--json", "--out", str(folder)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        records = [json.loads(line) for line in run.stdout.splitlines() if '"key"' in line]
        if len(records) != len(FIXES):
            raise SystemExit(f"the eval did not judge every case:\n{run.stdout}\n{run.stderr}")
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        for r in records:
            fix = next(f for f in FIXES if f.case == r["case"])
            shutil.copy(folder / r["recording"], out / f"{fix.case}.recording.yaml")
            measures = {k: r[k] for k in ("cost_usd", "tokens", "seconds")}
            (out / f"{fix.case}.result.json").write_text(json.dumps(measures) + "\n")
            workspace = folder / "runs" / r["variant"] / r["case"] / str(r["repeat"]) / "workspace"
            source = SUITE_DIR / "repos" / fix.repo
            for rel in changed_files(workspace, source, SUITE_DIR / "hidden" / fix.case):
                dest = out / fix.case / "files" / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(workspace / rel, dest)
        print(run.stdout)


if __name__ == "__main__":
    record(Path(sys.argv[1]) if len(sys.argv) > 1 else RECORDED)
