"""The real-world graphs in ../shared/corpus/uwf: each loads, the clean ones lint clean, and the
linter finds exactly the real defects of the others. Also the graph file JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from orchestrator.cli import cli
from orchestrator.definition.loader import load_graph
from orchestrator.definition.schema import graph_schema
from orchestrator.linter import lint

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "uwf"
REPO = Path(__file__).resolve().parents[1]
SCHEMA_FILE = REPO / "docs" / "graph.schema.json"

GRAPHS = [
    "examples/analyze-topic.yaml",
    "examples/debate.yaml",
    "examples/solve-issue.yaml",
    "dogfood/e2e-walkthrough.yaml",
    "dogfood/solve-issue.yaml",
    "workflows/normalize-bun-monorepo.yaml",
]
CLEAN = GRAPHS[:4]

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")


@needs_corpus
def test_the_corpus_holds_the_six_graphs() -> None:
    assert sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.yaml")) == sorted(GRAPHS)


@needs_corpus
@pytest.mark.parametrize("name", GRAPHS)
def test_each_graph_loads(name: str) -> None:
    graph = load_graph(str(CORPUS / name))
    assert graph.name == Path(name).stem
    assert graph.roles


@needs_corpus
@pytest.mark.parametrize("name", CLEAN)
def test_clean_graphs_lint_clean(name: str) -> None:
    assert lint(load_graph(str(CORPUS / name))) == []


def _found(name: str) -> set[tuple[str, int, str]]:
    """(code, line, the variable) of each problem, for comparison with a hand-made list."""
    problems = lint(load_graph(str(CORPUS / name)))
    return {(p.code, p.line, p.message.split("'")[1]) for p in problems}


@needs_corpus
def test_dogfood_solve_issue_uses_optional_fields_outside_sections() -> None:
    # Checked by hand: repoRemote is optional in developer.done, reviewer.*, tester.* and
    # committer.hook_failed; worktree is optional in tester.fix_code and committer.hook_failed.
    # A reply without them renders "Repo remote: ." to the next role. Nothing else is wrong.
    assert _found("dogfood/solve-issue.yaml") == {
        ("optional-var", 234, "repoRemote"),
        ("optional-var", 237, "repoRemote"),
        ("optional-var", 238, "repoRemote"),
        ("optional-var", 240, "worktree"),
        ("optional-var", 240, "repoRemote"),
        ("optional-var", 241, "repoRemote"),
        ("optional-var", 242, "repoRemote"),
        ("optional-var", 244, "worktree"),
        ("optional-var", 244, "repoRemote"),
    }


@needs_corpus
def test_normalize_bun_monorepo_start_prompt_uses_a_variable_nothing_provides() -> None:
    problems = lint(load_graph(str(CORPUS / "workflows/normalize-bun-monorepo.yaml")))
    errors = [p for p in problems if p.severity == "error"]
    (error,) = errors
    assert (error.code, error.line, error.column) == ("template-var", 26, 58)
    assert "repoPath" in error.message and "$START" in error.message
    assert "$inputs.repoPath" in error.hint


@needs_corpus
def test_normalize_bun_monorepo_every_field_is_optional() -> None:
    # No role requires a field, so every {{{repoPath}}}, {{{reason}}} and {{{commitHash}}}
    # after a role may render empty. The "skipped" edges use no variable and are fine.
    warnings = {
        f for f in _found("workflows/normalize-bun-monorepo.yaml") if f[0] != "template-var"
    }
    roles = ["ci", "biome", "release", "testing", "workspace", "guardrails", "typescript"]
    roles += ["package-metadata", "solve-issue-workflow"]
    expected_lines = {6, 12, 16, 22, 30, 36, 40, 46, 60, 66, 70, 76, 80, 86, 90, 96, 100, 106}
    assert {f[0] for f in warnings} == {"optional-var"}
    assert {f[1] for f in warnings} == expected_lines | {50, 53}
    assert len(warnings) == 2 * len(roles) + len(roles) + 2  # done: 1, failed: 2, committer: 2


# --------------------------------------------------------------------------- JSON Schema


def test_the_committed_schema_equals_what_orchestrator_schema_prints() -> None:
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0
    assert SCHEMA_FILE.read_text(encoding="utf-8") == result.output, (
        "docs/graph.schema.json is stale: run `orchestrator schema > docs/graph.schema.json`"
    )
    assert json.loads(result.output) == graph_schema()


def test_the_schema_is_a_valid_json_schema() -> None:
    Draft202012Validator.check_schema(graph_schema())


@needs_corpus
@pytest.mark.parametrize("name", GRAPHS)
def test_each_corpus_graph_validates_against_the_schema(name: str) -> None:
    data = yaml.safe_load((CORPUS / name).read_text(encoding="utf-8"))
    errors = [e.message for e in Draft202012Validator(graph_schema()).iter_errors(data)]
    assert errors == []


def test_the_schema_allows_x_keys_and_extends_but_not_other_unknown_keys() -> None:
    validator = Draft202012Validator(graph_schema())
    base = {"name": "g", "description": "d", "graph": {}}
    assert not list(
        validator.iter_errors({**base, "x-anchors": [1], "roles": {"a": {"extends": "b"}}})
    )
    errors = list(validator.iter_errors({**base, "y-key": 1, "roles": {"a": {"goal": "g"}}}))
    messages = " ".join(e.message for e in errors)
    assert "y-key" in messages and "'description' is a required property" in messages
