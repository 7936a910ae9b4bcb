"""`validate` on graphs built from agent files (issue 22, items 8 and 9): every problem shown,
agents found by their frontmatter `name:` as Claude Code finds them, unknown models warned."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli
from orchestrator.linter import lint_graph_file

STATUS = "{type: object, properties: {notes: {type: string}}, required: [notes]}"


def graph_text(extends: str) -> str:
    return textwrap.dedent(
        f"""\
        name: review
        description: one review
        roles:
          reviewer:
            extends: {extends}
            frontmatter: {STATUS}
        graph:
          $START:
            _: {{role: reviewer, prompt: "Review {{{{{{$inputs.task}}}}}}"}}
          reviewer:
            _: {{role: $END, prompt: "{{{{{{notes}}}}}}"}}
        """
    )


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "graphs").mkdir()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(root)
    return root


def agent(repo: Path, stem: str, front: str, body: str = "You review.\n") -> Path:
    path = repo / ".claude" / "agents" / f"{stem}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}---\n{body}")
    return path


def validate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["validate", *args])
    return result.exit_code, result.output


# --------------------------------------------------------------------------- 8. every problem


def test_every_unmapped_tool_of_a_line_is_shown(repo: Path) -> None:
    agent(repo, "rev", "description: reviews\ntools: Read, WebFetch, Task, TodoWrite\n")
    (repo / "graphs" / "review.yaml").write_text(graph_text("claude:rev"))
    code, out = validate("graphs/review.yaml")
    assert code == 0, out
    for tool in ("WebFetch", "Task", "TodoWrite"):
        assert f"tool '{tool}'" in out, out
    assert "0 errors, 3 warnings in 1 file" in out


# --------------------------------------------------------------------------- 9. agent names


def test_an_agent_is_found_by_its_frontmatter_name(repo: Path) -> None:
    agent(repo, "code-review-agent", "name: code-reviewer\ndescription: reviews\ntools: Read\n")
    path = repo / "graphs" / "review.yaml"
    path.write_text(graph_text("claude:code-reviewer"))
    assert lint_graph_file(path) == []
    path.write_text(graph_text("claude:code-review-agent"))  # the stem still works
    assert lint_graph_file(path) == []


def test_a_frontmatter_name_comes_before_another_file_s_stem(repo: Path) -> None:
    # Claude Code keys agents by `name:`: the file named x.md whose name is `other` is `other`
    agent(repo, "x", "name: other\ndescription: the stem's file\ntools: Read\n", "Stem.\n")
    agent(repo, "y", "name: x\ndescription: the named one\ntools: Read\n", "Named.\n")
    path = repo / "graphs" / "review.yaml"
    path.write_text(graph_text("claude:x"))
    from orchestrator.definition.loader import load_graph  # the loaded role, for its goal

    assert load_graph(path).roles["reviewer"].goal == "Named.\n"


def test_an_unknown_agent_name_is_still_unknown(repo: Path) -> None:
    agent(repo, "rev", "name: reviewer\ndescription: reviews\n")
    path = repo / "graphs" / "review.yaml"
    path.write_text(graph_text("claude:nobody"))
    assert [p.code for p in lint_graph_file(path)] == ["unknown-extends"]


def test_an_unknown_model_in_an_agent_file_is_a_warning_at_its_line(repo: Path) -> None:
    agent(repo, "rev", "description: reviews\ntools: Read\nmodel: fable\n")
    path = repo / "graphs" / "review.yaml"
    path.write_text(graph_text("claude:rev"))
    (problem,) = lint_graph_file(path)
    assert (problem.code, problem.severity, problem.line) == ("unknown-model", "warning", 4)
    assert "fable" in problem.message


def test_known_models_in_agent_files_are_clean(repo: Path) -> None:
    path = repo / "graphs" / "review.yaml"
    path.write_text(graph_text("claude:rev"))
    for model in ("sonnet", "opus", "haiku", "inherit", "claude-sonnet-4-20250514"):
        agent(repo, "rev", f"description: reviews\ntools: Read\nmodel: {model}\n")
        assert lint_graph_file(path) == [], model
