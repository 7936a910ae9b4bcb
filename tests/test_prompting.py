"""What a role is shown: system prompt, visit message, repair message (docs/format.md section 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from orchestrator.actors.base import Attempt, HistoryItem
from orchestrator.actors.prompting import (
    deliverable_format,
    render_history,
    repair_message,
    system_prompt,
    visit_message,
)
from tests.anthropic_fixtures import make_request, make_role

FLAT_SCHEMA = {
    "type": "object",
    "properties": {
        "$status": {"enum": ["approved", "changes_requested"]},
        "notes": {"type": "array", "items": {"type": "string"}},
        "score": {"type": "integer", "description": "1 to 5"},
        "zeta": {"type": "string"},
        "alpha": {"type": "string"},
    },
    "required": ["$status", "zeta", "alpha", "score"],
}


def frontmatter_blocks(text: str) -> list[dict[str, object]]:
    """Parse every ```markdown example in a prompt as frontmatter YAML."""
    blocks = []
    for chunk in text.split("```markdown\n")[1:]:
        example = chunk.split("```", 1)[0]
        head = example.split("---\n")[1]
        blocks.append(yaml.safe_load(head))
    return blocks


# ---------------------------------------------------------------------- system prompt


def test_system_prompt_holds_the_role_and_the_format() -> None:
    role = make_role(
        capabilities=["python", "debugging"],
        procedure="1. Read the issue.\n2. Write the plan.",
        output="Use `insufficient_info` when the issue is unclear.",
    )
    text = system_prompt(role, "planner")
    assert text.startswith("# Role: planner\n\nYou are a careful planner.")
    for part in ("- python", "- debugging", "1. Read the issue.", "Use `insufficient_info`"):
        assert part in text
    assert "MUST begin with a YAML frontmatter block" in text
    assert "Choose exactly one of: `ready`, `insufficient_info`." in text
    assert "no tools" in text
    examples = frontmatter_blocks(text)
    assert examples == [
        {"$status": "ready", "plan": "<string>", "risk": "low"},
        {"$status": "insufficient_info", "question": "<string>"},
        {"$status": "$SUSPEND", "reason": "<what blocks you and what you need>"},
    ]
    assert "- `plan` (string): The plan, step by step" in text
    assert '- `risk` (one of "low", "medium", "high")' in text


def test_field_order_follows_the_schema_not_sets() -> None:
    text = deliverable_format(make_role(frontmatter=FLAT_SCHEMA))
    example = text.split("```markdown\n")[1]
    # required fields first, each group in the order of `properties`
    assert example.index("score") < example.index("zeta") < example.index("alpha")
    assert example.index("alpha") < example.index("notes")
    assert "- `notes` (array of string)" in text
    assert "- `score` (integer): 1 to 5" in text


def test_system_prompt_is_stable_across_processes(tmp_path: Path) -> None:
    """Byte-identical for any hash seed: no set or dict-order surprises break the cache."""
    script = (
        "import json, sys\n"
        "from orchestrator.definition.models import Role\n"
        "from orchestrator.actors.prompting import system_prompt\n"
        "role = Role(**json.loads(sys.argv[1]))\n"
        "sys.stdout.write(system_prompt(role, 'reviewer'))\n"
    )
    spec = json.dumps(
        {"description": "d", "goal": "You review.", "frontmatter": FLAT_SCHEMA, "tools": ["edit"]}
    )
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script, spec],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    role = make_role(frontmatter=FLAT_SCHEMA, tools=("edit",))
    assert system_prompt(role, "reviewer") == system_prompt(role, "reviewer")


def test_system_prompt_mentions_tools() -> None:
    read_only = system_prompt(make_role(tools=("read",)), "r")
    assert "view files" in read_only and "may read files but not change them" in read_only
    assert "bash" not in read_only
    full = system_prompt(make_role(tools=("read", "edit", "shell")), "r")
    assert "create files and edit them" in full and "`bash`" in full
    assert "`cd` and `export` do not carry over" in full


def test_single_exit_role_needs_no_status() -> None:
    role = make_role(frontmatter={"type": "object", "properties": {"summary": {"type": "string"}}})
    text = system_prompt(role, "writer")
    assert "no `$status` is needed" in text
    assert frontmatter_blocks(text)[0] == {"summary": "<string>"}
    assert "$SUSPEND" in text


def test_variant_description_is_shown() -> None:
    schema = {
        "oneOf": [
            {
                "properties": {"$status": {"const": "done", "description": "All tests pass."}},
                "required": ["$status"],
            }
        ]
    }
    text = deliverable_format(make_role(frontmatter=schema))
    assert "### `$status: done`\nAll tests pass." in text
    assert "No other fields are required." in text


# ---------------------------------------------------------------------- visit message


def test_visit_message_for_the_implicit_task() -> None:
    text = visit_message(make_request(inputs={"task": "  Fix the parser.  "}))
    assert text.startswith("# Task\n\nFix the parser.\n\n# Your instruction")
    assert text.rstrip().endswith("# Your instruction\n\nPlan a fix for the crash.")
    assert "Since you last spoke" not in text and "Workspace" not in text


def test_visit_message_renders_declared_inputs_readably() -> None:
    text = visit_message(
        make_request(inputs={"repo": "acme/app", "issue": "It crashes.", "labels": ["bug", "p1"]})
    )
    task = text.split("# Since")[0].split("# Your instruction")[0]
    assert task.index("## issue") < task.index("## labels") < task.index("## repo")
    assert "## issue\n\nIt crashes." in task
    assert "```yaml\n- bug\n- p1\n```" in task


def test_visit_message_history_and_instruction_last(tmp_path: Path) -> None:
    history = (
        HistoryItem(1, "triage", "ok", {"$status": "ok", "summary": "crash in parse()"}),
        HistoryItem(2, "developer", "done", {"files": ["a.py"], "tests": 3}, body="long body"),
    )
    request = make_request(
        make_role(tools=("read",)), history=history, workspace=tmp_path, prompt="Review it."
    )
    text = visit_message(request)
    assert "## Step 1: triage → ok\n\n```yaml\nsummary: crash in parse()\n```" in text
    assert "## Step 2: developer → done\n\n```yaml\nfiles:\n- a.py\ntests: 3\n```" in text
    assert f"`{tmp_path.resolve()}`" in text
    assert text.index("# Since you last spoke") < text.index("# Workspace")
    assert text.rstrip().endswith("# Your instruction\n\nReview it.")


def test_history_budget_keeps_the_most_recent_and_says_what_was_omitted() -> None:
    history = tuple(
        HistoryItem(i, "worker", "progress", {"note": f"step {i} " + "x" * 500})
        for i in range(1, 41)
    )
    text = render_history(history, budget=3000)
    assert len(text) < 3000 + 200
    assert text.startswith("(")
    assert "earlier steps omitted: steps 1–" in text
    assert "## Step 40:" in text and "## Step 1:" not in text
    kept = [
        int(line.split()[2].rstrip(":")) for line in text.splitlines() if line.startswith("## Step")
    ]
    assert kept == sorted(kept) and kept[-1] == 40
    omitted = int(text[1:].split()[0])
    assert omitted + len(kept) == 40


def test_history_truncates_long_values() -> None:
    item = HistoryItem(3, "dev", "done", {"diff": "y" * 10_000, "ok": True})
    text = render_history((item,))
    assert "more characters cut]" in text and "ok: true" in text
    assert len(text) < 3000


def test_a_single_huge_step_is_cut_to_the_budget() -> None:
    item = HistoryItem(1, "dev", "done", {f"k{i}": "z" * 1500 for i in range(20)})
    text = render_history((item,), budget=2000)
    assert len(text) <= 2000 and "step cut to fit" in text


# ---------------------------------------------------------------------- repair message


def test_repair_message_lists_errors_and_allowed_statuses() -> None:
    text = repair_message(["ready: 'plan' is a required property", "no frontmatter"], make_role())
    assert text.startswith("Your reply could not be accepted:\n- ready: 'plan' is a required")
    assert "- no frontmatter" in text
    assert "- `ready`: required fields: `plan`; optional: `risk`" in text
    assert "- `insufficient_info`: required fields: `question`" in text
    assert "`$SUSPEND`" in text
    assert "Write the whole reply again" in text and "begin with the frontmatter" in text


def test_repair_message_for_a_single_exit_role() -> None:
    role = make_role(frontmatter={"type": "object", "properties": {"summary": {"type": "string"}}})
    text = repair_message(["summary: not a string"], role)
    assert "No `$status` is needed" in text and "`summary`" in text


def test_attempt_errors_are_plain_strings() -> None:
    attempt = Attempt(reply="oops", errors=("e1", "e2"))
    assert repair_message(attempt.errors, make_role()).count("\n- e") == 2
