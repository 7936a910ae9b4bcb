"""The linter on subgraph roles and fan-out edges (docs/format.md sections 14 and 15): one small
graph per problem, and the scope each template of these edges sees."""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator

from orchestrator.definition.problems import Problem
from orchestrator.definition.schema import graph_schema
from orchestrator.linter import lint_graph_file

ROLES = """
roles:
  planner:
    description: plans
    goal: You plan.
    frontmatter:
      type: object
      properties:
        plan: { type: string }
        parts: { type: array, items: { type: string } }
        count: { type: integer }
      required: [plan, parts, count]
  writer:
    description: writes
    goal: You write.
    frontmatter:
      type: object
      properties:
        text: { type: string }
      required: [text]
  checker:
    description: checks
    goal: You check.
    frontmatter:
      type: object
      properties:
        $status: { enum: [ok, bad] }
      required: [$status]
  editor:
    description: edits
    goal: You edit.
    frontmatter: { type: object }
"""

PARALLEL = """
graph:
  $START:
    _: { role: planner, prompt: "Plan {{{$inputs.task}}}" }
  planner:
    _:
      parallel:
        - { role: writer, prompt: "Write {{{plan}}}" }
        - { role: checker, prompt: "Check {{{plan}}} in {{{$thread.workspace}}}" }
      join:
        role: editor
        prompt: |
          {{#$branches}}{{{role}}} said {{{status}}}: {{{$body}}}
          {{/$branches}}Text: {{{$steps.writer.text}}} for {{{plan}}} ({{{$steps.checker.$status}}})
  editor:
    _: { role: $END, prompt: "Done" }
"""

FOR_EACH = """
graph:
  $START:
    _: { role: planner, prompt: "Plan {{{$inputs.task}}}" }
  planner:
    _:
      for_each: LIST
      as: part
      role: writer
      prompt: "Write {{{part}}} of {{{plan}}}"
      join: { role: $END, ending: written, prompt: "JOIN" }
"""

CHILD = """
name: child
description: the child
inputs:
  type: object
  properties:
    topic: { type: string }
    depth: { type: integer }
  required: [topic]
roles:
  w:
    description: writes
    goal: You write.
    frontmatter:
      type: object
      properties:
        $status: { enum: [good, poor] }
        summary: { type: string }
      required: [$status, summary]
graph:
  $START:
    _: { role: w, prompt: "Write about {{{$inputs.topic}}}" }
  w:
    good: { role: $END, prompt: "ok" }
    poor: { role: $END, ending: failed, outcome: failure, prompt: "no" }
"""

SUB_ROLE = """
  sub:
    description: runs the child
    graph: child
"""

SUBGRAPH = """
graph:
  $START:
    _: { role: planner, prompt: "Plan {{{$inputs.task}}}" }
  planner:
    _: { role: sub, EDGE }
  sub:
    done: { role: $END, prompt: "Summary: {{{summary}}} {{{$body}}}" }
    failed: { role: editor, prompt: "Retry: {{{$steps.sub.summary}}}" }
  editor:
    _: { role: $END, prompt: "Done" }
"""


def lint_text(tmp_path: Path, edges: str, roles: str = ROLES, child: str = CHILD) -> list[Problem]:
    (tmp_path / "child.yaml").write_text(textwrap.dedent(child), encoding="utf-8")
    path = tmp_path / "g.yaml"
    text = f"name: g\ndescription: test\n{textwrap.dedent(roles)}{textwrap.dedent(edges)}"
    path.write_text(text, encoding="utf-8")
    # the shared roles are not all used by every graph: their unused-role warnings are noise
    return [p for p in lint_graph_file(path) if p.code != "unused-role"]


def codes(problems: list[Problem]) -> list[str]:
    return [p.code for p in problems]


def for_each(tmp_path: Path, listed: str, join: str = "{{{plan}}}") -> list[Problem]:
    return lint_text(tmp_path, FOR_EACH.replace("LIST", listed).replace("JOIN", join))


def subgraph(tmp_path: Path, edge: str) -> list[Problem]:
    return lint_text(tmp_path, SUBGRAPH.replace("EDGE", edge), ROLES + SUB_ROLE)


# --------------------------------------------------------------------------- parallel


def test_a_parallel_fan_out_with_a_join_is_clean(tmp_path: Path) -> None:
    # branch roles need no section, are not unused, and the join sees $branches and $steps
    assert lint_text(tmp_path, PARALLEL) == []


def test_a_branch_role_with_edges_of_its_own(tmp_path: Path) -> None:
    edges = PARALLEL + '  writer:\n    _: { role: $END, prompt: "x" }\n'
    problems = lint_text(tmp_path, edges)
    assert codes(problems) == ["branch-has-edges"]
    assert "writer" in problems[0].message
    lines = (tmp_path / "g.yaml").read_text().splitlines()
    assert problems[0].line == len(lines) - 1  # the `writer:` key under graph:


def test_branches_is_seen_only_on_a_join_edge(tmp_path: Path) -> None:
    edges = PARALLEL.replace("Write {{{plan}}}", "Write {{#$branches}}x{{/$branches}}")
    problems = lint_text(tmp_path, edges)
    assert codes(problems) == ["template-var"]
    assert "planner._.parallel[0].prompt" in problems[0].message
    assert "join" in problems[0].message


def test_a_branch_prompt_sees_the_output_that_fanned_out(tmp_path: Path) -> None:
    problems = lint_text(tmp_path, PARALLEL.replace("Check {{{plan}}}", "Check {{{plam}}}"))
    assert codes(problems) == ["template-var"]
    assert "planner._.parallel[1].prompt" in problems[0].message


def test_a_join_prompt_is_checked(tmp_path: Path) -> None:
    problems = lint_text(tmp_path, PARALLEL.replace("$steps.writer.text", "$steps.writer.txt"))
    assert codes(problems) == ["template-var"]
    assert "planner._.join.prompt" in problems[0].message


def test_a_join_into_a_role_with_no_way_to_end(tmp_path: Path) -> None:
    edges = PARALLEL.replace(
        '_: { role: $END, prompt: "Done" }', '_: { role: planner, prompt: "Again" }'
    )
    assert set(codes(lint_text(tmp_path, edges))) == {"no-path-to-end"}


def test_roles_reached_only_through_a_join_are_reachable(tmp_path: Path) -> None:
    # editor is reached only by the join: no unreachable-role, no unused-role
    assert "editor" in PARALLEL and lint_text(tmp_path, PARALLEL) == []


# --------------------------------------------------------------------------- for_each


def test_a_for_each_over_a_list_field_is_clean(tmp_path: Path) -> None:
    assert for_each(tmp_path, "parts") == []


def test_for_each_over_an_input_or_a_step_field(tmp_path: Path) -> None:
    head = "inputs:\n  type: object\n  properties:\n    items: { type: array }\n"
    roles = head + ROLES
    edges = FOR_EACH.replace("LIST", "$inputs.items").replace("JOIN", "x")
    edges = edges.replace("{{{$inputs.task}}}", "it")
    assert lint_text(tmp_path, edges, roles) == []
    assert for_each(tmp_path, "$steps.planner.parts") == []


def test_for_each_over_a_field_that_is_not_a_list(tmp_path: Path) -> None:
    problems = for_each(tmp_path, "count")
    assert codes(problems) == ["for-each-not-list"]
    assert "integer" in problems[0].message


def test_for_each_over_a_name_that_does_not_exist(tmp_path: Path) -> None:
    problems = for_each(tmp_path, "prts")
    assert codes(problems) == ["for-each-not-list"]
    assert "parts" in problems[0].hint


def test_the_item_is_seen_only_in_the_branch_prompt(tmp_path: Path) -> None:
    problems = for_each(tmp_path, "parts", join="{{{part}}}")
    assert codes(problems) == ["template-var"]
    assert "planner._.join.prompt" in problems[0].message


def test_after_a_for_each_the_branch_role_may_not_have_run(tmp_path: Path) -> None:
    # the list may be empty: no branch ran, so $steps.writer is not sure to exist
    problems = for_each(tmp_path, "parts", join="{{{$steps.writer.text}}}")
    assert codes(problems) == ["template-var"]
    assert "has not run on every path" in problems[0].message


def test_an_ending_on_the_fan_out_edge_itself_is_misplaced(tmp_path: Path) -> None:
    edges = FOR_EACH.replace("LIST", "parts").replace("JOIN", "x")
    edges = edges.replace("as: part\n", "as: part\n      ending: early\n")
    assert codes(lint_text(tmp_path, edges)) == ["misplaced-ending"]


# --------------------------------------------------------------------------- subgraphs


def test_a_subgraph_role_given_its_inputs_is_clean(tmp_path: Path) -> None:
    # its statuses are the child's endings; `done` carries the fields of w's `good` reply
    problems = subgraph(tmp_path, 'inputs: { topic: "{{{plan}}}", depth: "{{{count}}}" }')
    assert problems == []


def test_a_subgraph_statuses_are_the_child_endings(tmp_path: Path) -> None:
    edges = SUBGRAPH.replace("EDGE", 'inputs: { topic: "{{{plan}}}" }')
    edges = edges.replace("    failed:", "    faild:")
    problems = lint_text(tmp_path, edges, ROLES + SUB_ROLE)
    assert codes(problems) == ["unknown-status-edge"]


def test_a_subgraph_missing_a_required_input(tmp_path: Path) -> None:
    problems = subgraph(tmp_path, 'inputs: { depth: "{{{count}}}" }')
    assert codes(problems) == ["missing-input"]
    assert "'topic'" in problems[0].message


def test_a_subgraph_given_only_a_prompt_when_it_declares_inputs(tmp_path: Path) -> None:
    problems = subgraph(tmp_path, 'prompt: "Do {{{plan}}}"')
    assert sorted(codes(problems)) == ["missing-input", "unknown-input"]


def test_an_input_the_child_does_not_declare(tmp_path: Path) -> None:
    problems = subgraph(tmp_path, 'inputs: { topic: "x", topc: "{{{plan}}}" }')
    assert codes(problems) == ["unknown-input"]
    assert "did you mean 'topic'" in problems[0].hint


def test_an_input_template_is_checked(tmp_path: Path) -> None:
    problems = subgraph(tmp_path, 'inputs: { topic: "{{{plam}}}" }')
    assert codes(problems) == ["template-var"]
    assert "planner._.inputs.topic" in problems[0].message


def test_inputs_into_a_role_that_is_not_a_subgraph(tmp_path: Path) -> None:
    edges = PARALLEL.replace(
        '_: { role: $END, prompt: "Done" }', '_: { role: $END, inputs: { a: "b" } }'
    )
    assert codes(lint_text(tmp_path, edges)) == []  # $END is no role: nothing to say here
    edges = SUBGRAPH.replace("EDGE", 'inputs: { topic: "x" }').replace(
        '_: { role: $END, prompt: "Done" }', '_: { role: planner, inputs: { a: "b" } }'
    )
    problems = lint_text(tmp_path, edges, ROLES + SUB_ROLE)
    assert codes(problems) == ["inputs-not-subgraph"]


def test_an_unknown_child_graph(tmp_path: Path) -> None:
    problems = lint_text(
        tmp_path,
        SUBGRAPH.replace("EDGE", 'inputs: { topic: "x" }'),
        ROLES + SUB_ROLE.replace("child", "chld"),
    )
    assert "unknown-graph" in codes(problems)


def test_a_graph_that_runs_itself(tmp_path: Path) -> None:
    child = CHILD.replace("  w:\n", "  again:\n    description: loops\n    graph: g\n  w:\n")
    problems = lint_text(
        tmp_path, SUBGRAPH.replace("EDGE", 'inputs: { topic: "x" }'), ROLES + SUB_ROLE, child
    )
    assert "graph-cycle" in codes(problems)


# --------------------------------------------------------------------------- the worked examples

DOCS = Path(__file__).resolve().parents[1] / "docs"


def authoring_graphs() -> dict[str, str]:
    """The complete graphs of docs/authoring.md's sections on subgraphs and fan-outs."""
    text = (DOCS / "authoring.md").read_text(encoding="utf-8")
    text = text[text.index("## 15. A graph as a role") :]
    blocks = [b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]]
    graphs = [b for b in blocks if b.startswith("name: ")]
    return {b.split("\n", 1)[0].removeprefix("name: "): b for b in graphs}


def test_the_worked_examples_are_clean_and_match_the_editor_schema(tmp_path: Path) -> None:
    graphs = authoring_graphs()
    assert set(graphs) == {"review-loop", "ship-feature", "docs-pass"}
    folder = tmp_path / "graphs"
    folder.mkdir()
    for name, text in graphs.items():
        (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    validator = Draft202012Validator(graph_schema())
    for name, text in graphs.items():
        assert lint_graph_file(folder / f"{name}.yaml") == [], name
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(text))]
        assert errors == [], name


def test_the_editor_schema_flags_misspelled_fan_out_keys_as_you_type() -> None:
    validator = Draft202012Validator(graph_schema())
    graph = yaml.safe_load(authoring_graphs()["docs-pass"])
    edge = graph["graph"]["editor"]["_"]
    assert list(validator.iter_errors(graph)) == []
    edge["parallel"] = [{"role": "rewriter", "promt": "x"}]
    assert ["promt" in e.message for e in validator.iter_errors(graph)] == [True]
    del edge["parallel"]
    edge["join"]["endng"] = "x"
    assert ["endng" in e.message for e in validator.iter_errors(graph)] == [True]
    graph["limits"]["max_parallel"] = 0
    assert len(list(validator.iter_errors(graph))) == 2
