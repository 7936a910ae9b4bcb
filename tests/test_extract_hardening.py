"""Hardening of the extract path, met as a user meets it: `extract_output`, the `orchestrator
extract` command and `orchestrator.testing.simulate`.

Each section is one item of the hardening issue: YAML block scalars keep YAML's semantics,
schema patterns cannot freeze the process, schema `$ref`s never leave the schema, and numbers
too large for Python or for a float give a clear error or the exact answer, never a traceback.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import frontmatter
import pytest
import yaml

from orchestrator import ExtractError, extract_output
from orchestrator.definition.models import Role
from orchestrator.testing import simulate

SINGLE = {"type": "object", "properties": {"summary": {"type": "string"}}}


def make_role(schema: dict[str, Any]) -> Role:
    return Role(description="d", goal="g", frontmatter=schema)


# --------------------------------------------------------------------------- block scalars


@pytest.mark.parametrize(
    ("block", "value"),
    [
        ("|\n  line one\n  line two", "line one\nline two\n"),  # clip: one final newline
        ("|-\n  line one\n  line two", "line one\nline two"),  # strip
        ("|+\n  line one\n  line two\n", "line one\nline two\n\n"),  # keep, blank line too
        (">\n  line one\n  line two", "line one line two\n"),
    ],
)
@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_a_block_scalar_at_the_end_keeps_yaml_semantics(
    block: str, value: str, line_end: str
) -> None:
    reply = f"---\nsummary: {block}\n---\nThe body.\n".replace("\n", line_end)
    out = extract_output(reply, make_role(SINGLE))
    assert out.frontmatter == {"summary": value}
    assert out.body == "The body."
    # The same as PyYAML and python-frontmatter read the same text.
    plain = reply.replace("\r\n", "\n")
    assert yaml.safe_load(plain.split("---\n")[1]) == {"summary": value}
    assert frontmatter.loads(plain).metadata == {"summary": value}


def test_a_block_scalar_at_the_end_of_a_fenced_yaml_block() -> None:
    reply = "Here it is.\n\n```yaml\n$status: _\nsummary: |\n  one\n  two\n```\n"
    assert extract_output(reply, make_role(SINGLE)).frontmatter == {"summary": "one\ntwo\n"}


def test_an_error_at_the_end_of_the_frontmatter_still_names_its_last_line() -> None:
    with pytest.raises(ExtractError) as info:
        extract_output("---\nsummary: [one, two\n---\n", make_role(SINGLE))
    assert "line 1 (`summary: [one, two`)" in str(info.value)


# --------------------------------------------------------------------------- helpers


def write_graph(folder: Path, schema: dict[str, Any]) -> Path:
    """A graph whose one role `r` has `schema` as its contract (a single exit unless the
    schema declares `$status`)."""
    path = folder / "g.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: g
            description: A role with a hostile contract.
            roles:
              r:
                description: d
                goal: g
                max_repairs: 0
                frontmatter: {json.dumps(schema)}
            graph:
              $START:
                _: {{ role: r, prompt: "go" }}
              r:
                _: {{ role: $END, prompt: "done" }}
            """
        )
    )
    return path


def extract_cli(graph: Path, reply: str) -> subprocess.CompletedProcess[str]:
    """`orchestrator extract` on `reply`, in a process the test can stop if it hangs."""
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "extract", "--graph", str(graph), "--role", "r"],
        input=reply,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


# --------------------------------------------------------------------------- schema patterns

CATASTROPHIC = "^(a+)+$"  # Python's backtracking `re` takes hours on the value below
HOSTILE = "a" * 45 + "b"


@pytest.mark.parametrize(
    ("schema", "reply", "error"),
    [
        (
            {"properties": {"x": {"type": "string", "pattern": CATASTROPHIC}}},
            f"x: {HOSTILE}",
            "error: field 'x' must match the pattern '^(a+)+$'",
        ),
        (
            {"patternProperties": {CATASTROPHIC: {"type": "integer"}}},
            f"{HOSTILE}: text\naaaa: text",
            "error: field 'aaaa' must be of type integer, got string",
        ),
        (
            {
                "properties": {"x": {}},
                "patternProperties": {CATASTROPHIC: {}},
                "additionalProperties": False,
            },
            f"{HOSTILE}: 1",
            f"error: field '{HOSTILE}' is not allowed (additionalProperties is false",
        ),
        (
            {"allOf": [{"patternProperties": {CATASTROPHIC: {}}}], "unevaluatedProperties": False},
            f"{HOSTILE}: 1\naaaa: 1",
            "error: the frontmatter: Unevaluated properties are not allowed ('aaaa",
        ),
        (
            {"propertyNames": {"pattern": CATASTROPHIC}},
            f"{HOSTILE}: 1",
            "error: the frontmatter must match the pattern '^(a+)+$'",
        ),
    ],
    ids=["pattern", "patternProperties", "additionalProperties", "unevaluated", "propertyNames"],
)
def test_a_catastrophic_pattern_does_not_freeze_extract(
    tmp_path: Path, schema: dict[str, Any], reply: str, error: str
) -> None:
    graph = write_graph(tmp_path, {"type": "object", **schema})
    proc = extract_cli(graph, f"---\n{reply}\n---\n")
    assert proc.returncode == 1
    assert proc.stderr.startswith(error), proc.stderr


def test_a_pattern_matching_the_hostile_value_in_full_is_accepted(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, {"properties": {"x": {"pattern": "^(a+)+b$"}}})
    proc = extract_cli(graph, f"---\nx: {HOSTILE}\n---\n")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["frontmatter"] == {"x": HOSTILE}


@pytest.mark.parametrize(
    ("schema", "reply", "error"),
    [
        (
            {"properties": {"x": {"pattern": "^(?!draft)"}}},
            "x: final",
            "field 'x' cannot be checked: the schema's pattern '^(?!draft)' cannot be used: "
            "invalid perl operator: (?! (RE2 syntax: no lookarounds or backreferences)",
        ),
        (
            {"properties": {"x": {"patternProperties": {"(a)\\1": {}}}}},
            "x: {aa: 1}",
            "field 'x' cannot be checked: the schema's pattern '(a)\\\\1' cannot be used",
        ),
    ],
)
def test_a_pattern_the_engine_cannot_use_is_a_clear_error(
    schema: dict[str, Any], reply: str, error: str
) -> None:
    with pytest.raises(ExtractError) as info:
        extract_output(f"---\n{reply}\n---\n", make_role(schema))
    assert info.value.errors[0].startswith(error), info.value.errors


def test_a_pattern_the_engine_cannot_use_suspends_a_simulated_thread(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, {"properties": {"x": {"pattern": "^(?=a)"}}})
    trace = simulate(graph, outputs=["---\nx: abc\n---\n"])
    assert trace.state == "suspended"
    (attempt,) = trace.steps[0].attempts
    errors = attempt.errors
    assert errors == (
        "field 'x' cannot be checked: the schema's pattern '^(?=a)' cannot be used: invalid perl "
        "operator: (?= (RE2 syntax: no lookarounds or backreferences)",
    )


def test_patterns_follow_json_schema_not_python() -> None:
    # ECMA-262, which JSON Schema specifies: `$` is the end of the text and `\d` is ASCII.
    role = make_role({"properties": {"n": {"type": "string", "pattern": "^\\d+$"}}})
    assert extract_output('---\nn: "12"\n---\n', role).frontmatter == {"n": "12"}
    for value in ('"12\\n"', '"١٢"'):
        with pytest.raises(ExtractError, match="must match the pattern"):
            extract_output(f"---\nn: {value}\n---\n", role)


# --------------------------------------------------------------------------- `$ref` stays inside


@pytest.fixture()
def schema_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that would serve a schema, and the paths it was asked for."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


def test_a_ref_to_a_url_is_not_fetched(schema_server: tuple[str, list[str]]) -> None:
    url, asked = schema_server
    role = make_role({"properties": {"n": {"$ref": f"{url}/n.json"}}})
    with pytest.raises(ExtractError) as info:
        extract_output("---\nn: text\n---\n", role)
    assert info.value.errors == [
        f"the role's frontmatter schema cannot be used: its `$ref` to '{url}/n.json' points "
        "outside the schema; only references inside it (such as `#/$defs/name`) are resolved, "
        "nothing is fetched or read"
    ]
    assert asked == []


def test_a_ref_to_a_file_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "n.json").write_text('{"type": "integer"}')
    ref = (tmp_path / "n.json").as_uri()
    for schema in (
        {"properties": {"n": {"$ref": ref}}},
        {"$id": tmp_path.as_uri() + "/", "properties": {"n": {"$ref": "n.json"}}},
    ):
        with pytest.raises(ExtractError) as info:
            extract_output("---\nn: text\n---\n", make_role(schema))
        (error,) = info.value.errors
        assert f"its `$ref` to '{ref}' points outside the schema" in error


def test_refs_inside_the_schema_still_resolve() -> None:
    role = make_role(
        {
            "$id": "https://example.invalid/contract",
            "$defs": {"count": {"type": "integer", "minimum": 0}},
            "properties": {"n": {"$ref": "#/$defs/count"}, "m": {"$ref": "contract#/$defs/count"}},
        }
    )
    assert extract_output("---\nn: 1\nm: 2\n---\n", role).frontmatter == {"n": 1, "m": 2}
    with pytest.raises(ExtractError, match="field 'n' must be >= 0"):
        extract_output("---\nn: -1\n---\n", role)


# --------------------------------------------------------------------------- huge numbers

HUGE = 10**5000  # more digits than Python prints (sys.get_int_max_str_digits(), 4300)


@pytest.mark.parametrize(
    ("keyword", "value", "reply"),
    [
        ("maxLength", HUGE, "x: text"),
        ("minLength", HUGE, "x: text"),
        ("minimum", HUGE, "x: 5"),
        ("maximum", -HUGE, "x: 5"),
        ("exclusiveMinimum", HUGE, "x: 5"),
        ("multipleOf", HUGE, "x: 1.5"),
        ("multipleOf", -HUGE, "x: 1.5"),
        ("minItems", HUGE, "x: [1]"),
        ("const", HUGE, "x: 5"),
        ("enum", [HUGE], "x: 5"),
    ],
    ids=lambda v: v if isinstance(v, str) else "huge",  # pytest cannot print HUGE itself
)
def test_a_number_too_long_for_python_in_a_contract_is_a_clear_error(
    keyword: str, value: Any, reply: str
) -> None:
    role = make_role({"properties": {"x": {keyword: value}}})
    with pytest.raises(ExtractError) as info:
        extract_output(f"---\n{reply}\n---\n", role)
    assert info.value.errors == [
        "the role's frontmatter schema cannot be used: invalid JSON Schema: "
        f"`properties/x/{keyword}{'/0' if keyword == 'enum' else ''}` is a number of 5001 "
        "digits; at most 4300 can be used"
    ]


def test_a_non_finite_multiple_of_is_a_clear_error(tmp_path: Path) -> None:
    graph = write_graph(tmp_path, {"properties": {"x": {"multipleOf": 0.5}}})
    graph.write_text(graph.read_text().replace("0.5", ".nan"))  # YAML's NaN
    proc = extract_cli(graph, "---\nx: 1\n---\n")
    assert (proc.returncode, proc.stderr) == (
        1,
        "error: the role's frontmatter schema cannot be used: invalid JSON Schema: "
        "`properties/x/multipleOf` must be a finite number, not nan\n",
    )


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("1" + "0" * 400, None),  # past the float range: exact arithmetic
        ("1" + "0" * 400 + "1", None),
        ("3" + "0" * 400 + "1", None),
        (".inf", "error: field 'x' must be a multiple of 0.5, got Infinity"),
        (".nan", "error: field 'x' must be a multiple of 0.5, got NaN"),
        ("1e400", "error: field 'x' must be a multiple of 0.5, got Infinity"),
        ("0.75", "error: field 'x' must be a multiple of 0.5, got 0.75"),
    ],
)
def test_multiple_of_a_float_never_overflows(tmp_path: Path, value: str, error: str | None) -> None:
    graph = write_graph(tmp_path, {"properties": {"x": {"multipleOf": 0.5}}})
    proc = extract_cli(graph, f"---\nx: {value}\n---\n")
    if error is None:
        assert proc.returncode == 0, proc.stderr
    else:
        assert (proc.returncode, proc.stderr) == (1, error + "\n")


def test_multiple_of_is_exact_for_integers_past_the_float_range() -> None:
    role = make_role({"properties": {"x": {"multipleOf": 0.25}}})
    big = 10**400
    assert extract_output(f"---\nx: {big + 1}\n---\n", role).frontmatter == {"x": big + 1}
    role = make_role({"properties": {"x": {"multipleOf": 3}}})
    with pytest.raises(ExtractError, match="must be a multiple of 3"):
        extract_output(f"---\nx: {big}\n---\n", role)
