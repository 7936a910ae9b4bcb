"""A full solve-issue thread on the sample repository, scripted for the fake Messages API.

The script is what the model says; everything else is real: the `anthropic` client, the
orchestrator's tools (the editor edits the files, `bash` runs the tests and git), the worktree,
the commit. Each role's turns are played in order, chosen by the role named in the request's
system prompt, so the script does not depend on how many requests the actor makes in between.

The thread: the planner reads the code and plans; the developer reproduces the failing test,
fixes `median()` with `/ 2.0` and runs the tests; the reviewer reads the diff, proves with a
Decimal that the fix breaks the documented Decimal support, and rejects; the developer switches
to `/ 2` and adds a Decimal test; the reviewer approves; the tester runs the suite and the
issue's example, and reports the real output.

Used by tests/test_solve_issue_e2e.py, and to regenerate the demo recording:

    python -m tests.solve_issue_scenario            # writes examples/solve-issue.recording.yaml
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator.testing.fake_anthropic import FakeResponse

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "examples" / "sample-repo"
RECORDING = REPO / "examples" / "solve-issue.recording.yaml"
TEST_COMMAND = "python3 -m unittest"
EDITOR = "str_replace_based_edit_tool"

Body = dict[str, Any]
Turn = FakeResponse | Callable[[Body], FakeResponse]

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Sam Sample",
    "GIT_AUTHOR_EMAIL": "sam@example.invalid",
    "GIT_COMMITTER_NAME": "Sam Sample",
    "GIT_COMMITTER_EMAIL": "sam@example.invalid",
}


def sample_repo(dest: Path) -> Path:
    """A copy of examples/sample-repo at `dest`, as a git repository with one commit."""
    shutil.copytree(SAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, **GIT_ENV}
    for args in (
        ["init", "--quiet", "--initial-branch=main"],
        ["add", "--all"],
        ["commit", "--quiet", "-m", "statskit: mean and median"],
    ):
        subprocess.run(["git", *args], cwd=dest, env=env, check=True, capture_output=True)
    return dest


# --------------------------------------------------------------------------- reading requests


def role_of(body: Body) -> str:
    system = body.get("system")
    text = system[0]["text"] if isinstance(system, list) else str(system or "")
    found = re.search(r"^# Role: (\S+)", text, re.MULTILINE)
    return found.group(1) if found else "?"


def last_tool_result(body: Body) -> str:
    """The text of the last tool_result the client sent back."""
    for message in reversed(body.get("messages") or []):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in reversed(content):
            if block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    return "".join(b.get("text", "") for b in inner if isinstance(b, dict))
                return str(inner or "")
    return ""


def reply(status: str, body: str, **fields: Any) -> str:
    """A reply text: YAML frontmatter (strings as JSON, which YAML reads) and a body."""
    lines = ["---", f"$status: {status}"]
    for key, value in fields.items():
        if isinstance(value, str) and "\n" in value:
            block = "\n".join("  " + line if line else "" for line in value.splitlines())
            lines.append(f"{key}: |-\n{block}")
        else:
            lines.append(f"{key}: {json.dumps(value, ensure_ascii=False)}")
    return "\n".join([*lines, "---", body.strip(), ""])


def tool(name: str, **args: Any) -> FakeResponse:
    return FakeResponse.tool_use(name, args)


def bash(command: str) -> FakeResponse:
    return FakeResponse.tool_use("bash", {"command": command})


def text(value: str) -> FakeResponse:
    return FakeResponse.text(value)


# --------------------------------------------------------------------------- the script

OLD_MEDIAN = "    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n"
FIRST_FIX = (
    "    ordered = sorted(values)\n"
    "    middle = len(ordered) // 2\n"
    "    if len(ordered) % 2 == 0:\n"
    "        return (ordered[middle - 1] + ordered[middle]) / 2.0\n"
    "    return ordered[middle]\n"
)
DECIMAL_CHECK = (
    "python3 -c 'from decimal import Decimal; from statskit import median; "
    'print(median([Decimal("1"), Decimal("2")]))\' 2>&1 | tail -n 3'
)
DECIMAL_TEST = (
    "    def test_decimals(self) -> None:\n"
    '        values = [Decimal("1.5"), Decimal("0.5"), Decimal("2"), Decimal("1")]\n'
    '        self.assertEqual(median(values), Decimal("1.25"))\n'
    "\n"
    "    def test_input_is_left_unchanged(self) -> None:\n"
)

PLAN = """\
`median()` in statskit/stats.py always returns `ordered[len(ordered) // 2]`. For an even count
that is the upper of the two middle values, so `median([1, 2, 3, 4])` gives 3 instead of 2.5.

1. In `median()`, when `len(ordered)` is even, return the mean of `ordered[middle - 1]` and
   `ordered[middle]`; keep returning `ordered[middle]` for an odd count.
2. `MedianTest.test_even_count` already covers the reported case and must pass; keep the input
   unchanged (sort a copy, as now).
"""


def planner_turns() -> list[Turn]:
    return [
        tool("search_files", pattern=r"def median|median\(", path="."),
        tool(EDITOR, command="view", path="statskit/stats.py"),
        text(
            reply(
                "ready",
                "The bug is an off-by-one choice of the middle element for even-length input; "
                "the fix is local to `median()`, and the existing failing test covers it.",
                plan=PLAN,
                files=["statskit/stats.py"],
            )
        ),
    ]


def developer_turns() -> list[Turn]:
    return [
        # Round 1: reproduce, fix, test.
        tool(EDITOR, command="view", path="statskit/stats.py"),
        bash(f"{TEST_COMMAND} 2>&1 | tail -n 12"),
        tool(
            EDITOR,
            command="str_replace",
            path="statskit/stats.py",
            old_str=OLD_MEDIAN,
            new_str=FIRST_FIX,
        ),
        bash(f"{TEST_COMMAND} 2>&1 | tail -n 3"),
        text(
            reply(
                "done",
                "Reproduced the failure first: `test_even_count` got 3 instead of 2.5. "
                "All 7 tests pass after the change.",
                summary="median() now returns the mean of the two middle values when the count "
                "is even, and the middle value as before when it is odd.",
                files_changed=["statskit/stats.py"],
            )
        ),
        # Round 2: the reviewer's comments.
        tool(
            EDITOR,
            command="str_replace",
            path="statskit/stats.py",
            old_str="ordered[middle]) / 2.0",
            new_str="ordered[middle]) / 2",
        ),
        tool(
            EDITOR,
            command="str_replace",
            path="tests/test_stats.py",
            old_str="import unittest\nfrom fractions import Fraction\n",
            new_str="import unittest\nfrom decimal import Decimal\nfrom fractions import Fraction\n",
        ),
        tool(
            EDITOR,
            command="str_replace",
            path="tests/test_stats.py",
            old_str="    def test_input_is_left_unchanged(self) -> None:\n",
            new_str=DECIMAL_TEST,
        ),
        bash(f"{TEST_COMMAND} 2>&1 | tail -n 3"),
        text(
            reply(
                "done",
                "Both review comments are addressed; the new test fails with the old `/ 2.0`.",
                summary="median() averages the two middle values with `/ 2`, so Decimal and "
                "Fraction input keep their type; a new test covers an even count of Decimals.",
                files_changed=["statskit/stats.py", "tests/test_stats.py"],
            )
        ),
    ]


def reviewer_turns() -> list[Turn]:
    return [
        # Round 1: read the diff, check the documented Decimal support, reject.
        bash("git status --short && git diff"),
        bash(DECIMAL_CHECK),
        lambda body: text(
            reply(
                "rejected",
                "Checked by running the issue's case with Decimals:\n\n```\n"
                + last_tool_result(body).strip()
                + "\n```",
                comments=(
                    "1. statskit/stats.py, median(): `/ 2.0` mixes a float into the arithmetic. "
                    "The module docstring promises Decimal support and that a Decimal stays a "
                    "Decimal, but `median([Decimal('1'), Decimal('2')])` now raises TypeError "
                    "(Decimal + float). Divide by the int `2` instead, which works for int, "
                    "float, Fraction and Decimal.\n"
                    "2. tests/test_stats.py: add a test with an even number of Decimal values, "
                    "so this cannot come back."
                ),
            )
        ),
        # Round 2: both comments addressed.
        bash("git diff"),
        text(
            reply(
                "approved",
                "Both earlier comments are addressed. No unrelated changes.",
                summary="The even-count branch averages with `/ 2`, correct for int, float, "
                "Fraction and Decimal; the new Decimal test covers the case I raised.",
            )
        ),
    ]


def tester_turns() -> list[Turn]:
    seen: dict[str, str] = {}

    def after_suite(body: Body) -> FakeResponse:
        seen["suite"] = last_tool_result(body)
        return bash("python3 -c 'from statskit import median; print(median([1, 2, 3, 4]))'")

    def verdict(body: Body) -> FakeResponse:
        suite, example = seen["suite"], last_tool_result(body).strip()
        ran = re.search(r"Ran \d+ tests?", suite)
        ok = ran is not None and re.search(r"^OK", suite, re.MULTILINE) and example == "2.5"
        if not ok:
            return text(reply("failed", "See failures.", test_command=TEST_COMMAND, failures=suite))
        return text(
            reply(
                "passed",
                "Suite output (tail):\n\n```\n" + suite.strip() + "\n```",
                test_command=TEST_COMMAND,
                test_output_summary=f"{ran.group(0) if ran else ''}: OK; the issue's example "
                f"median([1, 2, 3, 4]) now returns {example}",
            )
        )

    return [bash(f"{TEST_COMMAND} -v 2>&1 | tail -n 14"), after_suite, verdict]


class Script:
    """The fake server's handler: each role's turns, in order; records what was asked."""

    def __init__(self) -> None:
        self.turns: dict[str, deque[Turn]] = {
            "planner": deque(planner_turns()),
            "developer": deque(developer_turns()),
            "reviewer": deque(reviewer_turns()),
            "tester": deque(tester_turns()),
        }
        self.tool_results: dict[str, list[str]] = {}

    def __call__(self, body: Body) -> FakeResponse:
        role = role_of(body)
        if body.get("messages") and body["messages"][-1].get("role") == "user":
            result = last_tool_result({"messages": body["messages"][-1:]})
            if result:
                self.tool_results.setdefault(role, []).append(result)
        queue = self.turns.get(role)
        if not queue:
            return FakeResponse.error(400, f"the script has no turn left for role {role!r}")
        turn = queue.popleft()
        return turn(body) if callable(turn) else turn

    @property
    def finished(self) -> bool:
        return not any(self.turns.values())


# --------------------------------------------------------------------------- the recording


def write_recording(out: Path = RECORDING) -> None:
    """Run the scenario through the real CLI against the fake server; export the thread."""
    import tempfile

    from orchestrator.testing.fake_anthropic import FakeAnthropic

    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(Script()) as server:
        root = Path(tmp)
        repo = sample_repo(root / "statskit")
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "sk-test-not-a-real-key",
            "ORCHESTRATOR_HOME": str(root / "store"),
        }
        env.pop("ORCHESTRATOR_MODEL", None)
        cli = [sys.executable, "-m", "orchestrator"]
        run = subprocess.run(
            [*cli, "run", "solve-issue", "--json", "-i", "issue=@ISSUE.md"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        result = json.loads(run.stdout.strip().splitlines()[-1])
        if result["state"] != "completed":
            raise SystemExit(f"the scenario did not complete: {result}\n{run.stderr}")
        subprocess.run(
            [*cli, "threads", "export", result["thread"], "-o", str(out)],
            cwd=repo,
            env=env,
            check=True,
        )


if __name__ == "__main__":
    write_recording(Path(sys.argv[1]) if len(sys.argv) > 1 else RECORDING)
