"""Hostile and malformed files meet `orchestrator validate` and `load_graph`: each gets a clear
problem with a file, line and column, quickly; never a traceback, a hang or a crash.

Inputs that once crashed the interpreter (deep nesting overflowed libyaml's C stack) run in a
real process, so a regression fails one test instead of killing the test run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli
from orchestrator.definition import yamlpos
from orchestrator.definition.loader import load_graph
from orchestrator.definition.problems import GraphError, Problem

GRAPH = """\
name: g
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
    path.write_text(text, encoding="utf-8")
    return path


def validate(*args: str) -> tuple[int, list[dict[str, Any]]]:
    """`orchestrator validate ARGS --format json` in this process: exit code and problems."""
    result = CliRunner().invoke(cli, ["validate", *args, "--format", "json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.output)["problems"]


def validate_process(path: Path) -> tuple[int, list[dict[str, Any]]]:
    """The same in a real process, for inputs that could crash or hang the interpreter."""
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "validate", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard, far above the second or so these take
        cwd=path.parent,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), (done.returncode, done.stderr)
    return done.returncode, json.loads(done.stdout)["problems"]


def load_problems(path: Path) -> list[Problem]:
    with pytest.raises(GraphError) as info:
        load_graph(str(path))
    return info.value.problems


# --------------------------------------------------------------------------- a. YAML limits


def alias_bomb(levels: int) -> str:
    """The "billion laughs": each anchor names a list of nine aliases of the one before."""
    lines = [
        "name: bomb",
        "description: d",
        "x-a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]",
    ]
    for i in range(1, levels + 1):
        prev, name = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"x-{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    return "\n".join([*lines, "roles: {}", "graph: {}", ""])


@pytest.mark.parametrize("levels", [7, 9])
def test_an_alias_bomb_is_refused_at_the_alias_that_expands_too_far(
    tmp_path: Path, levels: int
) -> None:
    path = write(tmp_path, "bomb.yaml", alias_bomb(levels))
    code, problems = validate_process(path)
    assert code == 1
    (p,) = problems
    assert (p["code"], p["severity"], p["file"]) == ("yaml-limit", "error", str(path))
    # `&e` on line 7 would expand to 66,430 values: nine aliases of `&d` (line 6), each 7,381
    assert (p["line"], p["column"]) == (7, 6)
    assert "alias bomb" in p["message"] and "anchor on line 6" in p["message"]


@pytest.mark.parametrize(
    "text",
    [
        "graph: " + "[" * 100_000 + "]" * 100_000,
        "graph: " + "{a: " * 30_000 + "1" + "}" * 30_000,
        "graph:\n" + "".join(" " * i + "-\n" for i in range(3_000)),  # 4.5 MB
        "graph:\n" + "- " * 30_000 + "x",
    ],
    ids=["flow-sequences", "flow-mappings", "block-sequences", "compact-sequences"],
)
def test_deep_nesting_is_refused_not_a_crash(tmp_path: Path, text: str) -> None:
    code, problems = validate_process(write(tmp_path, "deep.yaml", text))
    assert code == 1
    (p,) = problems
    assert p["code"] == "yaml-limit"
    assert "more than 200 levels" in p["message"]


def test_nesting_a_little_too_deep_is_refused_at_the_level_past_the_limit(tmp_path: Path) -> None:
    (p,) = load_problems(write(tmp_path, "g.yaml", "graph: " + "[" * 300 + "]" * 300 + "\n"))
    assert (p.code, p.line, p.column) == ("yaml-limit", 1, 8 + 200)


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path: Path) -> None:
    (p,) = load_problems(write(tmp_path, "g.yaml", GRAPH + "x-loop: &loop\n  again: *loop\n"))
    assert p.code == "yaml-limit"
    assert (p.line, p.column) == (20, 3)
    assert "expand forever" in p.message


def test_a_file_of_too_many_values_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(yamlpos, "MAX_VALUES", 100)
    (p,) = load_problems(write(tmp_path, "g.yaml", GRAPH + f"x-many: {list(range(100))}\n"))
    assert p.code == "yaml-limit"
    assert "more than 100 values" in p.message


def test_anchors_aliases_and_merge_keys_still_load(tmp_path: Path) -> None:
    text = GRAPH.replace(
        "roles:\n  worker:\n",
        "x-base: &base\n  description: works\n  goal: You work.\n  memory: fresh\n"
        "roles:\n  worker:\n    <<: *base\n",
    ).replace("    description: works\n    goal: You work.\n", "    goal: You work hard.\n", 1)
    path = write(tmp_path, "g.yaml", text)
    graph = load_graph(str(path))
    role = graph.roles["worker"]
    assert (role.description, role.goal, role.memory) == ("works", "You work hard.", "fresh")
    # the overriding key is where the value comes from, not the anchor's
    assert graph.position("roles", "worker", "goal")[1] == 10


def test_a_value_python_cannot_hold_is_a_problem(tmp_path: Path) -> None:
    path = write(tmp_path, "g.yaml", GRAPH + "x-big: " + "9" * 5000 + "\nx-day: 2024-13-45\n")
    code, problems = validate(str(path))
    assert code == 1
    (p,) = problems
    assert (p["code"], p["line"], p["column"]) == ("yaml-syntax", 19, 8)
    assert "cannot read the value" in p["message"]


# --------------------------------------------------------------------------- b. duplicate keys


def test_duplicate_keys_in_a_graph_are_errors_naming_both_lines(tmp_path: Path) -> None:
    text = GRAPH.replace("description: one role\n", "description: one role\ndescription: two\n")
    text = text.replace("    goal: You work.\n", "    goal: You work.\n    goal: You rest.\n")
    text = text.replace(
        '    failed: { role: $END, prompt: "Failed" }\n',
        '    failed: { role: $END, prompt: "Failed" }\n    done: { role: $END, prompt: "Again" }\n',
    )
    path = write(tmp_path, "g.yaml", text)
    code, problems = validate(str(path))
    assert code == 1
    found = [(p["code"], p["line"], p["column"], p["message"]) for p in problems]
    assert found == [
        (
            "duplicate-key",
            3,
            1,
            "duplicate key 'description' in the top level: first on line 2, again on line 3",
        ),
        (
            "duplicate-key",
            8,
            5,
            "duplicate key 'goal' in roles.worker: first on line 7, again on line 8",
        ),
        (
            "duplicate-key",
            21,
            5,
            "duplicate key 'done' in graph.worker: first on line 19, again on line 21",
        ),
    ]
    assert all(p["severity"] == "error" and p["file"] == str(path) for p in problems)


def test_duplicate_keys_in_role_files_count_lines_from_the_top_of_the_file(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        "roles/a.md",
        "---\ndescription: d\ngoal: g\ngoal: h\nfrontmatter: {}\n---\nBody\n",
    )
    write(
        tmp_path,
        "roles/b.yaml",
        "description: d\ngoal: g\nfrontmatter: {type: object, type: string}\n",
    )
    code, problems = validate(str(tmp_path / "roles"))
    assert code == 1
    found = [(Path(p["file"]).name, p["code"], p["line"], p["column"]) for p in problems]
    assert found == [("a.md", "duplicate-key", 4, 1), ("b.yaml", "duplicate-key", 3, 29)]
    assert "first on line 3, again on line 4" in problems[0]["message"]


def test_a_duplicate_key_in_a_library_role_is_reported_from_the_graph(tmp_path: Path) -> None:
    write(tmp_path, "roles/lib.yaml", "description: d\ngoal: g\ngoal: h\nfrontmatter: {}\n")
    text = GRAPH.replace("    description: works\n    goal: You work.\n", "    extends: lib\n")
    path = write(tmp_path, "graphs/g.yaml", text)
    (p,) = load_problems(path)  # and no missing-field for what the library role would give
    assert (p.code, p.file, p.line) == ("duplicate-key", str(tmp_path / "roles" / "lib.yaml"), 3)


def test_merged_keys_that_the_mapping_overrides_are_not_duplicates(tmp_path: Path) -> None:
    text = GRAPH + "x-base: &base { a: 1, b: 2 }\nx-more: { <<: *base, a: 3 }\n"
    assert load_graph(str(write(tmp_path, "g.yaml", text))).name == "g"


# --------------------------------------------------------------------------- f. YAML syntax


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        # a key without its colon: libyaml notices only when the next line starts
        (
            "name: g\ndescription the graph\nroles: {}\n",
            (2, 22),
            "could not find expected ':' (while scanning a simple key "
            "that started at line 2, column 1)",
        ),
        # the example of the hardening issue: the block mapping's start is in the message
        (
            "name: g\nroles:\n  a:\n    goal: x\n   bad: 1\ngraph: {}\n",
            (5, 4),
            "did not find expected key (while parsing a block mapping "
            "that started at line 3, column 3)",
        ),
        # an unclosed quote or bracket: at the end of the last line, not on a line past the end
        (
            'name: g\ndescription: "the graph\n\n',
            (2, 24),
            "found unexpected end of stream (while scanning a quoted scalar "
            "that started at line 2, column 14)",
        ),
        (
            "name: g\nroles: [a, b\n",
            (2, 13),
            "did not find expected ',' or ']' (while parsing a flow sequence "
            "that started at line 2, column 8)",
        ),
        # a mistake at the token the parser stopped on stays there
        (
            "name: g\nroles:\n  a: 1\n\tb: 2\n",
            (4, 1),
            "found a tab character that violates indentation",
        ),
    ],
    ids=["missing-colon", "block-mapping", "open-quote", "open-bracket", "tab"],
)
def test_a_yaml_syntax_error_is_placed_at_the_mistake_with_its_context(
    tmp_path: Path, text: str, where: tuple[int, int], words: str
) -> None:
    path = write(tmp_path, "g.yaml", text)
    code, problems = validate(str(path))
    assert code == 1
    (p,) = problems
    assert (p["code"], p["file"], (p["line"], p["column"])) == ("yaml-syntax", str(path), where)
    assert p["message"].startswith("YAML syntax: " + words)


def test_a_syntax_error_in_role_frontmatter_counts_lines_from_the_top_of_the_file(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path, "roles/r.md", "---\ndescription: d\ngoal y\nfrontmatter: {}\n---\nBody\n"
    )
    code, (p,) = validate(str(path))
    assert (p["code"], p["line"], p["column"]) == ("yaml-syntax", 3, 7)
    assert "simple key that started at line 3, column 1" in p["message"]


# --------------------------------------------------------------------------- g. Mustache syntax


def graph_with_prompts(start_prompt: str, done_prompt: str) -> str:
    return GRAPH.replace('"Do {{{$inputs.task}}}"', start_prompt).replace('"Done"', done_prompt)


def test_a_mustache_error_in_a_block_prompt_is_at_its_tag_in_the_file(tmp_path: Path) -> None:
    # standalone section tags swallow their newlines, which made chevron count a line short
    edge = (
        "_:\n"
        "      role: worker\n"
        "      prompt: |\n"
        "        Plan:\n"
        "        {{#$inputs.task}}\n"
        "        Task given.\n"
        "        {{/task}}\n"
    )
    text = GRAPH.replace('_: { role: worker, prompt: "Do {{{$inputs.task}}}" }\n', edge)
    path = write(tmp_path, "g.yaml", text)
    code, problems = validate(str(path))
    (p,) = problems
    assert (p["code"], p["line"], p["column"]) == ("template-syntax", 21, 9)
    assert text.splitlines()[p["line"] - 1][p["column"] - 1 :] == "{{/task}}"
    assert p["message"] == (
        "$START._.prompt: '{{/task}}' closes a section, but the open one is '{{#$inputs.task}}'"
    )


@pytest.mark.parametrize(
    ("prompt", "column", "message"),
    [
        ('"Done {{/x}} now"', 39, "'{{/x}}' closes a section that was never opened"),
        ('"Done {{#x}} now"', 39, "the section '{{#x}}' is never closed with '{{/x}}'"),
        ("'Done {{{x}} now'", 39, "'{{{x}}' is missing its third closing brace"),
        ('"Done {{x now"', 39, "'{{x now' is never closed with '}}'"),
    ],
)
def test_a_mustache_error_in_a_one_line_prompt_is_at_its_tag(
    tmp_path: Path, prompt: str, column: int, message: str
) -> None:
    path = write(tmp_path, "g.yaml", graph_with_prompts('"Do {{{$inputs.task}}}"', prompt))
    code, problems = validate(str(path))
    assert code == 1
    (p,) = problems
    assert (p["code"], p["line"], p["column"]) == ("template-syntax", 17, column)
    assert p["message"] == f"worker.done.prompt: {message}"
    assert "line" not in p["message"]


# --------------------------------------------------------------------------- h. library roles

LIBRARY_ROLE = "description: d\ngoal: g\ntools: [read, browse]\nfrontmatter: {type: object}\n"


def library_project(root: Path, graphs: int = 1) -> None:
    """roles/lib.yaml with a bad tool, and graphs whose one role extends it."""
    write(root, "roles/lib.yaml", LIBRARY_ROLE)
    for i in range(graphs):
        text = GRAPH.replace("name: g\n", f"name: g{i}\n").replace(
            "    description: works\n    goal: You work.\n", "    extends: lib\n"
        )
        write(root, f"graphs/g{i}.yaml", text)


@pytest.mark.parametrize("args", [(), ("graphs", "roles"), ("graphs",), ("roles/lib.yaml", ".")])
def test_a_bad_tool_in_a_library_role_is_reported_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    library_project(tmp_path, graphs=2)
    monkeypatch.chdir(tmp_path)
    code, problems = validate(*args)
    assert code == 1
    (p,) = problems
    assert (p["code"], p["file"], p["line"], p["column"]) == (
        "unknown-tool",
        "roles/lib.yaml",
        3,
        15,
    )
    assert "unknown tool set 'browse'" in p["message"]


def test_a_bad_tool_in_a_role_file_on_its_own_is_unknown_tool(tmp_path: Path) -> None:
    path = write(tmp_path, "roles/lib.yaml", LIBRARY_ROLE)
    code, (p,) = validate(str(path))
    assert (p["code"], p["message"], p["hint"]) == (
        "unknown-tool",
        "role 'lib' asks for unknown tool set 'browse'",
        "tool sets: read, edit, shell",
    )


# --------------------------------------------------------------------------- i. reserved fields


def test_a_reserved_field_name_points_at_the_field(tmp_path: Path) -> None:
    text = GRAPH.replace(
        "        note: { type: string }\n",
        "        note: { type: string }\n        $note: { type: string }\n",
    )
    path = write(tmp_path, "g.yaml", text)
    code, (p,) = validate(str(path))
    assert (p["code"], p["line"], p["column"]) == ("reserved-name", 12, 9)
    assert text.splitlines()[11].strip().startswith("$note:")


def test_a_reserved_field_name_in_a_variant_points_at_the_field(tmp_path: Path) -> None:
    role = (
        "description: d\ngoal: g\nfrontmatter:\n  oneOf:\n"
        "    - properties: { $status: { const: a } }\n"
        "    - properties:\n        $status: { const: b }\n        $why: { type: string }\n"
    )
    path = write(tmp_path, "roles/r.yaml", role)
    code, (p,) = validate(str(path))
    assert (p["code"], p["line"], p["column"]) == ("reserved-name", 8, 9)
    assert "'$why'" in p["message"]


def test_a_lint_problem_in_a_library_role_points_into_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = "description: d\ngoal: g\nfrontmatter:\n  properties:\n    $note: { type: string }\n"
    write(tmp_path, "roles/lib.yaml", lib)
    write(tmp_path, "roles/child.yaml", "extends: lib\ngoal: better\n")
    graph = (
        "name: g\ndescription: d\nroles:\n  worker: { extends: child }\n"
        'graph:\n  $START: { _: { role: worker, prompt: "go" } }\n'
        '  worker: { _: { role: $END, prompt: "done" } }\n'
    )
    write(tmp_path, "graphs/g.yaml", graph)
    monkeypatch.chdir(tmp_path)
    for args in [(), ("graphs",)]:
        # the graph, the library role and the role that extends it all meet the field `$note`
        code, problems = validate(*args)
        found = [(p["code"], p["file"], p["line"], p["column"]) for p in problems]
        assert found == [("reserved-name", "roles/lib.yaml", 5, 5)], args


# --------------------------------------------------------------------------- c. external $ref

EXTERNAL_REFS = [
    "https://example.com/schemas/plan.json",
    "http://example.com/plan.json#/$defs/plan",
    "file:///etc/passwd",
    "plan.json",
    "../schemas/plan.yaml#/properties/x",
]


@pytest.mark.parametrize("ref", EXTERNAL_REFS)
def test_a_ref_outside_the_schema_is_an_error_at_the_ref(tmp_path: Path, ref: str) -> None:
    text = GRAPH.replace("        note: { type: string }\n", f"        note: {{ $ref: '{ref}' }}\n")
    path = write(tmp_path, "g.yaml", text)
    code, problems = validate(str(path))
    assert code == 1
    (p,) = problems
    assert (p["code"], p["severity"], p["line"], p["column"]) == ("external-ref", "error", 11, 23)
    assert p["message"] == (
        f"role 'worker': `$ref: {ref}` points outside this schema, and schemas are never fetched"
    )


def test_an_external_ref_in_inputs_or_a_role_file_is_reported_too(tmp_path: Path) -> None:
    inputs = (
        "inputs:\n  type: object\n  properties:\n    task: { $ref: 'https://x.org/t' }\n"
        "  required: [task]\n"
    )
    path = write(tmp_path, "g.yaml", GRAPH.replace("roles:\n", inputs + "roles:\n", 1))
    code, (p,) = validate(str(path))
    assert (p["code"], p["line"], p["column"], p["message"][:8]) == (
        "external-ref",
        6,
        19,
        "inputs: ",
    )
    role = write(
        tmp_path,
        "roles/r.md",
        "---\ndescription: d\ngoal: g\nfrontmatter:\n  items: { $dynamicRef: 'x.json' }\n---\n",
    )
    code, (p,) = validate(str(role))
    assert (p["code"], p["line"], p["column"]) == ("external-ref", 5, 25)


def test_refs_inside_the_schema_are_fine(tmp_path: Path) -> None:
    text = GRAPH.replace(
        "        note: { type: string }\n",
        "        note: { $ref: '#/$defs/note' }\n"
        "        more: { $ref: 'https://example.com/s#/$defs/note' }\n"
        "        again: { $ref: 'other#/$defs/note' }\n"
        "      $defs:\n"
        "        note: { $id: 'https://example.com/other', type: string }\n",
    ).replace("      type: object\n", "      type: object\n      $id: https://example.com/s\n")
    code, problems = validate(str(write(tmp_path, "g.yaml", text)))
    assert (code, problems) == (0, [])


# --------------------------------------------------------------------------- d. schema keywords


def test_a_misspelled_schema_keyword_is_an_error_with_a_did_you_mean(tmp_path: Path) -> None:
    text = GRAPH.replace("      required: [$status]\n", "      requird: [$status, note]\n")
    path = write(tmp_path, "g.yaml", text)
    code, problems = validate(str(path))
    assert code == 1  # an error: the contract would silently not require what it lists
    (p,) = problems
    assert (p["code"], p["severity"], p["line"], p["column"]) == (
        "misspelt-schema-keyword",
        "error",
        12,
        7,
    )
    assert p["message"] == (
        "role 'worker': 'requird' is not a JSON Schema keyword, so it is ignored and the "
        "contract does not say what it seems to"
    )
    assert p["hint"] == "did you mean 'required'?"


@pytest.mark.parametrize(
    ("schema", "keyword", "hint"),
    [
        # nested: in a property, an items schema, a oneOf variant, under $defs
        ("{ properties: { a: { type: string, maxLenght: 3 } } }", "maxLenght", "'maxLength'"),
        ("{ properties: { a: { items: { enmu: [x] } } } }", "enmu", "'enum'"),
        ("{ oneOf: [ { properties: { $status: { const: a } }, requried: [] } ] }", "requried", ""),
        ("{ $defs: { d: { nullable: true } }, $ref: '#/$defs/d' }", "nullable", "type: [string"),
        ("{ dependencies: { a: [b] } }", "dependencies", "dependentRequired"),
        ("{ widget: textarea }", "widget", "`x-`"),
    ],
)
def test_unknown_keywords_are_found_wherever_a_schema_is(
    tmp_path: Path, schema: str, keyword: str, hint: str
) -> None:
    role = write(tmp_path, "roles/r.yaml", f"frontmatter: {schema}\ndescription: d\ngoal: g\n")
    code, problems = validate(str(role))
    (p,) = [
        p for p in problems if p["code"] in ("unknown-schema-keyword", "misspelt-schema-keyword")
    ]
    # a typo of a keyword is an error; an unknown key that resembles none stays a warning
    typo = keyword in ("maxLenght", "enmu", "requried")
    assert p["code"] == ("misspelt-schema-keyword" if typo else "unknown-schema-keyword")
    assert (p["line"], p["column"]) == (1, len("frontmatter: ") + schema.index(keyword) + 1)
    assert f"'{keyword}'" in p["message"]
    assert hint in p["hint"]


def test_what_is_not_a_keyword_is_not_checked(tmp_path: Path) -> None:
    schema = (
        "{ type: object, x-ui: { widget: textarea }, title: T,"
        " properties: { requird: { type: string, default: { enmu: 1 } }, $status: { const: a } },"
        " required: [$status], examples: [{ nope: 1 }], enum: [{ typo: 1 }],"
        " definitions: { d: { type: string } } }"
    )
    role = write(tmp_path, "roles/r.yaml", f"description: d\ngoal: g\nfrontmatter: {schema}\n")
    assert validate(str(role)) == (0, [])


def test_a_schema_of_another_draft_is_not_checked_for_keywords(tmp_path: Path) -> None:
    schema = "{ $schema: 'http://json-schema.org/draft-07/schema#', dependencies: { a: [b] } }"
    role = write(tmp_path, "roles/r.yaml", f"description: d\ngoal: g\nfrontmatter: {schema}\n")
    assert validate(str(role)) == (0, [])


# --------------------------------------------------------------------------- e. type names

TYPE_HINT = "JSON Schema types: string, number, integer, boolean, array, object, null"


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("int", "integer"),
        ("str", "string"),
        ("bool", "boolean"),
        ("float", "number"),
        ("strng", "string"),
        ("Object", "object"),
        ("list", "array"),
    ],
)
def test_a_wrong_type_name_gets_the_valid_types_and_a_did_you_mean(
    tmp_path: Path, written: str, meant: str
) -> None:
    text = GRAPH.replace("note: { type: string }", f"note: {{ type: {written} }}")
    path = write(tmp_path, "g.yaml", text)
    code, problems = validate(str(path))
    assert code == 1
    (p,) = problems
    assert (p["code"], p["line"], p["column"]) == ("invalid-json-schema", 11, 23)
    assert p["message"] == (
        f"role 'worker': invalid JSON Schema: '{written}' is not a JSON Schema type"
    )
    assert p["hint"] == f"did you mean '{meant}'? {TYPE_HINT}"


def test_wrong_type_names_in_a_list_in_inputs_and_in_role_files(tmp_path: Path) -> None:
    inputs = (
        "inputs:\n  type: object\n  properties:\n    task: { type: [string, nul] }\n"
        "  required: [task]\n"
    )
    path = write(tmp_path, "g.yaml", GRAPH.replace("roles:\n", inputs + "roles:\n", 1))
    code, (p,) = validate(str(path))
    assert (p["code"], p["line"], p["message"]) == (
        "invalid-json-schema",
        6,
        "inputs: invalid JSON Schema: 'nul' is not a JSON Schema type",
    )
    assert p["hint"] == f"did you mean 'null'? {TYPE_HINT}"
    role = write(tmp_path, "roles/r.yaml", "description: d\ngoal: g\nfrontmatter: { type: 7 }\n")
    code, (p,) = validate(str(role))
    assert (p["message"], p["hint"]) == (
        "role 'r': invalid JSON Schema: 7 is not a JSON Schema type",
        TYPE_HINT,
    )


def test_a_file_past_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = write(tmp_path, "g.yaml", GRAPH + "x-filler: " + "x" * 10_000_001 + "\n")
    code, (p,) = validate(str(path))
    assert (code, p["code"], p["line"], p["column"]) == (1, "yaml-limit", 1, 1)
    size = path.stat().st_size
    assert p["message"] == f"the file has {size:,} bytes, more than the 10,000,000 it may have"
