"""Roles from Claude Code and OpenCode agent files (`extends: claude:NAME`, `opencode:NAME`).

The agent files are written exactly in the formats those tools document:
- Claude Code subagents (https://code.claude.com/docs/en/sub-agents): `.claude/agents/NAME.md`,
  YAML frontmatter with `name`, `description`, optional `tools` (a comma-separated string;
  a YAML list is also accepted) and `model` (`sonnet`, `opus`, `haiku`, a model id, or
  `inherit`); the body is the system prompt.
- OpenCode agents (https://opencode.ai/docs/agents/): `.opencode/agent/NAME.md`, frontmatter
  with `description`, `mode`, `model` (`provider/model-id`), `temperature` and `tools` as a map
  of tool names to booleans; the body is the prompt.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator import run_thread
from orchestrator.cli import cli
from orchestrator.definition.loader import load_graph
from orchestrator.definition.problems import GraphError
from orchestrator.linter import lint
from orchestrator.store.sqlite import SqliteStore
from tests.anthropic_fixtures import fake_server

CLAUDE_REVIEWER = """\
---
name: code-reviewer
description: Expert code review specialist. Use proactively after writing or modifying code.
tools: Read, Grep, Glob, Bash
model: inherit
---

You are a senior code reviewer ensuring high standards of code quality and security.

When invoked:
1. Run git diff to see recent changes
2. Focus on modified files
"""

CLAUDE_WRITER = """\
---
name: doc-writer
description: Writes API documentation and READMEs.
tools:
  - Read
  - Write
  - WebFetch
  - mcp__github__create_issue
model: haiku
---
You are a technical documentation specialist.
"""

OPENCODE_REVIEW = """\
---
description: Reviews code for best practices and potential issues
mode: subagent
model: anthropic/claude-sonnet-4-20250514
temperature: 0.1
tools:
  write: false
  edit: false
---

You are in code review mode. Focus on:

- Code quality and best practices
- Potential bugs and edge cases
"""

OPENCODE_OTHER_PROVIDER = """\
---
description: Plans the work
mode: primary
model: openai/gpt-5
tools:
  bash: true
  webfetch: true
---
You plan.
"""

STATUS = "{type: object, properties: {$status: {const: done}, notes: {type: string}}, required: [$status, notes]}"


def graph_text(extends: str, *, frontmatter: bool = True, extra: str = "") -> str:
    fm = f"\n    frontmatter: {STATUS}" if frontmatter else ""
    return textwrap.dedent(
        """\
        name: review
        description: one review
        defaults:
          model: opus
        roles:
          reviewer:
            extends: {extends}{fm}{extra}
        graph:
          $START:
            _: {{role: reviewer, prompt: "Review {{{{{{$inputs.task}}}}}}"}}
          reviewer:
            done: {{role: $END, prompt: "{{{{{{notes}}}}}}"}}
        """
    ).format(extends=extends, fm=fm, extra=extra)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with graphs in a subfolder; an empty home; the repository is the cwd."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "flows").mkdir()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(root)
    return root


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def load(repo: Path, extends: str, **kw: object) -> object:
    graph_file = write(repo / "flows" / "review.yaml", graph_text(extends, **kw))  # type: ignore[arg-type]
    return load_graph(graph_file)


def test_claude_comma_string_tools_and_model_inherit(repo: Path) -> None:
    write(repo / ".claude/agents/code-reviewer.md", CLAUDE_REVIEWER)
    graph = load(repo, "claude:code-reviewer")
    role = graph.roles["reviewer"]  # type: ignore[attr-defined]
    assert role.description.startswith("Expert code review specialist")
    assert role.goal.startswith("You are a senior code reviewer")
    assert "Run git diff" in role.goal
    assert role.tools == ["read", "shell"]  # Read, Grep, Glob -> read; Bash -> shell
    assert role.model is None  # inherit: the graph's default (opus) plays it
    assert lint(graph) == []  # type: ignore[arg-type]


def test_claude_list_tools_with_unmapped_ones_warned_at_their_lines(repo: Path) -> None:
    agent = write(repo / ".claude/agents/doc-writer.md", CLAUDE_WRITER)
    graph = load(repo, "claude:doc-writer")
    role = graph.roles["reviewer"]  # type: ignore[attr-defined]
    assert role.tools == ["read", "edit"]
    assert role.model == "haiku"
    warnings = [p for p in lint(graph) if p.code == "unmapped-tool"]  # type: ignore[arg-type]
    assert [(p.file, p.line, p.severity) for p in warnings] == [
        (str(agent.relative_to(repo)), 7, "warning"),
        (str(agent.relative_to(repo)), 8, "warning"),
    ]
    assert "WebFetch" in warnings[0].message and "mcp__github__create_issue" in warnings[1].message


def test_opencode_map_of_booleans_and_provider_model(repo: Path) -> None:
    write(repo / ".opencode/agent/review.md", OPENCODE_REVIEW)
    graph = load(repo, "opencode:review")
    role = graph.roles["reviewer"]  # type: ignore[attr-defined]
    # OpenCode turns every tool on unless the map turns it off: write and edit are off.
    assert role.tools == ["read", "shell"]
    assert role.model == "claude-sonnet-4-20250514"
    assert role.temperature == 0.1
    assert role.goal.startswith("You are in code review mode.")
    assert lint(graph) == []  # type: ignore[arg-type]


def test_opencode_other_provider_model_is_warned_and_the_default_used(repo: Path) -> None:
    agent = write(repo / ".opencode/agent/plan.md", OPENCODE_OTHER_PROVIDER)
    graph = load(repo, "opencode:plan")
    role = graph.roles["reviewer"]  # type: ignore[attr-defined]
    assert role.model is None
    assert role.tools == ["read", "edit", "shell"]
    found = {(p.code, p.line) for p in lint(graph)}  # type: ignore[arg-type]
    assert found == {("unmapped-model", 4), ("unmapped-tool", 7)}
    assert all(p.file == str(agent.relative_to(repo)) for p in lint(graph))  # type: ignore[arg-type]


def test_tools_left_out_means_every_tool_and_the_graph_role_overrides(repo: Path) -> None:
    write(repo / ".claude/agents/any.md", "---\nname: any\ndescription: Anything\n---\nDo it.\n")
    graph = load(repo, "claude:any")
    assert graph.roles["reviewer"].tools == ["read", "edit", "shell"]  # type: ignore[attr-defined]
    graph = load(repo, "claude:any", extra="\n    tools: [read]")
    assert graph.roles["reviewer"].tools == ["read"]  # type: ignore[attr-defined]


def test_missing_frontmatter_in_the_graph_role_is_reported_at_the_role(repo: Path) -> None:
    write(repo / ".claude/agents/code-reviewer.md", CLAUDE_REVIEWER)
    with pytest.raises(GraphError) as err:
        load(repo, "claude:code-reviewer", frontmatter=False)
    (problem,) = err.value.problems
    assert problem.code == "missing-field" and "'frontmatter'" in problem.message
    assert (problem.file, problem.line) == (str(repo / "flows" / "review.yaml"), 7)


def test_search_goes_up_to_the_repository_root_then_home(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nearest first: the graph's folder beats the repository root.
    write(repo / ".claude/agents/code-reviewer.md", CLAUDE_REVIEWER)
    write(
        repo / "flows/.claude/agents/code-reviewer.md",
        CLAUDE_REVIEWER.replace("senior code reviewer", "nearby reviewer"),
    )
    assert "nearby reviewer" in load(repo, "claude:code-reviewer").roles["reviewer"].goal  # type: ignore[attr-defined]
    # Above the repository's root is not looked at; the home folder is.
    write(tmp_path / ".claude/agents/outside.md", CLAUDE_REVIEWER)
    with pytest.raises(GraphError) as err:
        load(repo, "claude:outside")
    (problem,) = err.value.problems
    assert problem.code == "unknown-extends" and problem.line == 7
    assert str(repo / ".claude" / "agents") in problem.hint
    write(tmp_path / "home/.claude/agents/outside.md", CLAUDE_REVIEWER)
    assert load(repo, "claude:outside").roles["reviewer"].tools == ["read", "shell"]  # type: ignore[attr-defined]


def test_a_bad_field_in_the_agent_file_points_into_it(repo: Path) -> None:
    agent = write(
        repo / ".opencode/agent/hot.md",
        "---\ndescription: Too hot\ntemperature: 7\n---\nYou run hot.\n",
    )
    with pytest.raises(GraphError) as err:
        load(repo, "opencode:hot")
    (problem,) = err.value.problems
    assert (problem.file, problem.line, problem.code) == (
        str(agent.relative_to(repo)),
        3,
        "bad-type",
    )


def test_a_thread_whose_role_comes_from_an_agent_file(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's body is the system prompt the model gets; inherit plays the graph's model."""
    write(repo / ".claude/agents/code-reviewer.md", CLAUDE_REVIEWER)
    graph_file = write(repo / "flows" / "review.yaml", graph_text("claude:code-reviewer"))
    with fake_server(monkeypatch) as fake:
        fake.reply_text("---\n$status: done\nnotes: looks right\n---\nReviewed.")
        result = run_thread(
            graph_file,
            {"task": "the last change"},
            store=SqliteStore(tmp_path / "store"),
            workspace=repo,
            in_place=True,
        )
        (request,) = fake.message_requests
    assert result.state.value == "completed", result.reason
    system = json.dumps(request["system"])
    assert "senior code reviewer ensuring high standards" in system
    assert request["model"].startswith("claude-opus")
    assert "bash" in {t["name"] for t in request.get("tools", [])}  # Bash -> the shell set


def test_roles_command_lists_roles_actors_tools_and_files(repo: Path) -> None:
    write(repo / ".claude/agents/code-reviewer.md", CLAUDE_REVIEWER)
    write(repo / "flows" / "review.yaml", graph_text("claude:code-reviewer"))
    runner = CliRunner()
    done = runner.invoke(cli, ["roles", "flows/review.yaml"])
    assert done.exit_code == 0, done.output
    assert "reviewer  Expert code review specialist" in done.output
    assert "played by  anthropic" in done.output
    assert "tools      read, shell" in done.output
    assert "from       flows/review.yaml <- .claude/agents/code-reviewer.md" in done.output
    done = runner.invoke(cli, ["roles", "flows/review.yaml", "--format", "json"])
    (entry,) = json.loads(done.output)["roles"]
    assert entry["files"] == ["flows/review.yaml", ".claude/agents/code-reviewer.md"]
    assert entry["tools"] == ["read", "shell"] and entry["actor"] == "anthropic"
    # Without a graph: the library roles and the agent files a graph here could extend.
    write(repo / ".opencode/agent/review.md", OPENCODE_REVIEW)
    listed = json.loads(runner.invoke(cli, ["roles", "--format", "json"]).output)["roles"]
    names = {e["name"]: e for e in listed}
    assert {"claude:code-reviewer", "opencode:review", "planner"} <= set(names)
    assert names["opencode:review"]["model"] == "claude-sonnet-4-20250514"
    # A graph that cannot be loaded: its problems, exit 2.
    bad = runner.invoke(cli, ["roles", "flows/missing.yaml"])
    assert bad.exit_code == 2 and "missing.yaml" in bad.output
