"""No input makes `orchestrator validate` print a traceback.

Hypothesis mutates valid graph files (deletes keys, changes types, renames statuses, corrupts
templates, inserts random YAML) and writes random text and bytes, then runs the real command.
Every run must end with parseable output, an exit code that matches the problems it printed, and
no internal-error; every mutation known to break a graph must be reported. Hostile files (alias
bombs, deep nesting, huge numbers, hostile regular expressions, deeply nested schemas) run in a
process of their own with a timeout and a memory cap.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from orchestrator.cli import cli

CASES = Path(__file__).parent / "lint_cases"
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "uwf"

SMALL = """
name: fuzz
description: a small graph to break
inputs: { type: object, properties: { issue: { type: string } }, required: [issue] }
roles:
  planner:
    description: plans
    goal: You plan.
    frontmatter:
      oneOf:
        - { properties: { $status: { const: ready }, plan: { type: string } }, required: [$status, plan] }
        - { properties: { $status: { const: stuck }, why: { type: string } }, required: [$status, why] }
  doer:
    description: does
    goal: You do.
    frontmatter: { type: object, properties: { result: { type: array } }, required: [result] }
graph:
  $START:
    _: { role: planner, prompt: "Plan {{{$inputs.issue}}}" }
  planner:
    ready: { role: doer, prompt: "Do {{{plan}}}", location: "w/{{{$thread.id}}}" }
    stuck: { role: $END, prompt: "Stuck: {{{why}}}" }
  doer:
    _: { role: $END, prompt: "{{#result}}- {{{.}}}\\n{{/result}} after {{{$steps.planner.plan}}}" }
"""

# Fan-out edges (docs/format.md section 15): `parallel` with a join into a role, and `for_each`.
FANOUT = """
name: fuzz
description: a graph that fans out
roles:
  planner:
    description: plans
    goal: You plan.
    frontmatter:
      type: object
      properties: { plan: { type: string }, parts: { type: array }, count: { type: integer } }
      required: [plan, parts, count]
  writer:
    description: writes
    goal: You write.
    frontmatter: { type: object, properties: { text: { type: string } }, required: [text] }
  checker:
    description: checks
    goal: You check.
    frontmatter: { type: object, properties: { $status: { enum: [ok, bad] } }, required: [$status] }
  editor:
    description: edits
    goal: You edit.
    frontmatter: { type: object }
graph:
  $START:
    _: { role: planner, prompt: "Plan {{{$inputs.task}}}" }
  planner:
    _:
      parallel:
        - { role: writer, prompt: "Write {{{plan}}}" }
        - { role: checker, prompt: "Check {{{plan}}}" }
      join: { role: editor, prompt: "{{#$branches}}{{{$body}}}{{/$branches}} {{{$steps.writer.text}}}" }
  editor:
    _:
      for_each: $steps.planner.parts
      as: part
      role: writer
      prompt: "Write {{{part}}}"
      join: { role: $END, ending: written, prompt: "{{#$branches}}{{{$body}}}{{/$branches}}" }
"""


def _bases() -> list[dict[str, Any]]:
    texts = [SMALL, FANOUT, (CASES / "clean-reference.yaml").read_text(encoding="utf-8")]
    for name in ("examples/debate.yaml", "examples/solve-issue.yaml"):
        if (CORPUS / name).is_file():
            texts.append((CORPUS / name).read_text(encoding="utf-8"))
    return [yaml.safe_load(text) for text in texts]


BASES = _bases()
FUZZ = settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Random YAML values: scalars, lists and mappings, a few levels deep.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**12),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["$END", "$START", "$SUSPEND", "_", "{{#x}}", "{{{plan}}}", "yes", "~"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
TEMPLATE_TEXT = st.text(alphabet="{}#^/&!=.$ab_ \n>", max_size=30)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside the data."""
    found: list[tuple[Any, ...]] = []
    children: list[tuple[Any, Any]] = []
    if isinstance(node, dict):
        children = list(node.items())
    elif isinstance(node, list):
        children = list(enumerate(node))
    for key, child in children:
        found.append((*prefix, key))
        found.extend(_paths(child, (*prefix, key)))
    return found


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        data = data[key]
    return data


def _copy(data: Any) -> Any:
    return json.loads(json.dumps(data))


def _prompts(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (source, status)
        for source, edges in data["graph"].items()
        for status, edge in edges.items()
        if isinstance(edge, dict) and "prompt" in edge
    ]


def validate(path: Path, fmt: str = "json") -> tuple[int, list[dict[str, Any]]]:
    """Run the real command; check it ended cleanly and its exit code matches its problems."""
    result = CliRunner().invoke(cli, ["validate", str(path), "--format", fmt])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"validate raised on {path}") from result.exception
    assert "Traceback" not in result.output
    if fmt == "json":
        problems: list[dict[str, Any]] = json.loads(result.output)["problems"]
    else:
        problems = [
            {
                "code": line.split("[")[1].split("]")[0],
                "severity": line.split(": ")[1].split("[")[0],
            }
            for line in result.output.splitlines()
            if "]: " in line and not line.startswith("    hint:")
        ]
    codes = {p["code"] for p in problems}
    assert "internal-error" not in codes, problems
    if "unreadable" in codes:
        assert result.exit_code == 2
    elif any(p["severity"] == "error" for p in problems):
        assert result.exit_code == 1
    else:
        assert result.exit_code == 0
    if fmt == "json":
        assert all(p["line"] >= 1 and p["column"] >= 1 for p in problems)
    return result.exit_code, problems


def write_data(folder: Path, data: Any) -> Path:
    path = folder / "fuzz.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _rename(data: dict[str, Any]) -> None:
    """Name the graph after the file, so name-mismatch does not mask the mutation."""
    if isinstance(data, dict) and isinstance(data.get("name"), str):
        data["name"] = "fuzz"


def test_the_unmutated_bases_are_clean(folder: Path) -> None:
    for base in BASES:
        data = _copy(base)
        _rename(data)
        code, problems = validate(write_data(folder, data))
        assert [p for p in problems if p["severity"] == "error"] == []


# --------------------------------------------------------------------------- breaking mutations

REQUIRED = [("name",), ("description",), ("roles",), ("graph",)]


@FUZZ
@given(base=st.sampled_from(BASES), data=st.data())
def test_deleting_a_required_key_is_reported(
    folder: Path, base: dict[str, Any], data: st.DataObject
) -> None:
    graph = _copy(base)
    _rename(graph)
    roles = list(graph["roles"])
    edges = _prompts(graph)
    choices = [*REQUIRED]
    choices += [("roles", r, f) for r in roles for f in ("goal", "frontmatter", "description")]
    choices += [("graph", s, st_, f) for s, st_ in edges for f in ("role", "prompt")]
    path = data.draw(st.sampled_from(choices))
    del _parent(graph, path)[path[-1]]
    code, problems = validate(
        write_data(folder, graph), data.draw(st.sampled_from(["json", "text"]))
    )
    assert code == 1 and problems


@FUZZ
@given(base=st.sampled_from(BASES), data=st.data())
def test_a_wrong_type_is_reported(folder: Path, base: dict[str, Any], data: st.DataObject) -> None:
    graph = _copy(base)
    _rename(graph)
    targets = [("description",), ("roles",), ("graph",)]
    targets += [("roles", r, "goal") for r in graph["roles"]]
    targets += [("graph", s, st_, "prompt") for s, st_ in _prompts(graph)]
    path = data.draw(st.sampled_from(targets))
    value = data.draw(st.one_of(st.integers(), st.lists(st.integers(), max_size=2), st.none()))
    _parent(graph, path)[path[-1]] = value
    code, problems = validate(write_data(folder, graph))
    assert code == 1 and problems


@FUZZ
@given(base=st.sampled_from(BASES), data=st.data())
def test_renaming_a_status_edge_is_reported(
    folder: Path, base: dict[str, Any], data: st.DataObject
) -> None:
    graph = _copy(base)
    _rename(graph)
    source, status = data.draw(st.sampled_from([e for e in _prompts(graph) if e[0] != "$START"]))
    new = data.draw(st.text(alphabet="abcdefgxyz_$", min_size=1, max_size=8))
    edges = graph["graph"][source]
    if new in edges:
        return
    edges[new] = edges.pop(status)
    code, problems = validate(write_data(folder, graph))
    assert code == 1
    assert {"unknown-status-edge", "missing-status-edge"} & {p["code"] for p in problems}


@FUZZ
@given(base=st.sampled_from(BASES), data=st.data())
def test_a_broken_template_is_reported(
    folder: Path, base: dict[str, Any], data: st.DataObject
) -> None:
    graph = _copy(base)
    _rename(graph)
    source, status = data.draw(st.sampled_from(_prompts(graph)))
    edge = graph["graph"][source][status]
    breakage = data.draw(
        st.sampled_from(["{{#open}}", "{{/close}}", "{{{x}}", "{{>p}}", "{{}}", "{{nope_var}}"])
    )
    # at either end: inside a tag or a section over a list, a "breakage" may be valid Mustache
    position = data.draw(st.sampled_from([0, len(edge["prompt"])]))
    edge["prompt"] = edge["prompt"][:position] + breakage + edge["prompt"][position:]
    code, problems = validate(write_data(folder, graph))
    assert code == 1
    assert {"template-syntax", "template-var"} & {p["code"] for p in problems}


@FUZZ
@given(data=st.data())
def test_a_broken_fan_out_is_reported(folder: Path, data: st.DataObject) -> None:
    graph = yaml.safe_load(FANOUT)
    parallel = graph["graph"]["planner"]["_"]
    for_each = graph["graph"]["editor"]["_"]
    breakages = [
        ("for_each", for_each, "for_each", "count"),  # a field that is not a list
        ("for_each", for_each, "for_each", "$steps.planner.nothing"),
        ("template", for_each, "prompt", "{{{item}}}"),  # `as: part` renames the item
        ("template", parallel["join"], "prompt", "{{{part}}}"),  # the item is not seen here
        ("template", parallel["parallel"][0], "prompt", "{{{text}}}"),  # the branch's own
        ("branch", graph["graph"], "writer", {"_": {"role": "$END", "prompt": "x"}}),
        ("shape", parallel, "join", None),
        ("shape", parallel, "role", "editor"),
        ("shape", for_each, "as", "not a name"),
        ("inputs", for_each, "inputs", {"x": "y"}),
    ]
    kind, parent, key, value = data.draw(st.sampled_from(breakages))
    if value is None:
        del parent[key]
    else:
        parent[key] = value
    code, problems = validate(write_data(folder, graph))
    assert code == 1
    found = {p["code"] for p in problems}
    expected = {
        "for_each": {"for-each-not-list"},
        "template": {"template-var"},
        "branch": {"branch-has-edges"},
        "shape": {"bad-type", "unknown-key", "missing-field"},
        "inputs": {"inputs-not-subgraph"},
    }[kind]
    assert expected & found, problems


@FUZZ
@given(data=st.data(), value=VALUES)
def test_any_value_under_a_fan_out_key_ends_cleanly(
    folder: Path, data: st.DataObject, value: Any
) -> None:
    graph = yaml.safe_load(FANOUT)
    parallel = graph["graph"]["planner"]["_"]
    for_each = graph["graph"]["editor"]["_"]
    parent, key = data.draw(
        st.sampled_from(
            [
                (parallel, "parallel"),
                (parallel, "join"),
                (parallel["parallel"][1], "role"),
                (parallel["join"], "inputs"),
                (for_each, "for_each"),
                (for_each, "as"),
                (for_each, "inputs"),
                (for_each["join"], "ending"),
                (graph["roles"]["editor"], "graph"),
                (graph.setdefault("limits", {}), "max_parallel"),
            ]
        )
    )
    parent[key] = value
    validate(write_data(folder, graph), data.draw(st.sampled_from(["json", "text"])))


# --------------------------------------------------------------------------- anything at all


@FUZZ
@given(base=st.sampled_from(BASES), data=st.data())
def test_random_yaml_anywhere_never_crashes(
    folder: Path, base: dict[str, Any], data: st.DataObject
) -> None:
    graph = _copy(base)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(graph)
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        action = data.draw(st.sampled_from(["replace", "delete", "add", "template"]))
        parent = _parent(graph, path)
        if action == "replace":
            parent[path[-1]] = data.draw(VALUES)
        elif action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[data.draw(st.text(max_size=10))] = data.draw(VALUES)
        elif action == "template" and isinstance(parent, dict):
            parent[path[-1]] = data.draw(TEMPLATE_TEXT)
    validate(write_data(folder, graph), data.draw(st.sampled_from(["json", "text"])))


@FUZZ
@given(text=st.text(max_size=200))
def test_random_text_is_reported(folder: Path, text: str) -> None:
    path = folder / "text.yaml"
    path.write_text(text, encoding="utf-8")
    code, problems = validate(path)
    assert code in (1, 2) and problems


@FUZZ
@given(blob=st.binary(max_size=200))
def test_random_bytes_are_reported(folder: Path, blob: bytes) -> None:
    path = folder / "blob.yaml"
    path.write_bytes(blob)
    code, problems = validate(path)
    assert code in (1, 2) and problems


@FUZZ
@given(text=st.text(max_size=200), fields=VALUES)
@example(text="", fields={"$schema": True})  # once an AttributeError inside jsonschema
def test_random_role_files_never_crash(folder: Path, text: str, fields: Any) -> None:
    roles = folder / "roles"
    roles.mkdir(exist_ok=True)
    (roles / "a.md").write_text(f"---\n{text}\n---\nbody\n", encoding="utf-8")
    (roles / "b.yaml").write_text(yaml.safe_dump(fields), encoding="utf-8")
    (roles / "c.md").write_text(
        "---\n"
        + yaml.safe_dump({"description": "d", "goal": "g", "frontmatter": fields})
        + "---\n",
        encoding="utf-8",
    )
    validate(roles)


# --------------------------------------------------------------------------- real processes


def test_real_command_on_a_folder_of_broken_files(tmp_path: Path) -> None:
    broken = {
        "syntax.yaml": "graph: {a: [\n",
        "null.yaml": "graph:\n",
        "list.yaml": "graph:\n- 1\n",
        "types.yaml": "name: 12\ndescription: [x]\nroles: 3\ngraph: {$START: 4}\n",
        "template.yaml": SMALL.replace("Do {{{plan}}}", "Do {{#plan}}"),
        "blob.yaml": None,
    }
    for name, text in broken.items():
        if text is None:
            (tmp_path / name).write_bytes(b"graph: \xff\xfe\x00\x81")
        else:
            (tmp_path / name).write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "validate", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2  # blob.yaml is not UTF-8
    assert "Traceback" not in done.stdout + done.stderr
    for name in broken:
        assert name in done.stdout
    assert done.stdout.splitlines()[-1].endswith("in 6 files")


# --------------------------------------------------------------------------- the schema fast path


def _schemas() -> st.SearchStrategy[Any]:
    """JSON Schemas built from the keywords the fast path knows: mostly well-formed, so that the
    fast path vouches for many, with a few malformed values mixed in."""
    from orchestrator.definition.metaschema import KEYWORDS

    names = st.text(alphabet="ab$_", min_size=1, max_size=4)
    good_types = st.sampled_from(["string", "integer", "object", "array", "null", "boolean"])
    bad = st.one_of(SCALARS, st.lists(SCALARS, max_size=2))

    def mostly(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(*[good] * 12, bad)  # one_of picks a branch evenly

    def node(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        good_for: dict[str, st.SearchStrategy[Any]] = {
            "type": st.one_of(good_types, st.lists(good_types, min_size=1, max_size=3)),
            "properties": st.dictionaries(names, inner, max_size=3),
            "$defs": st.dictionaries(names, inner, max_size=2),
            "dependentSchemas": st.dictionaries(names, inner, max_size=2),
            "required": st.lists(names, max_size=3),
            "enum": st.lists(SCALARS, max_size=3),
            "examples": st.lists(SCALARS, max_size=2),
            "const": SCALARS,
            "default": SCALARS,
            "pattern": st.sampled_from(["^a", "(", "[a-z]+"]),
            "$ref": st.sampled_from(["#", "#/$defs/x"]),
        }
        for keyword in ("oneOf", "anyOf", "allOf", "prefixItems"):
            good_for[keyword] = st.lists(inner, min_size=0, max_size=3)
        for keyword in ("title", "description", "$comment", "format"):
            good_for[keyword] = st.text(max_size=5)
        for keyword in ("deprecated", "readOnly", "writeOnly", "uniqueItems"):
            good_for[keyword] = st.booleans()
        for keyword in KEYWORDS:
            if keyword.startswith(("min", "max")):
                good_for[keyword] = st.one_of(st.integers(0, 5), st.floats(0, 5))
            elif keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                good_for[keyword] = st.one_of(st.integers(-5, 5), st.floats(-5, 5))
            elif keyword == "multipleOf":
                good_for[keyword] = st.one_of(st.integers(-1, 3), st.floats(-1, 3))
            good_for.setdefault(keyword, inner)
        keywords = st.lists(st.sampled_from(sorted(good_for)), max_size=3, unique=True)
        return st.booleans() | keywords.flatmap(
            lambda keys: st.fixed_dictionaries({k: mostly(good_for[k]) for k in keys})
        )

    return st.recursive(st.booleans() | st.just({}), node, max_leaves=10)


@settings(max_examples=400, deadline=None)
@given(schema=_schemas())
@example(schema={"$comment": "", "multipleOf": float("inf")})  # found by this test
def test_the_schema_fast_path_agrees_with_the_metaschema(schema: Any) -> None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    from orchestrator.definition.metaschema import (
        SchemaProblem,
        _check_numbers,
        _surely_valid,
        check_schema,
    )

    try:
        Draft202012Validator.check_schema(schema)
        valid = True
    except SchemaError:
        valid = False
    if _surely_valid(schema, 0):
        assert valid, schema
    try:  # our rule beside the metaschema: no `multipleOf` of inf or nan, no unprintable number
        _check_numbers(schema, ())
    except SchemaProblem:
        valid = False
    try:
        check_schema(schema)
        assert valid
    except SchemaProblem:
        assert not valid


# --------------------------------------------------------------------------- hostile input
#
# Files built to exhaust the loader or the linter: alias bombs, deep nesting, huge numbers and
# hostile regular expressions. Each runs the real command in its own process, with a timeout
# and a cap on its address space, so a hang, a runaway allocation or a crash of the interpreter
# fails the example instead of the test run.

MEMORY_CAP = 2 << 30  # bytes of address space for one `validate` process
TIME_CAP = 60  # seconds: a hang guard, not a benchmark (a run takes well under a second)
HOSTILE = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _cap_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def validate_bounded(path: Path) -> tuple[int, list[dict[str, Any]]]:
    """`orchestrator validate PATH --format json` in a capped process; checked like `validate`."""
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "validate", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=TIME_CAP,
        preexec_fn=_cap_memory,
    )
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode in (0, 1, 2), (done.returncode, done.stderr[-2000:])
    problems: list[dict[str, Any]] = json.loads(done.stdout)["problems"]
    codes = {p["code"] for p in problems}
    assert "internal-error" not in codes, problems
    errors = any(p["severity"] == "error" for p in problems)
    assert done.returncode == (2 if "unreadable" in codes else 1 if errors else 0)
    assert all(p["line"] >= 1 and p["column"] >= 1 for p in problems)
    return done.returncode, problems


def _alias_bomb(levels: int, width: int, form: str) -> str:
    """Anchors each naming `width` aliases of the one before, as lists or as merged mappings."""
    if form == "merge":
        lines = ["x-a0: &a0 {" + ", ".join(f"k{i}: v" for i in range(width)) + "}"]
        for n in range(1, levels + 1):
            aliases = ", ".join([f"*a{n - 1}"] * width)
            lines.append(f"x-a{n}: &a{n} {{<<: [{aliases}], k{n}x: v}}")
    else:
        lines = ["x-a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
        for n in range(1, levels + 1):
            if form == "flow":
                lines.append(f"x-a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * width) + "]")
            else:
                lines.append(f"x-a{n}: &a{n}\n" + "".join(f"  - *a{n - 1}\n" for _ in range(width)))
    return "\n".join(lines) + "\n"


@HOSTILE
@example(levels=9, width=9, form="flow", used=False)  # the "billion laughs"
@example(levels=8, width=9, form="merge", used=True)
@given(
    levels=st.integers(1, 14),
    width=st.integers(2, 12),
    form=st.sampled_from(["flow", "block", "merge"]),
    used=st.booleans(),
)
def test_alias_bombs_are_refused_quickly(
    folder: Path, levels: int, width: int, form: str, used: bool
) -> None:
    text = SMALL.replace("name: fuzz\n", "name: fuzz\n" + _alias_bomb(levels, width, form))
    if used:  # the bomb as a role's frontmatter description, inside the graph proper
        text = text.replace("description: plans\n", f"description: plans\n    x: *a{levels}\n")
    path = folder / "bomb.yaml"
    path.write_text(text, encoding="utf-8")
    code, problems = validate_bounded(path)
    expanded = sum(width**n for n in range(1, levels + 1)) * (2 if used else 1)
    if expanded > 200_000:  # far past the 50,000 values aliases may expand to
        assert code == 1
        assert [p["code"] for p in problems] == ["yaml-limit"]


def _block(n: int, line: str) -> str:
    # indentation grows with depth, so the text grows with its square: 3,000 levels is 4.5 MB
    return "\n" + "".join(" " * i + line + "\n" for i in range(1, min(n, 3000) + 1))


NESTING = {
    "flow-sequence": lambda n: "[" * n + "]" * n,
    "flow-mapping": lambda n: "{a: " * n + "1" + "}" * n,
    "compact-sequence": lambda n: "\n  " + "- " * n + "x",
    "block-mapping": lambda n: _block(n, "a:"),
    "block-sequence": lambda n: _block(n, "-"),
}


@HOSTILE
@example(depth=100_000, kind="flow-sequence")  # overflowed libyaml's C stack
@given(depth=st.integers(150, 60_000), kind=st.sampled_from(sorted(NESTING)))
def test_deep_nesting_is_refused_without_a_crash(folder: Path, depth: int, kind: str) -> None:
    path = folder / "deep.yaml"
    path.write_text("name: deep\ndescription: d\nroles: " + NESTING[kind](depth) + "\n", "utf-8")
    code, problems = validate_bounded(path)
    assert code == 1
    if depth > 210:
        assert "yaml-limit" in {p["code"] for p in problems}


NUMBERS = st.one_of(
    st.integers(1, 6000).map(lambda n: "9" * n),
    st.integers(1, 6000).map(lambda n: "-" + "1" * n),
    st.integers(1, 3000).map(lambda n: "0x" + "f" * n),
    st.sampled_from(["1e400", "-1e400", "1e-400", ".inf", "-.inf", ".nan", "1_000_000", "0o777"]),
    st.integers(300, 5000).map(lambda n: f"1.{'0' * n}1e308"),
)
NUMBER_PLACES = [
    ("limits", "max_steps"),
    ("limits", "max_cost_usd"),
    ("defaults", "max_tokens"),
    ("roles", "planner", "temperature"),
    ("roles", "planner", "max_repairs"),
    ("roles", "doer", "frontmatter", "properties", "result", "maxItems"),
    ("roles", "doer", "frontmatter", "properties", "result", "items"),
    ("roles", "doer", "frontmatter", "multipleOf"),
    ("roles", "doer", "frontmatter", "properties", "n"),
    ("inputs", "properties", "issue", "maxLength"),
    ("inputs", "properties", "issue", "enum"),
    ("inputs", "properties", "issue", "const"),
    ("version",),
]


def _with_placeholder(path: tuple[str, ...], raw: str) -> str:
    """SMALL with `raw` (YAML text, not a quoted string) at `path`."""
    data = yaml.safe_load(SMALL)
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = "__VALUE__"
    text = yaml.safe_dump(data, sort_keys=False, width=1000)
    return text.replace("__VALUE__", raw)


@HOSTILE
@example(place=("limits", "max_steps"), number="9" * 5000, as_list=False)  # past int()'s limit
@example(place=("roles", "doer", "frontmatter", "multipleOf"), number="1e-400", as_list=False)
@given(place=st.sampled_from(NUMBER_PLACES), number=NUMBERS, as_list=st.booleans())
def test_huge_numbers_anywhere_are_reported_not_crashed_on(
    folder: Path, place: tuple[str, ...], number: str, as_list: bool
) -> None:
    path = folder / "fuzz.yaml"
    path.write_text(_with_placeholder(place, f"[{number}]" if as_list else number), "utf-8")
    validate_bounded(path)


HOSTILE_PATTERNS = st.one_of(
    st.sampled_from(
        [
            "(a+)+$",
            "(a|a)*b",
            "(.*a){20}",
            "a{99999999999}",
            "a{1000}{1000}{1000}",
            "(?<=a+)b",
            "\\p{L}",
            "[",
            "\\",
            "(?P<n>a)(?P=n)",
        ]
    ),
    st.integers(1, 20_000).map(lambda n: "(" * n + ")" * n),
    st.integers(1, 5000).map(lambda n: "(?:" * n + "a" + ")*" * n),
    st.integers(1, 50_000).map(lambda n: "a|" * n + "b"),
    st.text(alphabet="()[]{}*+?|\\^$.a0123456789,:<=!P", max_size=60),
)


@HOSTILE
@example(pattern="a{99999999999}", place="pattern")  # re.compile raised OverflowError
@example(pattern="(" * 5000 + ")" * 5000, place="key")  # and RecursionError
@example(pattern="(a+)+$", place="inputs")
@given(pattern=HOSTILE_PATTERNS, place=st.sampled_from(["pattern", "key", "inputs"]))
def test_hostile_regular_expressions_are_reported_not_crashed_on(
    folder: Path, pattern: str, place: str
) -> None:
    quoted = json.dumps(pattern)  # a JSON string is a YAML double-quoted scalar
    if place == "pattern":
        path_, raw = ("roles", "doer", "frontmatter", "properties", "s"), f"{{pattern: {quoted}}}"
    elif place == "key":
        path_, raw = ("roles", "doer", "frontmatter", "patternProperties"), f"{{{quoted}: {{}}}}"
    else:
        path_, raw = ("inputs", "properties", "issue", "pattern"), quoted
    path = folder / "regex.yaml"
    path.write_text(_with_placeholder(path_, raw), "utf-8")
    validate_bounded(path)


@HOSTILE
@example(depth=195, keyword="items", place="frontmatter")  # jsonschema raised RecursionError
@given(
    depth=st.integers(20, 195),
    keyword=st.sampled_from(["items", "not", "properties", "oneOf"]),
    place=st.sampled_from(["frontmatter", "inputs"]),
)
def test_deeply_nested_schemas_are_reported_not_crashed_on(
    folder: Path, depth: int, keyword: str, place: str
) -> None:
    schema = "{type: string}"
    levels = depth // 2 if keyword in ("properties", "oneOf") else depth  # two YAML levels each
    for _ in range(levels):
        schema = {
            "items": "{{items: {0}}}",
            "not": "{{not: {0}}}",
            "properties": "{{properties: {{a: {0}}}}}",
            "oneOf": "{{oneOf: [{0}]}}",
        }[keyword].format(schema)
    if place == "frontmatter":
        where, raw = ("roles", "doer", "frontmatter", "properties", "result"), schema
    else:
        where, raw = ("inputs", "properties", "issue"), schema
    path = folder / "schema.yaml"
    path.write_text(_with_placeholder(where, raw), "utf-8")
    validate_bounded(path)
