"""Unit tests of the extract pipeline: the API, the rules docs/format.md section 4 leaves open,
and the edges.

The messy-reply corpus lives in tests/replies/ (test_extract_corpus.py); properties in
test_extract_props.py. These tests pin the decisions documented in orchestrator/extract/.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import Graph, Role
from orchestrator.extract import (
    MAX_PREAMBLE_CHARS,
    MAX_PREAMBLE_LINES,
    ExtractError,
    Output,
    describe_contract,
    extract_output,
    extract_status_only,
    parse_reply,
)

GRAPH: Graph = load_graph(Path(__file__).parent / "replies" / "graph.yaml")
PLANNER = GRAPH.roles["planner"]
SCRIBE = GRAPH.roles["scribe"]
READY = '---\n$status: ready\nplan: "Fix it"\nrepoPath: /r\n---\n'


def make_role(schema: dict[str, Any]) -> Role:
    return Role(description="d", goal="g", frontmatter=schema)


def errors_of(text: str, role: Role = PLANNER) -> str:
    with pytest.raises(ExtractError) as info:
        extract_output(text, role)
    return str(info.value)


# --------------------------------------------------------------------------- API


def test_output_is_a_frozen_dataclass() -> None:
    out = extract_output(READY + "body", PLANNER)
    assert out == Output({"$status": "ready", "plan": "Fix it", "repoPath": "/r"}, "body", "ready")
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.status = "continue"  # type: ignore[misc]


def test_extract_error_carries_errors_and_status() -> None:
    with pytest.raises(ExtractError) as info:
        extract_output("---\n$status: ready\nplan: 5\n---\n", PLANNER)
    err = info.value
    assert err.status == "ready"
    assert len(err.errors) == 2
    assert str(err) == "\n".join(err.errors)
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.errors, copy.status) == (err.errors, err.status)


def test_unknown_status_is_not_reported_as_the_status_read() -> None:
    with pytest.raises(ExtractError) as info:
        extract_output("---\n$status: Ready\n---\n", PLANNER)
    assert info.value.status is None


def test_extract_status_only() -> None:
    assert extract_status_only(READY, PLANNER) == "ready"
    assert extract_status_only("---\ntitle: x\n---\n", SCRIBE) == "_"
    with pytest.raises(ExtractError):
        extract_status_only("---\n$status: ready\n---\n", PLANNER)


def test_parse_reply_splits_without_a_role() -> None:
    assert parse_reply(READY + "\n\nbody\n") == (
        {"$status": "ready", "plan": "Fix it", "repoPath": "/r"},
        "body",
    )
    assert parse_reply("just prose\n") == (None, "just prose")
    assert parse_reply("---\n---\n") == ({}, "")
    with pytest.raises(ExtractError, match="never closed"):
        parse_reply("---\na: 1\n")


def test_the_public_api_is_importable_from_the_package() -> None:
    import orchestrator

    assert orchestrator.extract_output is extract_output
    assert orchestrator.ExtractError is ExtractError
    assert orchestrator.Output is Output


# --------------------------------------------------------------------------- describe_contract


def test_describe_contract_multi_status() -> None:
    assert describe_contract(PLANNER) == (
        "`$status` is one of: ready, continue, insufficient_info.\n"
        "- `$status: ready`: required plan (string), repoPath (string)\n"
        "- `$status: continue`: required branch (string), plan (string), repoPath (string), "
        "worktree (string)\n"
        "- `$status: insufficient_info`: optional question (string)"
    )


def test_describe_contract_types_and_single_exit() -> None:
    assert describe_contract(GRAPH.roles["summarizer"]) == (
        "This role has a single exit: write no `$status`. "
        "Fields: required summary (string); optional tags (array of string)."
    )
    assert "optional target (string or object)" in describe_contract(GRAPH.roles["developer"])
    assert 'status (one of "open" | "closed")' in describe_contract(GRAPH.roles["tracker"])
    assert describe_contract(make_role({"type": "object"})) == (
        "This role has a single exit: write no `$status`. Fields: no fields."
    )


def test_describe_contract_is_deterministic() -> None:
    role = GRAPH.roles["reviewer"]
    assert describe_contract(role) == describe_contract(role.model_copy())


# --------------------------------------------------------------------------- locating the block


@pytest.mark.parametrize("lines", [1, MAX_PREAMBLE_LINES])
def test_a_short_preamble_is_skipped(lines: int) -> None:
    preamble = "".join(f"Line {i} of chatter.\n" for i in range(lines))
    assert extract_output(preamble + READY + "body", PLANNER).body == "body"


def test_a_long_preamble_means_no_frontmatter() -> None:
    preamble = "".join(f"Line {i}.\n" for i in range(MAX_PREAMBLE_LINES + 1))
    assert "must come first" in errors_of(preamble + READY)
    wide = "x" * (MAX_PREAMBLE_CHARS + 1) + "\n"
    assert "must come first" in errors_of(wide + READY)


def test_tilde_fences_wrap_too() -> None:
    out = extract_output("~~~markdown\n" + READY + "body\n~~~\n", PLANNER)
    assert out.body == "body"


def test_longer_wrapper_fence_keeps_inner_fences() -> None:
    text = "````markdown\n" + READY + "```sh\nmake\n```\n````\n"
    assert extract_output(text, PLANNER).body == "```sh\nmake\n```"


def test_lone_cr_line_ends_are_normalized() -> None:
    out = extract_output(READY.replace("\n", "\r") + "a\rb", PLANNER)
    assert out.body == "a\nb"


def test_wrapper_closed_without_dashes() -> None:
    text = '```yaml\n---\n$status: ready\nplan: "p"\nrepoPath: r\n```\nThe body.\n'
    assert extract_output(text, PLANNER).body == "The body."


def test_frontmatter_only_reply_has_an_empty_body() -> None:
    assert extract_output(READY.rstrip("\n"), PLANNER).body == ""


# --------------------------------------------------------------------------- YAML


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("yes", "yes"),
        ("No", "No"),
        ("on", "on"),
        ("true", True),
        ("FALSE", False),
        ("~", None),
        ("", None),
        ("0o17", 15),
        ("0x1F", 31),
        ("017", 17),
        ("-5", -5),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("1_000", "1_000"),
        ("1:30", "1:30"),
        ("2024-05-01", "2024-05-01"),
        ("2024-05-01T10:00:00Z", "2024-05-01T10:00:00Z"),
        ("0b101", "0b101"),
        ("'5'", "5"),
        ("!!str 5", "5"),
        ("= x", "= x"),
    ],
)
def test_yaml_12_core_schema_values(written: str, value: Any) -> None:
    data, _ = parse_reply(f"---\nv: {written}\n---\n")
    assert data is not None
    assert data["v"] == value and type(data["v"]) is type(value)


def test_special_floats() -> None:
    data, _ = parse_reply("---\na: .inf\nb: -.Inf\nc: .nan\n---\n")
    assert data is not None
    assert data["a"] == float("inf") and data["b"] == float("-inf")
    assert data["c"] != data["c"]


def test_keys_keep_their_text() -> None:
    data, _ = parse_reply("---\n1: a\ntrue: b\nyes: c\nnull: d\n---\n")
    assert data == {"1": "a", "true": "b", "yes": "c", "null": "d"}


@pytest.mark.parametrize("digits", ["9" * 5000, "0x" + "f" * 4000, "0o" + "7" * 5000])
def test_a_number_too_long_for_python_stays_text(digits: str) -> None:
    # Python converts hex and octal without its decimal limit, but could not print the result.
    data, _ = parse_reply(f"---\nn: {digits}\n---\n")
    assert data == {"n": digits}
    out = extract_output(f"---\nn: {digits}\n---\n", make_role({"type": "object"}))
    assert json.loads(json.dumps(out.frontmatter)) == {"n": digits}


@pytest.mark.parametrize(
    ("frontmatter", "message"),
    [
        ("a: [1, *x]", "YAML alias"),
        ("<<: {a: 1}\nb: &x 2", "YAML anchor"),
        ("a: !!binary aGk=", "YAML tag"),
        ("a: !!set {x}", "YAML tag"),
        ("? [a, b]\n: c", "must be plain text"),
        ("a:\n  b: 1\n  b: 2", "the key `b` appears twice"),
        ("a: 1\n--- b\n", "more than one YAML document"),
    ],
)
def test_yaml_features_a_reply_may_not_use(frontmatter: str, message: str) -> None:
    with pytest.raises(ExtractError, match=message):
        parse_reply(f"---\n{frontmatter}\n---\n")


def test_deep_nesting_is_refused_not_a_crash() -> None:
    with pytest.raises(ExtractError, match="nests deeper"):
        parse_reply("---\na: " + "[" * 5000 + "]" * 5000 + "\n---\n")


def test_control_characters_are_named() -> None:
    message = errors_of('---\n$status: ready\nplan: "a\x07b"\nrepoPath: r\n---\n')
    assert "line 2" in message and "U+0007" in message


def test_yaml_error_names_the_frontmatter_line_and_the_fix() -> None:
    message = errors_of("---\n$status: ready\nrepoPath: /r\nplan: Step 1: reproduce\n---\n")
    assert "not valid YAML at line 3 (`plan: Step 1: reproduce`)" in message
    assert 'quote the value: `plan: "Step 1: reproduce"`' in message


# --------------------------------------------------------------------------- status rules


def test_status_is_read_as_dollar_status_only_when_undeclared() -> None:
    reviewer = GRAPH.roles["reviewer"]
    out = extract_output("---\nstatus: rejected\ncomments: c\n---\n", reviewer)
    assert out.frontmatter == {"$status": "rejected", "comments": "c"}
    tracker = GRAPH.roles["tracker"]
    out = extract_output("---\n$status: tracked\nstatus: closed\n---\n", tracker)
    assert out.frontmatter["status"] == "closed"


def test_both_status_keys_keep_status_as_a_field() -> None:
    # `$status` wins; `status` is then an ordinary (here undeclared but allowed) field.
    out = extract_output(READY.replace("---\n$status", "---\nstatus: x\n$status"), PLANNER)
    assert out.frontmatter["status"] == "x" and out.status == "ready"


def test_suspend_drops_other_fields_and_is_not_validated() -> None:
    out = extract_output("---\n$status: $SUSPEND\nreason: Need a token.\nplan: 5\n---\nb", PLANNER)
    assert out == Output({"$status": "$SUSPEND", "reason": "Need a token."}, "b", "$SUSPEND")


def test_suspend_reason_must_be_text() -> None:
    assert "needs a `reason`" in errors_of("---\n$status: $SUSPEND\nreason: 42\n---\n")


def test_single_exit_rejects_any_other_status() -> None:
    message = errors_of("---\n$status: done\ntitle: t\n---\n", SCRIBE)
    assert "single exit" in message and "remove the line `$status: done`" in message
    out = extract_output("---\n$status: _\ntitle: t\n---\n", SCRIBE)
    assert out.frontmatter == {"title": "t"} and out.status == "_"


def test_a_role_with_an_unusable_schema_refuses_with_a_reason() -> None:
    broken = make_role({"oneOf": [{"properties": {"x": {"type": "string"}}}]})
    message = errors_of("---\n$status: a\n---\n", broken)
    assert "schema cannot be used" in message


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": {"a": {"$ref": "#/$defs/missing"}}},
        {"$defs": {"x": {"$ref": "#/$defs/x"}}, "properties": {"a": {"$ref": "#/$defs/x"}}},
    ],
)
def test_a_schema_that_cannot_be_evaluated_is_blamed_not_the_reply(schema: Any) -> None:
    assert "schema cannot be used" in errors_of("---\na: x\n---\n", make_role(schema))


def test_flat_enum_shape_validates_each_status() -> None:
    reviewer = GRAPH.roles["reviewer"]
    assert extract_output("---\n$status: approved\ncomments: ok\n---\n", reviewer).status == (
        "approved"
    )
    assert "field 'comments' is required" in errors_of("---\n$status: rejected\n---\n", reviewer)


# --------------------------------------------------------------------------- validation messages


def test_all_errors_are_reported_sorted_by_field() -> None:
    with pytest.raises(ExtractError) as info:
        extract_output("---\n$status: continue\nworktree: 1\n---\n", PLANNER)
    errors = info.value.errors
    assert [e.split("'")[3] for e in errors] == ["branch", "plan", "repoPath", "worktree"]
    assert all(e.startswith("status 'continue': field '") for e in errors)


def test_index_paths_sort_numerically() -> None:
    text = "---\n$status: done\nbranch: fix/a\ntests: {passed: 1, failed: 0}\nfiles:\n"
    text += "".join(f"  - {{path: p, change: bad{i}}}\n" for i in range(12)) + "---\n"
    with pytest.raises(ExtractError) as info:
        extract_output(text, GRAPH.roles["developer"])
    fields = [e.split("'")[3] for e in info.value.errors]
    assert fields == [f"files[{i}].change" for i in range(12)]


def test_false_subschema_names_the_field() -> None:
    role = make_role({"type": "object", "properties": {"secret": False, "a": {}}})
    assert errors_of("---\nsecret: 1\n---\n", role) == "field 'secret' is not allowed"


def test_anyof_alternatives_report_the_closest() -> None:
    role = make_role(
        {
            "properties": {
                "$status": {"const": "ok"},
                "when": {
                    "anyOf": [
                        {"type": "string", "pattern": "^[0-9]{4}$"},
                        {"type": "array", "items": {"type": "integer"}},
                    ]
                },
            }
        }
    )
    # The array alternative fits the value's type, so its error is the one reported.
    message = errors_of("---\n$status: ok\nwhen: [1, two]\n---\n", role)
    assert message == "status 'ok': field 'when[1]' must be of type integer, got string (\"two\")"
    message = errors_of("---\n$status: ok\nwhen: '12'\n---\n", role)
    assert message == "status 'ok': field 'when' must match the pattern '^[0-9]{4}$', got \"12\""


def test_messages_for_common_keywords() -> None:
    role = make_role(
        {
            "type": "object",
            "properties": {
                "n": {"type": "number", "multipleOf": 5, "exclusiveMaximum": 100},
                "s": {"type": "string", "maxLength": 3},
                "k": {"const": "fixed"},
                "u": {"type": "array", "uniqueItems": True, "maxItems": 2},
            },
        }
    )
    message = errors_of("---\nn: 101\ns: long\nk: other\nu: [1, 1, 1]\n---\n", role)
    assert 'field \'k\' must be "fixed", got "other"' in message
    assert "field 'n' must be a multiple of 5, got 101" in message
    assert "field 'n' must be < 100, got 101" in message
    assert "field 's' must be at most 3 characters long, got 4" in message
    assert "field 'u' must have at most 2 items, got 3" in message
    assert "field 'u' must not contain the same item twice" in message


def test_long_values_are_clipped_in_messages() -> None:
    message = errors_of(f"---\n$status: ready\nplan: {'1' * 500}\nrepoPath: r\n---\n")
    assert len(message) < 300


def test_validators_are_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from jsonschema import validators

    extract_output(READY, PLANNER)  # warm-up compiles the validator of 'ready'
    schema = PLANNER.contract.statuses["ready"].schema
    compiled: list[Any] = []
    real = validators.validator_for

    def spy(candidate: Any, *args: Any, **kwargs: Any) -> Any:
        if candidate is schema:  # jsonschema also calls this for subschemas while validating
            compiled.append(candidate)
        return real(candidate, *args, **kwargs)

    monkeypatch.setattr(validators, "validator_for", spy)
    for _ in range(3):
        assert extract_output(READY, PLANNER).status == "ready"
        with pytest.raises(ExtractError):
            extract_output("---\n$status: ready\n---\n", PLANNER)
    assert compiled == []
