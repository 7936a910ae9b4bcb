"""Loading graph files and role libraries: what loads, and the problems (with positions) when not."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from orchestrator.definition.loader import load_graph, load_role
from orchestrator.definition.problems import GraphError, Problem

GRAPH = """\
name: tiny
description: one role
roles:
  worker:
    description: works
    goal: You work.
    frontmatter:
      type: object
      properties:
        $status: { enum: [done, failed] }
        note: { type: string }
      required: [$status]
graph:
  $START:
    _: { role: worker, prompt: "Do {{{$inputs.task}}}" }
  worker:
    done: { role: $END, prompt: "Done" }
    failed: { role: $END, prompt: "Failed" }
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load_problems(path: Path) -> list[Problem]:
    with pytest.raises(GraphError) as info:
        load_graph(str(path))
    return info.value.problems


def test_a_graph_loads_with_its_roles_and_source_positions(tmp_path: Path) -> None:
    graph = load_graph(str(write(tmp_path, "tiny.yaml", GRAPH)))
    assert graph.name == "tiny"
    assert graph.roles["worker"].name == "worker"
    assert graph.roles["worker"].contract.status_names == ["done", "failed"]
    assert graph.edge("worker", "done") is not None
    assert graph.position("graph", "worker", "failed", "prompt") == (
        str(tmp_path / "tiny.yaml"),
        18,
        35,
    )
    assert graph.position("roles", "worker", key=True)[1:] == (4, 3)


def test_defaults_apply_when_fields_are_left_out(tmp_path: Path) -> None:
    graph = load_graph(str(write(tmp_path, "tiny.yaml", GRAPH)))
    role = graph.roles["worker"]
    assert (role.max_repairs, role.memory, role.actor, role.tools) == (
        2,
        "session",
        "anthropic",
        [],
    )
    assert (graph.limits.max_steps, graph.limits.max_visits) == (50, 10)
    assert graph.input_schema["required"] == ["task"]


def test_yes_and_no_stay_strings(tmp_path: Path) -> None:
    text = GRAPH.replace("description: works", "description: yes")
    graph = load_graph(str(write(tmp_path, "tiny.yaml", text)))
    assert graph.roles["worker"].description == "yes"


def test_top_level_x_keys_hold_anchors_and_are_ignored(tmp_path: Path) -> None:
    text = "x-goal: &goal You work.\n" + GRAPH.replace("goal: You work.", "goal: *goal")
    graph = load_graph(str(write(tmp_path, "tiny.yaml", text)))
    assert graph.roles["worker"].goal == "You work."


def test_a_byte_order_mark_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + GRAPH.encode())
    assert load_graph(str(path)).name == "tiny"


def test_a_graph_is_found_by_name_in_the_graphs_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "graphs/tiny.yaml", GRAPH)
    monkeypatch.chdir(tmp_path)
    assert load_graph("tiny").name == "tiny"


def test_an_unknown_graph_name_is_unreadable_with_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "graphs/tiny.yaml", GRAPH)
    monkeypatch.chdir(tmp_path)
    (p,) = load_problems(Path("tinny"))
    assert p.code == "unreadable"
    assert "tiny" in p.hint


def test_yaml_syntax_error_has_a_line(tmp_path: Path) -> None:
    (p,) = load_problems(write(tmp_path, "tiny.yaml", GRAPH.replace("note: {", "note: [")))
    assert p.code == "yaml-syntax"
    assert p.line >= 11


@pytest.mark.parametrize("text", ["", "just a string\n", "- a list\n"])
def test_a_file_that_is_not_a_mapping(tmp_path: Path, text: str) -> None:
    (p,) = load_problems(write(tmp_path, "tiny.yaml", text))
    assert p.code == "bad-type"


def test_unknown_key_points_at_the_key_and_suggests(tmp_path: Path) -> None:
    text = GRAPH.replace("    goal: You work.", "    goal: You work.\n    proceedure: steps")
    (p,) = load_problems(write(tmp_path, "tiny.yaml", text))
    assert p.code == "unknown-key"
    assert (p.line, p.column) == (7, 5)
    assert p.hint == "did you mean 'procedure'?"


def test_missing_field_names_the_owner(tmp_path: Path) -> None:
    text = GRAPH.replace("    goal: You work.\n", "")
    (p,) = load_problems(write(tmp_path, "tiny.yaml", text))
    assert p.code == "missing-field"
    assert "roles.worker" in p.message and "goal" in p.message


def test_bad_type(tmp_path: Path) -> None:
    text = GRAPH.replace("    goal: You work.", "    goal: You work.\n    max_repairs: lots")
    (p,) = load_problems(write(tmp_path, "tiny.yaml", text))
    assert p.code == "bad-type"
    assert p.line == 7


def test_bad_actor(tmp_path: Path) -> None:
    text = GRAPH.replace("    goal: You work.", "    goal: You work.\n    actor: robot")
    (p,) = load_problems(write(tmp_path, "tiny.yaml", text))
    assert p.code == "bad-type"
    assert "command" in p.message


def test_unknown_tool(tmp_path: Path) -> None:
    text = GRAPH.replace("    goal: You work.", "    goal: You work.\n    tools: [read, shel]")
    (p,) = load_problems(write(tmp_path, "tiny.yaml", text))
    assert p.code == "unknown-tool"
    assert p.hint == "did you mean 'shell'?"


def test_several_problems_are_reported_together(tmp_path: Path) -> None:
    text = GRAPH.replace("description: one role\n", "").replace("goal: You work.", "gaol: x")
    found = load_problems(write(tmp_path, "tiny.yaml", text))
    assert {p.code for p in found} == {"missing-field", "unknown-key"}


# --------------------------------------------------------------------------- role libraries

WORKER_ROLE = """\
description: works
goal: You work.
frontmatter:
  type: object
  properties:
    $status: { enum: [done, failed] }
  required: [$status]
"""


def library_graph(role_body: str) -> str:
    head, _, tail = GRAPH.partition("  worker:\n")
    _, _, edges = tail.partition("graph:\n")
    return f"{head}  worker:\n{textwrap.indent(role_body, '    ')}graph:\n{edges}"


def test_extends_reads_the_sibling_roles_folder_and_overrides(tmp_path: Path) -> None:
    write(tmp_path, "roles/worker-base.yaml", WORKER_ROLE)
    path = write(
        tmp_path, "graphs/tiny.yaml", library_graph("extends: worker-base\ngoal: You work hard.\n")
    )
    role = load_graph(str(path)).roles["worker"]
    assert role.goal == "You work hard."
    assert role.description == "works"
    assert role.contract.status_names == ["done", "failed"]


def test_extends_a_markdown_role_whose_body_is_the_procedure(tmp_path: Path) -> None:
    write(tmp_path, "roles/worker-base.md", f"---\n{WORKER_ROLE}---\n1. Work.\n2. Report.\n")
    path = write(tmp_path, "graphs/tiny.yaml", library_graph("extends: worker-base\n"))
    role = load_graph(str(path)).roles["worker"]
    assert role.procedure == "1. Work.\n2. Report.\n"


def test_unknown_extends_suggests_a_library_role(tmp_path: Path) -> None:
    write(tmp_path, "roles/worker-base.yaml", WORKER_ROLE)
    path = write(tmp_path, "graphs/tiny.yaml", library_graph("extends: worker-bsae\n"))
    (p,) = load_problems(path)
    assert p.code == "unknown-extends"
    assert p.hint == "did you mean 'worker-base'?"


def test_an_extends_cycle_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "roles/a.yaml", "extends: b\n")
    write(tmp_path, "roles/b.yaml", "extends: a\n")
    path = write(tmp_path, "graphs/tiny.yaml", library_graph("extends: a\n"))
    found = load_problems(path)
    assert "unknown-extends" in {p.code for p in found}
    assert any("cycle" in p.message for p in found)


def test_a_library_role_field_error_points_into_the_library_file(tmp_path: Path) -> None:
    lib = write(tmp_path, "roles/worker-base.yaml", WORKER_ROLE + "max_repairs: many\n")
    path = write(tmp_path, "graphs/tiny.yaml", library_graph("extends: worker-base\n"))
    (p,) = load_problems(path)
    assert p.code == "bad-type"
    assert p.file == str(lib)
    assert p.line == 8


def test_load_role_checks_a_role_file_on_its_own(tmp_path: Path) -> None:
    role = load_role(write(tmp_path, "roles/worker.yaml", WORKER_ROLE))
    assert role.name == "worker"
    with pytest.raises(GraphError) as info:
        load_role(write(tmp_path, "roles/broken.yaml", WORKER_ROLE + "gola: x\n"))
    (p,) = info.value.problems
    assert p.code == "unknown-key"
    assert p.hint == "did you mean 'goal'?"


def test_markdown_role_positions_count_from_the_top_of_the_file(tmp_path: Path) -> None:
    text = f"---\n{WORKER_ROLE}max_tokens: -5\n---\nBody\n"
    with pytest.raises(GraphError) as info:
        load_role(write(tmp_path, "roles/worker.md", text))
    (p,) = info.value.problems
    assert p.code == "bad-type"
    assert p.line == 9
