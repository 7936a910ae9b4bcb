"""The linter: one small graph per problem code, positions, the dataflow behind template-var."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import orchestrator
from orchestrator.definition.loader import load_graph
from orchestrator.definition.problems import Problem
from orchestrator.linter import CODES, lint, lint_graph_file, lint_role_file

CASES = Path(__file__).parent / "lint_cases"
CLEAN = CASES / "clean-reference.yaml"

# Roles reused by the small graphs below.
ROLES = """
roles:
  planner:
    description: plans
    goal: You plan.
    frontmatter:
      oneOf:
        - properties:
            $status: { const: ready }
            plan: { type: string }
            risk: { type: string }
            steps: { type: array, items: { type: object } }
          required: [$status, plan, steps]
        - properties:
            $status: { const: unclear }
            question: { type: string }
          required: [$status, question]
  developer:
    description: develops
    goal: You develop.
    frontmatter:
      type: object
      properties:
        $status: { enum: [done, failed] }
        branch: { type: string }
        attempts: { type: integer }
      required: [$status, branch, attempts]
  reviewer:
    description: reviews
    goal: You review.
    frontmatter:
      type: object
      properties:
        verdict: { type: string }
      required: [verdict]
"""

EDGES = """
graph:
  $START:
    _: { role: planner, prompt: "Plan: {{{$inputs.task}}}" }
  planner:
    ready: { role: developer, prompt: "Do {{{plan}}}" }
    unclear: { role: $END, prompt: "Asked: {{{question}}}" }
  developer:
    done: { role: reviewer, prompt: "Review {{{branch}}}" }
    failed: { role: planner, prompt: "Replan after {{{branch}}}" }
  reviewer:
    _: { role: $END, prompt: "Verdict {{{verdict}}}" }
"""


def write(tmp_path: Path, text: str, name: str = "g") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def graph_text(*, roles: str = ROLES, edges: str = EDGES, head: str = "") -> str:
    return f"name: g\ndescription: test\n{textwrap.dedent(head)}{roles}{textwrap.dedent(edges)}"


def problems_of(tmp_path: Path, text: str, name: str = "g") -> list[Problem]:
    return lint_graph_file(write(tmp_path, text, name))


def codes(problems: list[Problem]) -> list[str]:
    return [p.code for p in problems]


def only(problems: list[Problem], code: str) -> list[Problem]:
    return [p for p in problems if p.code == code]


def with_edge(source: str, status: str, edge: str) -> str:
    """EDGES with one edge replaced (or added)."""
    lines = textwrap.dedent(EDGES).splitlines()
    out: list[str] = []
    in_source = False
    replaced = False
    for line in lines:
        if line.startswith("  ") and not line.startswith("    "):
            if in_source and not replaced:
                out.append(f"    {status}: {edge}")
                replaced = True
            in_source = line.strip() == f"{source}:"
        if in_source and line.strip().startswith(f"{status}:"):
            out.append(f"    {status}: {edge}")
            replaced = True
            continue
        out.append(line)
    if in_source and not replaced:
        out.append(f"    {status}: {edge}")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- clean graphs


def test_clean_reference_graph_has_no_problems() -> None:
    assert lint(load_graph(CLEAN)) == []


def test_the_small_base_graph_is_clean(tmp_path: Path) -> None:
    assert problems_of(tmp_path, graph_text()) == []


def test_lint_is_the_public_api() -> None:
    graph = orchestrator.load_graph(str(CLEAN))
    assert orchestrator.lint(graph) == []


def test_problems_are_sorted_by_file_line_column(tmp_path: Path) -> None:
    text = graph_text(
        edges=with_edge("planner", "ready", '{ role: developer, prompt: "{{nope}} {{plan}}" }')
    )
    found = problems_of(tmp_path, text)
    assert len(found) >= 2
    assert found == sorted(found, key=lambda p: (p.file, p.line, p.column))


def test_every_code_has_a_severity() -> None:
    assert set(CODES.values()) <= {"error", "warning"}
    assert {c for c, s in CODES.items() if s == "warning"} == {
        "unused-role",
        "optional-var",
        "html-escape",
        "unknown-schema-keyword",
        "unmapped-tool",
        "unmapped-model",
        "unknown-model",
    }


# --------------------------------------------------------------------------- loader codes


def test_yaml_syntax(tmp_path: Path) -> None:
    (p,) = problems_of(tmp_path, "name: g\ndescription: [unclosed\n")
    assert p.code == "yaml-syntax" and p.severity == "error"
    assert p.line >= 2


def test_unknown_key_has_a_did_you_mean_hint(tmp_path: Path) -> None:
    found = problems_of(tmp_path, graph_text(head="descriptoin: oops\n"))
    (p,) = only(found, "unknown-key")
    assert "descriptoin" in p.message
    assert "description" in p.hint
    assert p.line == 3


def test_unknown_key_in_an_edge(tmp_path: Path) -> None:
    text = graph_text(edges=with_edge("reviewer", "_", '{ role: $END, promt: "x" }'))
    found = problems_of(tmp_path, text)
    assert "unknown-key" in codes(found)
    assert any("prompt" in p.hint for p in only(found, "unknown-key"))


def test_missing_field(tmp_path: Path) -> None:
    (p,) = problems_of(tmp_path, f"name: g\n{ROLES}{EDGES}")
    assert p.code == "missing-field"
    assert "description" in p.message


def test_bad_type(tmp_path: Path) -> None:
    found = problems_of(tmp_path, graph_text(head="limits: { max_steps: many }\n"))
    (p,) = only(found, "bad-type")
    assert "limits.max_steps" in p.message
    assert p.line == 3


def test_unknown_extends(tmp_path: Path) -> None:
    roles = ROLES + "  helper:\n    extends: no-such-role\n"
    edges = with_edge("reviewer", "_", '{ role: helper, prompt: "help" }')
    found = problems_of(tmp_path, graph_text(roles=roles, edges=edges))
    assert codes(found) == ["unknown-extends"]


def test_unknown_tool(tmp_path: Path) -> None:
    roles = ROLES.replace("    goal: You review.\n", "    goal: You review.\n    tools: [raed]\n")
    (p,) = problems_of(tmp_path, graph_text(roles=roles))
    assert p.code == "unknown-tool"
    assert "read" in p.hint


def test_unreadable_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_bytes(b"name: \xff\xfe\x00")
    (p,) = lint_graph_file(path)
    assert p.code == "unreadable"


# --------------------------------------------------------------------------- names


def test_name_mismatch(tmp_path: Path) -> None:
    found = problems_of(tmp_path, graph_text(), name="other")
    (p,) = found
    assert p.code == "name-mismatch"
    assert (p.line, p.column) == (1, 7)
    assert "other" in p.hint


@pytest.mark.parametrize("name", ["$helper", "_", "$SUSPEND"])
def test_reserved_role_names(tmp_path: Path, name: str) -> None:
    roles = ROLES + f'  "{name}":\n    description: d\n    goal: g\n    frontmatter: {{}}\n'
    found = problems_of(tmp_path, graph_text(roles=roles))
    assert "reserved-name" in codes(found)


def test_declaring_suspend_as_a_status_is_reserved(tmp_path: Path) -> None:
    roles = ROLES.replace("enum: [done, failed]", "enum: [done, failed, $SUSPEND]")
    found = problems_of(tmp_path, graph_text(roles=roles))
    assert codes(found) == ["reserved-name"]
    assert "$SUSPEND" in found[0].message


def test_dollar_field_names_are_reserved(tmp_path: Path) -> None:
    roles = ROLES.replace(
        "verdict: { type: string }", "verdict: { type: string }\n        $note: {}"
    )
    found = problems_of(tmp_path, graph_text(roles=roles))
    assert codes(found) == ["reserved-name"]


def test_an_edge_cannot_lead_back_to_start(tmp_path: Path) -> None:
    text = graph_text(edges=with_edge("developer", "failed", '{ role: $START, prompt: "again" }'))
    found = problems_of(tmp_path, text)
    assert "reserved-name" in codes(found)


# --------------------------------------------------------------------------- schemas


def test_bad_status_schema_without_const_or_enum(tmp_path: Path) -> None:
    roles = ROLES.replace("$status: { enum: [done, failed] }", "$status: { type: string }")
    found = problems_of(tmp_path, graph_text(roles=roles))
    assert codes(found) == ["bad-status-schema"]
    assert "const" in found[0].hint


def test_bad_status_schema_variant_without_status(tmp_path: Path) -> None:
    roles = ROLES.replace("$status: { const: unclear }", "kind: { const: unclear }")
    found = problems_of(tmp_path, graph_text(roles=roles))
    assert "bad-status-schema" in codes(found)
    assert "variant 2" in only(found, "bad-status-schema")[0].message


def test_invalid_json_schema_in_frontmatter(tmp_path: Path) -> None:
    roles = ROLES.replace("verdict: { type: string }", "verdict: { type: 12 }")
    found = problems_of(tmp_path, graph_text(roles=roles))
    assert codes(found) == ["invalid-json-schema"]


def test_invalid_json_schema_in_inputs(tmp_path: Path) -> None:
    head = "inputs: { type: object, properties: { task: { type: text } }, required: [task] }\n"
    found = problems_of(tmp_path, graph_text(head=head))
    assert codes(found) == ["invalid-json-schema"]
    assert found[0].line == 3


def test_inputs_must_describe_an_object(tmp_path: Path) -> None:
    found = problems_of(tmp_path, graph_text(head="inputs: { type: string }\n"))
    assert "invalid-json-schema" in codes(found)


# --------------------------------------------------------------------------- shape


def test_start_edge_missing_start(tmp_path: Path) -> None:
    edges = EDGES.replace("  $START:\n", "  $BEGIN:\n")
    found = problems_of(tmp_path, graph_text(edges=edges))
    assert "start-edge" in codes(found)


def test_start_edge_without_underscore(tmp_path: Path) -> None:
    edges = EDGES.replace(
        '    _: { role: planner, prompt: "Plan', '    go: { role: planner, prompt: "Plan'
    )
    found = problems_of(tmp_path, graph_text(edges=edges))
    assert codes(found).count("start-edge") == 2  # no `_`, and an unknown key `go`


def test_start_may_have_resume(tmp_path: Path) -> None:
    edges = with_edge(
        "$START", "resume", '{ role: planner, prompt: "Go on: {{{$inputs.message}}}" }'
    )
    assert problems_of(tmp_path, graph_text(edges=edges)) == []


def test_end_has_edges(tmp_path: Path) -> None:
    edges = EDGES + '  $END:\n    _: { role: planner, prompt: "again" }\n'
    found = problems_of(tmp_path, graph_text(edges=edges))
    assert codes(found) == ["end-has-edges"]


def test_unknown_role_target_with_hint_and_no_cascade(tmp_path: Path) -> None:
    text = graph_text(edges=with_edge("planner", "ready", '{ role: develper, prompt: "x" }'))
    found = problems_of(tmp_path, text)
    assert codes(found) == ["unknown-role"]
    assert "developer" in found[0].hint


def test_unknown_role_target_without_a_close_match(tmp_path: Path) -> None:
    text = graph_text(edges=with_edge("reviewer", "_", '{ role: zzz, prompt: "x" }'))
    found = problems_of(tmp_path, text)
    assert codes(found) == ["unknown-role"]  # and not also no-path-to-end for reviewer


def test_an_unknown_first_role_is_one_problem(tmp_path: Path) -> None:
    text = graph_text(edges=EDGES.replace("_: { role: planner,", "_: { role: zzz,"))
    found = problems_of(tmp_path, text)
    assert codes(found) == ["unknown-role"]  # not also every role unreachable


def test_unknown_role_as_a_graph_key(tmp_path: Path) -> None:
    edges = EDGES + '  stranger:\n    _: { role: $END, prompt: "x" }\n'
    found = problems_of(tmp_path, graph_text(edges=edges))
    assert codes(found) == ["unknown-role"]
    assert "stranger" in found[0].message


def test_unused_role_is_a_warning(tmp_path: Path) -> None:
    roles = ROLES + "  spare:\n    description: d\n    goal: g\n    frontmatter: {}\n"
    found = problems_of(tmp_path, graph_text(roles=roles))
    (p,) = found
    assert (p.code, p.severity) == ("unused-role", "warning")


def test_unreachable_role(tmp_path: Path) -> None:
    # two roles that only lead to each other: an island the thread can never enter
    roles = ROLES + (
        "  a:\n    description: d\n    goal: g\n    frontmatter: {}\n"
        "  b:\n    description: d\n    goal: g\n    frontmatter: {}\n"
    )
    edges = EDGES + (
        '  a:\n    _: { role: b, prompt: "x" }\n  b:\n    _: { role: a, prompt: "y" }\n'
    )
    found = problems_of(tmp_path, graph_text(roles=roles, edges=edges))
    assert codes(found) == ["unreachable-role", "unreachable-role"]


def test_no_path_to_end(tmp_path: Path) -> None:
    edges = with_edge("reviewer", "_", '{ role: developer, prompt: "again" }')
    edges = edges.replace("unclear: { role: $END", "unclear: { role: developer")
    edges = edges.replace('prompt: "Asked: {{{question}}}"', 'prompt: "Try {{{question}}}"')
    found = problems_of(tmp_path, graph_text(edges=edges))
    assert set(codes(found)) == {"no-path-to-end"}
    assert len(found) == 3  # planner, developer and reviewer only loop among themselves


def test_missing_status_edge(tmp_path: Path) -> None:
    edges = EDGES.replace(
        '    failed: { role: planner, prompt: "Replan after {{{branch}}}" }\n', ""
    )
    found = problems_of(tmp_path, graph_text(edges=edges))
    (p,) = found
    assert p.code == "missing-status-edge"
    assert "'failed'" in p.message


def test_reached_role_without_any_edges_is_one_problem(tmp_path: Path) -> None:
    edges = EDGES.replace(
        '  reviewer:\n    _: { role: $END, prompt: "Verdict {{{verdict}}}" }\n', ""
    )
    found = problems_of(tmp_path, graph_text(edges=edges))
    (p,) = found
    assert p.code == "missing-status-edge"
    assert "no edges" in p.message


def test_single_exit_role_needs_underscore(tmp_path: Path) -> None:
    edges = EDGES.replace(
        '    _: { role: $END, prompt: "Verdict', '    done: { role: $END, prompt: "Verdict'
    )
    found = problems_of(tmp_path, graph_text(edges=edges))
    (p,) = found
    assert p.code == "unknown-status-edge"
    assert "`_`" in p.hint


def test_unknown_status_edge_with_did_you_mean(tmp_path: Path) -> None:
    edges = EDGES.replace("    ready: {", "    raedy: {")
    found = problems_of(tmp_path, graph_text(edges=edges))
    (p,) = found  # the misspelling is not also reported as a missing 'ready'
    assert p.code == "unknown-status-edge"
    assert "ready" in p.hint


def test_unknown_status_edge_for_suspend(tmp_path: Path) -> None:
    edges = with_edge("developer", "$SUSPEND", '{ role: $END, prompt: "x" }')
    found = problems_of(tmp_path, graph_text(edges=edges))
    assert codes(found) == ["unknown-status-edge"]
    assert "suspends" in found[0].message


def test_analyze_topic_style_enum_underscore_is_single_exit(tmp_path: Path) -> None:
    roles = ROLES.replace(
        "      properties:\n        verdict:",
        "      properties:\n        $status: { enum: [_] }\n        verdict:",
    )
    assert problems_of(tmp_path, graph_text(roles=roles)) == []


# --------------------------------------------------------------------------- templates


def test_template_syntax_points_at_the_line_inside_a_block_prompt(tmp_path: Path) -> None:
    edge = "\n      role: developer\n      prompt: |\n        Do {{{plan}}}\n        {{#steps}} unclosed\n"
    text = graph_text(edges=with_edge("planner", "ready", edge))
    (p,) = problems_of(tmp_path, text)
    assert p.code == "template-syntax"
    lines = text.splitlines()
    assert "{{#steps}}" in lines[p.line - 1]


def test_empty_prompt(tmp_path: Path) -> None:
    text = graph_text(edges=with_edge("reviewer", "_", '{ role: $END, prompt: "  " }'))
    (p,) = problems_of(tmp_path, text)
    assert p.code == "empty-prompt"


def test_html_escape_warning_and_exact_column(tmp_path: Path) -> None:
    text = graph_text(
        edges=with_edge("planner", "ready", '{ role: developer, prompt: "Do {{plan}}" }')
    )
    (p,) = problems_of(tmp_path, text)
    assert (p.code, p.severity) == ("html-escape", "warning")
    assert "{{{plan}}}" in p.hint
    line = text.splitlines()[p.line - 1]
    assert line[p.column - 1 :].startswith("{{plan}}")


def test_no_html_escape_warning_for_numbers(tmp_path: Path) -> None:
    text = graph_text(
        edges=with_edge("developer", "done", '{ role: reviewer, prompt: "{{attempts}} tries" }')
    )
    assert problems_of(tmp_path, text) == []


@pytest.mark.parametrize(
    ("source", "status", "prompt", "needle"),
    [
        ("$START", "_", "{{{plan}}}", "no step precedes"),
        ("$START", "_", "{{{$body}}}", "$body"),
        ("$START", "_", "{{{$inputs.issue}}}", "not a declared input"),
        ("planner", "ready", "{{{question}}}", "only in replies with $status unclear"),
        ("planner", "ready", "{{{plam}}}", "did you mean 'plan'"),
        ("planner", "ready", "{{{$thread.name}}}", "thread fact"),
        ("planner", "ready", "{{{$stpes.planner.plan}}}", "$steps"),
        ("planner", "ready", "{{{$steps.nobody.plan}}}", "no role 'nobody'"),
        ("planner", "ready", "{{{$steps.developer.branch}}}", "has not run on every path"),
        ("reviewer", "_", "{{{$steps.planner.question}}}", "may last have replied 'ready'"),
        ("reviewer", "_", "{{{$body.text}}}", "no fields"),
    ],
)
def test_template_var(tmp_path: Path, source: str, status: str, prompt: str, needle: str) -> None:
    target = {"$START": "planner", "planner": "developer", "reviewer": "$END"}[source]
    text = graph_text(edges=with_edge(source, status, f'{{ role: {target}, prompt: "{prompt}" }}'))
    found = problems_of(tmp_path, text)
    (p,) = only(found, "template-var")
    assert needle in p.message + " " + p.hint


def test_the_start_prompt_can_use_declared_inputs(tmp_path: Path) -> None:
    head = "inputs: { type: object, properties: { issue: { type: string } }, required: [issue] }\n"
    edges = EDGES.replace("{{{$inputs.task}}}", "{{{$inputs.issue}}} in {{{$thread.workspace}}}")
    assert problems_of(tmp_path, graph_text(head=head, edges=edges)) == []


def test_location_templates_are_checked(tmp_path: Path) -> None:
    edge = '{ role: developer, prompt: "Do {{{plan}}}", location: "{{{nowhere}}}" }'
    found = problems_of(tmp_path, graph_text(edges=with_edge("planner", "ready", edge)))
    (p,) = found
    assert p.code == "template-var" and "location" in p.message


def test_end_prompts_are_checked(tmp_path: Path) -> None:
    edges = EDGES.replace("Verdict {{{verdict}}}", "Verdict {{{verdit}}}")
    (p,) = problems_of(tmp_path, graph_text(edges=edges))
    assert p.code == "template-var"


def test_names_inside_a_section_over_a_list_may_be_element_fields(tmp_path: Path) -> None:
    edge = '{ role: developer, prompt: "{{#steps}}{{{title}}} {{{plan}}}{{/steps}}" }'
    assert problems_of(tmp_path, graph_text(edges=with_edge("planner", "ready", edge))) == []


def test_names_inside_a_section_over_a_string_are_checked(tmp_path: Path) -> None:
    edge = '{ role: developer, prompt: "{{{plan}}} {{#risk}}{{{title}}}{{/risk}}" }'
    found = problems_of(tmp_path, graph_text(edges=with_edge("planner", "ready", edge)))
    assert codes(found) == ["template-var"]


def test_dot_is_fine_inside_sections(tmp_path: Path) -> None:
    edge = '{ role: developer, prompt: "{{{plan}}} {{#steps}}{{{.}}}{{/steps}}" }'
    assert problems_of(tmp_path, graph_text(edges=with_edge("planner", "ready", edge))) == []


def test_double_braces_inside_a_list_section_warn_too(tmp_path: Path) -> None:
    edge = '{ role: developer, prompt: "{{{plan}}} {{#steps}}{{title}}{{/steps}}" }'
    found = problems_of(tmp_path, graph_text(edges=with_edge("planner", "ready", edge)))
    assert codes(found) == ["html-escape"]


def test_a_misspelled_graph_key_is_one_problem(tmp_path: Path) -> None:
    edges = EDGES.replace("  developer:\n", "  develper:\n")
    found = problems_of(tmp_path, graph_text(edges=edges))
    assert codes(found) == ["unknown-role"]
    assert "developer" in found[0].hint


# --------------------------------------------------------------------------- optional-var


def test_optional_field_outside_a_section_is_a_warning(tmp_path: Path) -> None:
    edge = '{ role: developer, prompt: "Do {{{plan}}}, mind {{{risk}}}" }'
    (p,) = problems_of(tmp_path, graph_text(edges=with_edge("planner", "ready", edge)))
    assert (p.code, p.severity) == ("optional-var", "warning")
    assert "{{#risk}}" in p.hint


@pytest.mark.parametrize(
    "prompt",
    [
        "Do {{{plan}}}{{#risk}}, mind {{{risk}}}{{/risk}}",
        "Do {{{plan}}}{{^risk}} (no risk){{/risk}}",
        "Do {{{plan}}}{{#risk}}{{#plan}}{{{risk}}}{{/plan}}{{/risk}}",
    ],
)
def test_optional_field_inside_its_section_is_fine(tmp_path: Path, prompt: str) -> None:
    edge = f'{{ role: developer, prompt: "{prompt}" }}'
    assert problems_of(tmp_path, graph_text(edges=with_edge("planner", "ready", edge))) == []


def test_optional_input_outside_a_section(tmp_path: Path) -> None:
    head = "inputs: { type: object, properties: { issue: { type: string }, note: { type: string } }, required: [issue] }\n"
    edges = EDGES.replace("{{{$inputs.task}}}", "{{{$inputs.issue}}} {{{$inputs.note}}}")
    found = problems_of(tmp_path, graph_text(head=head, edges=edges))
    assert codes(found) == ["optional-var"]


def test_optional_step_field(tmp_path: Path) -> None:
    edges = EDGES.replace("Review {{{branch}}}", "Review {{{branch}}} {{{$steps.planner.risk}}}")
    found = problems_of(tmp_path, graph_text(edges=edges))
    assert codes(found) == ["optional-var"]


# --------------------------------------------------------------------------- the dataflow


FLOW_ROLES = """
roles:
  a:
    description: d
    goal: g
    frontmatter:
      oneOf:
        - { properties: { $status: { const: x }, f: { type: string } }, required: [$status, f] }
        - { properties: { $status: { const: y }, g: { type: string } }, required: [$status, g] }
  b:
    description: d
    goal: g
    frontmatter: { type: object, properties: { $status: { enum: [left, right] } } }
  c: { description: d, goal: g, frontmatter: {} }
  d: { description: d, goal: g, frontmatter: {} }
"""


def flow(tmp_path: Path, edges: str) -> list[Problem]:
    """Problems of a graph over FLOW_ROLES; not every test uses every role."""
    found = problems_of(tmp_path, graph_text(roles=FLOW_ROLES, edges=edges))
    return [p for p in found if p.code != "unused-role"]


def test_step_field_is_fine_when_the_role_ran_with_that_status_on_every_path(
    tmp_path: Path,
) -> None:
    edges = """
    graph:
      $START: { _: { role: a, prompt: "go" } }
      a:
        x: { role: b, prompt: "x" }
        y: { role: $END, prompt: "y" }
      b:
        left: { role: c, prompt: "l" }
        right: { role: d, prompt: "r" }
      c: { _: { role: $END, prompt: "{{{$steps.a.f}}}" } }
      d: { _: { role: $END, prompt: "{{{$steps.a.f}}} {{{$steps.b.$body}}}" } }
    """
    assert flow(tmp_path, edges) == []


def test_step_field_absent_in_one_possible_latest_status(tmp_path: Path) -> None:
    edges = """
    graph:
      $START: { _: { role: a, prompt: "go" } }
      a:
        x: { role: c, prompt: "x" }
        y: { role: c, prompt: "y" }
      c: { _: { role: $END, prompt: "{{{$steps.a.f}}}" } }
    """
    (p,) = flow(tmp_path, edges)
    assert p.code == "template-var"
    assert "'y'" in p.message


def test_step_of_a_role_on_only_one_branch(tmp_path: Path) -> None:
    edges = """
    graph:
      $START: { _: { role: b, prompt: "go" } }
      b:
        left: { role: c, prompt: "l" }
        right: { role: d, prompt: "r" }
      c: { _: { role: d, prompt: "c" } }
      d: { _: { role: $END, prompt: "{{{$steps.c.$body}}}" } }
    """
    (p,) = flow(tmp_path, edges)
    assert p.code == "template-var"
    assert "not run on every path" in p.message


def test_a_loop_back_does_not_make_a_later_role_certain(tmp_path: Path) -> None:
    # b -> c -> b: on the first visit of b, c has not run yet
    edges = """
    graph:
      $START: { _: { role: b, prompt: "go" } }
      b:
        left: { role: c, prompt: "{{{$steps.c.$body}}}" }
        right: { role: $END, prompt: "r" }
      c: { _: { role: b, prompt: "again" } }
    """
    (p,) = flow(tmp_path, edges)
    assert p.code == "template-var"


def test_latest_status_follows_the_loop(tmp_path: Path) -> None:
    # a runs again on the way back: its latest reply there is x (via b) or y
    edges = """
    graph:
      $START: { _: { role: a, prompt: "go" } }
      a:
        x: { role: b, prompt: "{{{f}}}" }
        y: { role: c, prompt: "{{{g}}}" }
      b:
        left: { role: a, prompt: "{{{$steps.a.f}}}" }
        right: { role: c, prompt: "{{{$steps.a.f}}}" }
      c: { _: { role: $END, prompt: "{{{$steps.a.g}}}" } }
    """
    (p,) = flow(tmp_path, edges)
    assert p.code == "template-var"
    assert "'x'" in p.message and "$steps.a.g" in p.message


def test_resume_sees_what_held_at_end(tmp_path: Path) -> None:
    edges = """
    graph:
      $START:
        _: { role: a, prompt: "go" }
        resume: { role: c, prompt: "{{{$steps.a.$body}}} {{{$inputs.message}}}" }
      a:
        x: { role: $END, prompt: "x" }
        y: { role: $END, prompt: "y" }
      c: { _: { role: $END, prompt: "{{{$steps.a.f}}}" } }
    """
    (p,) = flow(tmp_path, edges)  # a ran, but its latest reply may be y, which has no f
    assert p.code == "template-var"
    assert "$steps.a.f" in p.message


# --------------------------------------------------------------------------- role files


def test_role_file_problems_point_into_the_role_file(tmp_path: Path) -> None:
    roles = tmp_path / "roles"
    roles.mkdir()
    path = roles / "checker.md"
    path.write_text(
        "---\ndescription: d\ngoal: g\nfrontmatter:\n  type: object\n  properties:\n"
        "    $status: { type: string }\n---\nProcedure text.\n",
        encoding="utf-8",
    )
    (p,) = lint_role_file(path)
    assert p.code == "bad-status-schema"
    assert p.file == str(path)
    assert p.line == 7


def test_clean_role_file(tmp_path: Path) -> None:
    path = tmp_path / "writer.yaml"
    path.write_text("description: d\ngoal: g\nfrontmatter: { type: object }\n", encoding="utf-8")
    assert lint_role_file(path) == []


def test_a_role_file_that_extends_another_is_resolved_like_in_a_graph(tmp_path: Path) -> None:
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "base.yaml").write_text(
        "description: d\ngoal: g\nfrontmatter: { type: object }\n", encoding="utf-8"
    )
    (roles / "child.yaml").write_text("extends: base\ngoal: better\n", encoding="utf-8")
    (roles / "broken.yaml").write_text("extends: base\nmax_repairs: lots\n", encoding="utf-8")
    (roles / "orphan.md").write_text("---\nextends: bsae\n---\nSteps.\n", encoding="utf-8")
    assert lint_role_file(roles / "child.yaml") == []
    (p,) = lint_role_file(roles / "broken.yaml")
    assert (p.code, p.file, p.line) == ("bad-type", str(roles / "broken.yaml"), 2)
    (p,) = lint_role_file(roles / "orphan.md")
    assert (p.code, p.line, p.hint) == ("unknown-extends", 2, "did you mean 'base'?")


# --------------------------------------------------------------------------- internal errors


def test_a_linter_bug_becomes_an_internal_error_and_other_checks_still_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import orchestrator.linter.templates as template_pass

    def broken(template: str) -> list[object]:
        raise RuntimeError("boom")

    monkeypatch.setattr(template_pass, "variables", broken)
    found = problems_of(tmp_path, graph_text(), name="other")
    assert "internal-error" in codes(found)
    assert "name-mismatch" in codes(found)
    assert all(p.file.endswith("other.yaml") for p in found)


# --------------------------------------------------------------------------- the docs

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_code_is_documented_with_a_heading_and_a_table_row() -> None:
    text = (DOCS / "problems.md").read_text(encoding="utf-8")
    for code, severity in CODES.items():
        assert f"\n### {code}\n" in text, code
        assert f"| [`{code}`](#{code}) | {severity} |" in text, code


def test_the_authoring_guide_example_graph_is_clean(tmp_path: Path) -> None:
    text = (DOCS / "authoring.md").read_text(encoding="utf-8")
    section = text[text.index("## 2. A complete small graph") :]
    example = section[section.index("```yaml\n") + 8 : section.index("```\n", 8)]
    (tmp_path / "graphs").mkdir()
    assert lint_graph_file(write(tmp_path / "graphs", example, "fix-typo")) == []
