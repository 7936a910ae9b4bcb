"""The seams users and third-party clients found in `validate` and the editor schema (issue 22):
each test here failed before its fix."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from orchestrator.definition.problems import Problem
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
        confidence: { type: number }
        done: { type: boolean }
        features:
          type: array
          items:
            type: object
            properties:
              name: { type: string }
              size: { type: integer }
              owner:
                type: object
                properties: { login: { type: string } }
            required: [name]
      required: [plan, confidence, done, features]
  writer:
    description: writes
    goal: You write.
    frontmatter:
      type: object
      properties:
        text: { type: string }
      required: [text]
"""

FOR_EACH = """
graph:
  $START:
    _: { role: planner, prompt: "Plan {{{$inputs.task}}}" }
  planner:
    _:
      for_each: features
      as: feature
      role: writer
      prompt: "PROMPT"
      join: { role: $END, prompt: "JOIN" }
"""


def lint_text(tmp_path: Path, edges: str, roles: str = ROLES) -> list[Problem]:
    path = tmp_path / "g.yaml"
    text = f"name: g\ndescription: test\n{textwrap.dedent(roles)}{textwrap.dedent(edges)}"
    path.write_text(text, encoding="utf-8")
    return [p for p in lint_graph_file(path) if p.code != "unused-role"]


def codes(problems: list[Problem]) -> list[str]:
    return [p.code for p in problems]


def for_each(tmp_path: Path, prompt: str, join: str = "{{{plan}}}") -> list[Problem]:
    return lint_text(tmp_path, FOR_EACH.replace("PROMPT", prompt).replace("JOIN", join))


# --------------------------------------------------------------------------- 1. item fields


def test_the_item_fields_of_a_for_each_are_checked(tmp_path: Path) -> None:
    problems = for_each(tmp_path, "Write {{{feature.nam}}}")
    assert codes(problems) == ["template-var"]
    assert "feature.nam" in problems[0].message
    assert "'name'" in problems[0].hint  # did you mean


def test_declared_item_fields_and_nested_ones_are_clean(tmp_path: Path) -> None:
    prompt = "Write {{{feature.name}}} ({{feature.size}}) {{#feature.owner}}{{{feature.owner.login}}}{{/feature.owner}}"
    assert for_each(tmp_path, prompt) == []


def test_a_misspelt_nested_item_field(tmp_path: Path) -> None:
    problems = for_each(tmp_path, "Write {{{feature.owner.logn}}}")
    assert codes(problems) == ["template-var"]
    assert "login" in problems[0].hint


def test_an_item_of_unknown_shape_is_not_checked(tmp_path: Path) -> None:
    # items declared without properties (or a list of unknown items): any field may be there
    roles = ROLES.replace("            required: [name]\n", "").replace(
        "            type: object\n            properties:", "            x-fields:"
    )
    edges = FOR_EACH.replace("PROMPT", "{{{feature.anything}}}").replace("JOIN", "x")
    assert lint_text(tmp_path, edges, roles) == []


# --------------------------------------------------------------------------- 2. guard types

GUARDED = """
graph:
  $START:
    _: { role: planner, prompt: "Plan {{{$inputs.task}}}" }
  planner:
    _:
      - { when: "WHEN", role: writer, prompt: "Write {{{plan}}}" }
      - { role: $END, prompt: "Gave up" }
  writer:
    _: { role: $END, prompt: "Done" }
"""


def guarded(tmp_path: Path, when: str) -> list[Problem]:
    return lint_text(tmp_path, GUARDED.replace("WHEN", when))


def test_a_guard_comparing_a_number_with_a_string_is_a_type_error(tmp_path: Path) -> None:
    problems = guarded(tmp_path, "output.confidence >= '0.8'")
    assert codes(problems) == ["guard-type"]
    assert "output.confidence" in problems[0].message or "overload" in problems[0].message
    lines = (tmp_path / "g.yaml").read_text().splitlines()
    assert "0.8" in lines[problems[0].line - 1]  # the guard's line


def test_guards_of_the_right_types_are_clean(tmp_path: Path) -> None:
    for when in (
        "output.confidence >= 0.8",
        "output.confidence >= 1",  # CEL orders int and double
        "output.done && output.plan != ''",
        "size(output.features) > 2 && output.features[0].name == 'x'",
        "visits.planner < 3 && thread.step > 1 && inputs.task != ''",
    ):
        assert guarded(tmp_path, when) == [], when


def test_type_errors_behind_a_short_circuit_and_in_arithmetic(tmp_path: Path) -> None:
    for when in (
        "output.done && output.confidence > 'high'",
        "!output.done || output.confidence > 'high'",
        "output.plan + 1 > 2",
        "output.features[0].size > 'big'",
        "output.done > 1",
    ):
        assert codes(guarded(tmp_path, when)) == ["guard-type"], when


def test_a_guard_that_gives_no_boolean(tmp_path: Path) -> None:
    problems = guarded(tmp_path, "output.confidence")
    assert codes(problems) == ["guard-type"]
    assert "true or false" in problems[0].message


# --------------------------------------------------------------------------- 3. a branch's status

PARALLEL = """
graph:
  $START:
    _: { role: planner, prompt: "Plan {{{$inputs.task}}}" }
  planner:
    _:
      parallel:
        - { role: writer, prompt: "Write {{{plan}}}" }
      join: { role: $END, prompt: "JOIN" }
"""


def test_status_inside_branches_is_the_branch_status(tmp_path: Path) -> None:
    join = "{{#$branches}}{{{role}}}: {{{status}}} {{{$body}}}{{/$branches}} after {{{$status}}}"
    assert lint_text(tmp_path, PARALLEL.replace("JOIN", join)) == []


def test_dollar_status_inside_branches_is_flagged(tmp_path: Path) -> None:
    join = "{{#$branches}}{{{role}}} said {{{$status}}}{{/$branches}}"
    problems = lint_text(tmp_path, PARALLEL.replace("JOIN", join))
    assert codes(problems) == ["branch-status"]
    assert "{{{status}}}" in problems[0].hint


# --------------------------------------------------------------------------- 4. misspelt keywords

SINGLE = """
graph:
  $START:
    _: { role: writer, prompt: "Write {{{$inputs.task}}}" }
  writer:
    _: { role: $END, prompt: "Done" }
"""


def with_key(tmp_path: Path, key: str) -> list[Problem]:
    roles = ROLES.replace("      required: [text]\n", f"      {key}: [text]\n")
    return [p for p in lint_text(tmp_path, SINGLE, roles) if p.code != "optional-var"]


def test_a_misspelt_keyword_is_an_error(tmp_path: Path) -> None:
    for key, meant in (("requird", "required"), ("Required", "required"), ("itmes", "items")):
        problems = with_key(tmp_path, key)
        assert [(p.code, p.severity) for p in problems] == [("misspelt-schema-keyword", "error")], (
            key
        )
        assert f"'{meant}'" in problems[0].hint, key


def test_a_distant_unknown_keyword_stays_a_warning(tmp_path: Path) -> None:
    for key in ("mustHave", "example", "nullable"):
        problems = with_key(tmp_path, key)
        assert [(p.code, p.severity) for p in problems] == [
            ("unknown-schema-keyword", "warning")
        ], key


# --------------------------------------------------------------------------- 5. messages

STATUSES = """
roles:
  writer:
    description: writes
    goal: You write.
    frontmatter:
      type: object
      properties:
        $status: { enum: [done, STATUS] }
        text: { type: string }
      required: [$status, text]
graph:
  $START:
    _: { role: writer, prompt: "Write {{{$inputs.task}}}" }
  writer:
    done: { role: $END, prompt: "Done" }
    EDGE
"""


def statuses(tmp_path: Path, status: str, edge: str) -> list[Problem]:
    return lint_text(tmp_path, STATUSES.replace("STATUS", status).replace("EDGE", edge), "")


def test_a_bad_outcome_is_one_problem(tmp_path: Path) -> None:
    problems = statuses(tmp_path, "failed", 'failed: { role: $END, prompt: "no", outcome: fail }')
    assert [(p.code, p.message) for p in problems] == [
        ("bad-type", "graph.writer.failed.outcome: must be 'success' or 'failure'")
    ]


def test_a_guarded_list_with_a_bad_key_is_one_problem(tmp_path: Path) -> None:
    edge = 'failed:\n      - { role: $END, prompt: "no", when: "true", outcom: failure }\n'
    edge += '      - { role: $END, prompt: "no" }'
    problems = statuses(tmp_path, "failed", edge)
    assert [p.code for p in problems] == ["unknown-key"]


def test_a_status_misspelt_in_the_schema_is_named_where_it_is(tmp_path: Path) -> None:
    # the schema's enum has the typo; the edge key is right: the hint must not tell the user to
    # copy the typo into the graph, and must say where the schema's spelling is
    problems = statuses(tmp_path, "faild", 'failed: { role: $END, prompt: "no" }')
    assert [p.code for p in problems] == ["unknown-status-edge"]
    hint = problems[0].hint
    assert "did you mean 'faild'" not in hint
    assert "'faild'" in hint and "schema" in hint
    lines = (tmp_path / "g.yaml").read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "faild" in text)
    assert f"line {line}" in hint


def test_the_spelling_the_file_uses_more_is_suggested(tmp_path: Path) -> None:
    # the schema misspells the status the role's output text and the graph spell right
    output = "    output: Reply failed when you cannot write it.\n"
    text = STATUSES.replace("    frontmatter:", output + "    frontmatter:", 1)
    edges = text.replace("STATUS", "faild").replace("EDGE", 'failed: { role: $END, prompt: "no" }')
    (problem,) = lint_text(tmp_path, edges, "")
    assert "did you mean 'failed' there?" in problem.hint
    # control: the graph's key is the typo; the schema and the output text spell it right
    edges = text.replace("STATUS", "failed").replace("EDGE", 'faild: { role: $END, prompt: "no" }')
    (problem,) = lint_text(tmp_path, edges, "")
    assert problem.hint.startswith("did you mean 'failed'?")


def test_tabs_in_yaml_get_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("name: g\ndescription: x\nroles:\n\twriter: {}\ngraph: {}\n")
    (problem,) = lint_graph_file(path)
    assert problem.code == "yaml-syntax" and (problem.line, problem.column) == (4, 1)
    assert "tabs" in problem.hint


def test_a_bad_indent_in_yaml_gets_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("name: g\nroles:\n  writer:\n    description: d\n   goal: g\ngraph: {}\n")
    (problem,) = lint_graph_file(path)
    assert problem.code == "yaml-syntax" and "indent" in problem.hint


FAN_OUT_GUARDED = """
graph:
  $START:
    _: { role: planner, prompt: "Plan {{{$inputs.task}}}" }
  planner:
    _:
      - when: "output.plan > 3"
        parallel: [{ role: writer, prompt: "Write {{{plan}}}" }]
        join: { role: $END, prompt: "x" }
      - { role: $END, prompt: "none" }
"""


def test_a_failing_guard_on_a_fan_out_names_no_none(tmp_path: Path) -> None:
    from orchestrator.definition.loader import load_graph  # the engine's part: only for this test
    from orchestrator.testing import reply, simulate

    assert codes(lint_text(tmp_path, FAN_OUT_GUARDED)) == ["guard-type"]  # and g.yaml is written
    graph = load_graph(tmp_path / "g.yaml")
    planned = reply(None, plan="p", confidence=0.5, done=True, features=[{"name": "a"}])
    trace = simulate(graph, [planned])
    assert trace.state == "suspended"
    assert "guard" in (trace.reason or "") and "None" not in (trace.reason or ""), trace.reason


# --------------------------------------------------------------------------- 7. graphs by name


def test_validate_takes_a_bundled_graph_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner  # the CLI, only for these tests

    from orchestrator.cli import cli

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["validate", "solve-issue"])
    assert result.exit_code == 0, result.output
    assert "ok: 1 file, no problems" in result.output
    (tmp_path / "graphs").mkdir()  # a name in ./graphs/ comes first, as for `run`
    (tmp_path / "graphs" / "solve-issue.yaml").write_text("name: solve-issue\n")
    result = CliRunner().invoke(cli, ["validate", "solve-issue"])
    assert result.exit_code == 1 and "graphs/solve-issue.yaml" in result.output


def test_an_unknown_graph_name_says_which_graphs_there_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner  # the CLI, only for these tests

    from orchestrator.cli import cli

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["validate", "solve-isue"])
    assert result.exit_code == 2
    assert "no graph named 'solve-isue'" in result.output
    assert "did you mean 'solve-issue'?" in result.output
