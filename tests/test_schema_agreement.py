"""`validate` and the editor schema (docs/graph.schema.json) agree on structure (issue 22, item 6).

Every graph the test suite has (tests/lint_cases/, the graphs written into test modules, the
bundled graphs/, the corpus) and a set of graphs broken one way each go through both
`validate` and an independent JSON Schema validator (jsonschema, Draft 2020-12): a file with a
structural problem for one has one for the other, and a file clean for one is clean for the
other. What no schema can express is excluded by code, and listed (with why) in SEMANTIC.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from orchestrator.definition.schema import graph_schema
from orchestrator.definition.yamlpos import YamlSyntaxError, load_yaml
from orchestrator.linter import CODES, lint_graph_file

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "uwf"  # shared/ sits beside the checkout

# Problems of the file's structure: keys, types, required fields. The schema must see each.
STRUCTURAL = frozenset({"unknown-key", "missing-field", "bad-type", "unknown-tool"})
# What a JSON Schema of one file cannot express, with why; every other code is STRUCTURAL.
SEMANTIC = {
    "yaml-syntax": "not YAML: neither side gets data",
    "yaml-limit": "a loading limit, before any data",
    "duplicate-key": "YAML parsers keep one of the values: the schema sees one key",
    "unknown-extends": "a library role or agent file in another file",
    "unmapped-tool": "an agent file's tool name: another file",
    "unmapped-model": "an agent file's model: another file",
    "unknown-model": "an agent file's model: another file",
    "unknown-provider": "whether a PROVIDER:MODEL names a provider of the models file",
    "no-tool-calls": "whether the models file says a role's model takes tool calls",
    "unreadable": "a file that cannot be read",
    "unknown-python": "whether a Python module:function imports",
    "unknown-graph": "whether a child graph file exists",
    "graph-cycle": "child graphs across files",
    "name-mismatch": "the file's stem",
    "reserved-name": "role names that are reserved words (a schema could, at the cost of noise)",
    "bad-status-schema": "the contract a frontmatter schema makes",
    "invalid-json-schema": "the frontmatter is checked against the metaschema, not this schema",
    "external-ref": "where a $ref points",
    "unknown-schema-keyword": "keys inside a frontmatter schema",
    "misspelt-schema-keyword": "keys inside a frontmatter schema",
    "start-edge": "the graph's shape",
    "end-has-edges": "the graph's shape",
    "unknown-role": "names across roles: and graph:",
    "unused-role": "the graph's shape",
    "unreachable-role": "the graph's shape",
    "no-path-to-end": "the graph's shape",
    "missing-status-edge": "statuses from the frontmatter schemas",
    "unknown-status-edge": "statuses from the frontmatter schemas",
    "guard-syntax": "CEL",
    "guard-var": "CEL and the contracts",
    "guard-type": "CEL and the contracts",
    "guard-cost": "the nesting of a CEL expression's comprehensions",
    "guard-no-default": "the order of guarded edges (a schema could; the linter says why)",
    "misplaced-ending": "whether an edge leads to $END",
    "branch-has-edges": "names across roles: and graph:",
    "for-each-not-list": "the contracts",
    "inputs-not-subgraph": "names across roles: and graph:",
    "missing-input": "a child graph's inputs",
    "unknown-input": "a child graph's inputs",
    "template-syntax": "Mustache",
    "template-var": "Mustache and the contracts",
    "branch-status": "Mustache",
    "optional-var": "Mustache and the contracts",
    "html-escape": "Mustache",
    "empty-prompt": "a prompt of only spaces (the schema checks that there is one)",
    "internal-error": "a bug",
}

BASE = """\
name: g
description: test
limits: { max_steps: 5 }
roles:
  writer:
    description: writes
    goal: You write.
    temperature: 0.5
    sandbox: { network: false }
    requires: [{ tool: git }]
    frontmatter: { type: object, properties: { text: { type: string } }, required: [text] }
graph:
  $START:
    _: { role: writer, prompt: "Write {{{$inputs.task}}}" }
  writer:
    _: { role: $END, prompt: "Done" }
"""

# Each breaks the base one way; both sides must refuse it (the seams of issue 22 first).
BROKEN = {
    "edge without prompt": ('_: { role: $END, prompt: "Done" }', "_: { role: $END }"),
    "role without goal": ("    goal: You write.\n", ""),
    "role without frontmatter": (
        "    frontmatter: { type: object, properties: { text: { type: string } }, "
        "required: [text] }\n",
        "",
    ),
    "requirement of two kinds": ("[{ tool: git }]", "[{ tool: git, env: HOME }]"),
    "requirement of no kind": ("[{ tool: git }]", "[{ message: hi }]"),
    "max_steps as text": ("max_steps: 5", 'max_steps: "5"'),
    "max_steps as a boolean": ("max_steps: 5", "max_steps: true"),
    "temperature as text": ("temperature: 0.5", 'temperature: "0.5"'),
    "network as text": ("network: false", 'network: "true"'),
    "network as yes": ("network: false", "network: yes"),
    "network as off": ("network: false", "network: off"),
    "an unknown key": ("    temperature: 0.5\n", "    temprature: 0.5\n"),
    "a join without a fan-out": (
        '_: { role: $END, prompt: "Done" }',
        '_: { role: $END, prompt: "Done", join: { role: $END, prompt: "x" } }',
    ),
    "a for_each without a join": (
        '_: { role: $END, prompt: "Done" }',
        '_: { role: writer, prompt: "Done", for_each: text }',
    ),
    "as without for_each": (
        '_: { role: $END, prompt: "Done" }',
        '_: { role: $END, prompt: "Done", as: x }',
    ),
    "a parallel edge with a role": (
        '_: { role: $END, prompt: "Done" }',
        '_: { role: $END, parallel: [{ role: writer, prompt: "a" }], join: { role: $END, '
        'prompt: "x" } }',
    ),
    "a branch without prompt": (
        '_: { role: $END, prompt: "Done" }',
        '_: { parallel: [{ role: writer }], join: { role: $END, prompt: "x" } }',
    ),
}


def test_every_code_is_structural_or_listed_as_semantic() -> None:
    assert set(CODES) == STRUCTURAL | set(SEMANTIC)
    assert not STRUCTURAL & set(SEMANTIC)


def disagreement(path: Path) -> str | None:
    """What one side finds in the file's structure and the other does not, or None."""
    try:
        data, _ = load_yaml(path.read_text(encoding="utf-8"), str(path))
    except (YamlSyntaxError, UnicodeDecodeError):
        return None  # not YAML: nothing to compare
    schema_errors = [e.message for e in Draft202012Validator(graph_schema()).iter_errors(data)]
    problems = [p for p in lint_graph_file(path) if Path(p.file).resolve() == path.resolve()]
    assert not [p for p in problems if p.code == "internal-error"], problems
    structural = [p.format() for p in problems if p.code in STRUCTURAL]
    if bool(schema_errors) != bool(structural):
        return f"{path}: schema {schema_errors[:3]}; validate {structural[:3]}"
    return None


def fixture_files() -> list[Path]:
    files = sorted((ROOT / "tests" / "lint_cases").glob("*.yaml"))
    files += sorted((ROOT / "graphs").glob("*.yaml"))
    if CORPUS.is_dir():
        files += sorted(p for p in CORPUS.rglob("*.yaml") if "\ngraph:" in p.read_text("utf-8"))
    return files


def graphs_in_test_modules() -> dict[str, str]:
    """The graphs test modules write as files: module-level strings with roles: and graph:."""
    found: dict[str, str] = {}
    for module in sorted((ROOT / "tests").glob("*.py")):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
                and isinstance(node.targets[0], ast.Name)
            ):
                text = textwrap.dedent(node.value.value).lstrip("\n")
                if "\nroles:" in text and "\ngraph:" in text and text.startswith("name:"):
                    found[f"{module.stem}.{node.targets[0].id}"] = text
    return found


def test_the_fixtures_are_many() -> None:
    assert len(fixture_files()) >= 4
    assert len(graphs_in_test_modules()) >= 20


def test_validate_and_the_schema_agree_on_every_graph_file_of_the_suite() -> None:
    found = [d for path in fixture_files() if (d := disagreement(path)) is not None]
    assert found == []


def test_validate_and_the_schema_agree_on_the_graphs_of_the_test_modules(tmp_path: Path) -> None:
    found = []
    for name, text in graphs_in_test_modules().items():
        path = tmp_path / f"{name.replace('.', '-').replace('_', '-').lower()}.yaml"
        path.write_text(text, encoding="utf-8")
        if (d := disagreement(path)) is not None:
            found.append(f"{name}: {d}")
    assert found == []


def test_the_base_graph_is_clean_for_both(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(BASE, encoding="utf-8")
    assert lint_graph_file(path) == []
    data: Any = load_yaml(BASE)[0]
    assert list(Draft202012Validator(graph_schema()).iter_errors(data)) == []


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_both_refuse_a_graph_broken_one_way(tmp_path: Path, case: str) -> None:
    old, new = BROKEN[case]
    assert old in BASE, case
    path = tmp_path / "g.yaml"
    path.write_text(BASE.replace(old, new, 1), encoding="utf-8")
    data: Any = load_yaml(path.read_text())[0]
    assert list(Draft202012Validator(graph_schema()).iter_errors(data)) != [], "schema: " + case
    codes = {p.code for p in lint_graph_file(path)}
    assert codes & STRUCTURAL, f"validate: {case}: {codes}"
