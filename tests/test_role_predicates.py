"""Who plays a role, asked by name: `Role.kind` and its predicates (definition/actor_specs.py),
and a guard that no module of the package compares `role.actor` with a string again."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from orchestrator.definition.actor_specs import ActorKind
from orchestrator.definition.models import Graph, Role
from orchestrator.vcs.worktrees import needs_isolation

PACKAGE = Path(__file__).resolve().parents[1] / "orchestrator"


def role(**fields: Any) -> Role:
    base: dict[str, Any] = {"description": "d"}
    if "graph" not in fields:
        base |= {"goal": "g", "frontmatter": {"type": "object"}}
    return Role.model_validate(base | fields)


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({}, ActorKind.MODEL),  # the default actor
        ({"actor": "anthropic"}, ActorKind.MODEL),
        ({"actor": "human"}, ActorKind.HUMAN),
        ({"actor": "claude-code"}, ActorKind.CLAUDE_CODE),
        ({"actor": {"command": ["agent", "--stdin"]}}, ActorKind.COMMAND),
        ({"actor": {"python": "pkg.mod:fn"}}, ActorKind.PYTHON),
        ({"graph": "child"}, ActorKind.SUBGRAPH),
    ],
)
def test_each_form_of_actor_has_its_kind_and_one_predicate(
    fields: dict[str, Any], kind: ActorKind
) -> None:
    r = role(**fields)
    assert r.kind is kind
    answers = {
        ActorKind.MODEL: r.is_model,
        ActorKind.HUMAN: r.is_human,
        ActorKind.CLAUDE_CODE: r.is_claude_code,
        ActorKind.COMMAND: r.is_command,
        ActorKind.PYTHON: r.is_python,
        ActorKind.SUBGRAPH: r.is_subgraph,
    }
    assert [k for k, yes in answers.items() if yes] == [kind]


def test_a_subgraph_role_is_not_a_model_whatever_its_actor_default_says() -> None:
    r = role(graph="child")
    assert r.actor == "anthropic"  # the field's default is still there ...
    assert not r.is_model  # ... but a child thread plays the role
    assert r.kind.value == "subgraph"


def test_python_ref_is_a_python_actors_reference_only() -> None:
    assert role(actor={"python": "pkg.mod:fn"}).python_ref == "pkg.mod:fn"
    assert role(tools=[{"python": "pkg.mod:tool"}]).python_ref is None  # a tool, not the actor
    assert role(actor={"command": ["agent"]}).python_ref is None


@pytest.mark.parametrize(
    ("fields", "edits"),
    [
        ({}, False),
        ({"tools": ["read"]}, False),
        ({"tools": ["read", "edit"]}, True),
        ({"tools": ["shell"]}, True),
        ({"tools": [{"python": "pkg.mod:tool"}]}, True),
        ({"tools": [{"mcp": {"command": ["server"]}}]}, True),
        ({"actor": {"python": "pkg.mod:fn"}}, True),
        ({"actor": {"command": ["agent"]}}, True),  # an agent process, whatever its tools
        ({"actor": "human"}, False),
        ({"actor": "claude-code", "tools": ["read"]}, False),
        ({"actor": "claude-code", "tools": ["edit"]}, True),
    ],
)
def test_edits_files_and_the_worktree_it_asks_for(fields: dict[str, Any], edits: bool) -> None:
    r = role(**fields)
    assert r.edits_files is edits
    graph = Graph.model_validate(
        {
            "name": "g",
            "description": "d",
            "roles": {"only": r.model_dump(exclude_unset=True)},
            "graph": {
                "$START": {"_": {"role": "only", "prompt": "go"}},
                "only": {"_": {"role": "$END", "prompt": "done"}},
            },
        }
    )
    assert needs_isolation(graph) is edits


def _string_comparisons_of_actor(tree: ast.AST) -> list[int]:
    """Lines comparing an attribute `actor` of a role with a string constant (or a tuple of
    them): `role.actor == "human"`, `r.actor in ("anthropic", ...)`."""

    def is_role_actor(node: ast.expr) -> bool:
        # `s.actor` of a step view is the recorded actor's name (replay, scripted, ...): a role's
        # is reached as `role.actor`, `roles[name].actor` or `graph.roles.get(n).actor`.
        if not (isinstance(node, ast.Attribute) and node.attr == "actor"):
            return False
        return "role" in ast.unparse(node.value).lower()

    def is_string(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str)
        return isinstance(node, ast.Tuple | ast.List | ast.Set) and all(map(is_string, node.elts))

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(map(is_role_actor, sides)) and any(map(is_string, sides)):
                found.append(node.lineno)
    return found


def test_no_module_compares_a_roles_actor_with_a_string() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in _string_comparisons_of_actor(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert offenders == [], "ask the role (role.is_human, role.is_model, ...): " + str(offenders)


def test_the_guard_sees_a_comparison() -> None:
    """Control: the guard finds the forms it forbids, and lets a step view's actor be."""
    source = (
        'if role.actor == "human": pass\n'
        'if graph.roles[n].actor in ("anthropic", "claude-code"): pass\n'
        'if "human" != self.role.actor: pass\n'
        'if s.actor not in ("anthropic", "AnthropicActor"): pass\n'
        "if role.is_human: pass\n"
    )
    assert _string_comparisons_of_actor(ast.parse(source)) == [1, 2, 3]
