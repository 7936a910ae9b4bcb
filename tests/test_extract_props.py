"""Property-based tests of the extract pipeline (hypothesis).

1. No text makes `extract_output` raise anything but `ExtractError`, and whatever it accepts
   satisfies the role's schema (checked here with a fresh jsonschema validator of the *whole*
   schema, independent of the contract's per-status validators).
2. For generated frontmatter mappings serialized into messy replies, the pipeline accepts
   exactly the replies that the rules of docs/format.md section 4 and the schema accept, and
   gives back exactly the mapping and body that were written. An invalid reply is never accepted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import re2
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError

from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import Graph, Role
from orchestrator.extract import ExtractError, Output, extract_output

GRAPH: Graph = load_graph(Path(__file__).parent / "replies" / "graph.yaml")
ROLES = sorted(GRAPH.roles)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- the oracle


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    # JSON Schema patterns are ECMA-262 regexes: `$` is the end of the text, as in RE2, where
    # Python's `$` also matches before a final newline.
    if validator.is_type(instance, "string") and not re2.search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_Oracle = validators.extend(Draft202012Validator, {"pattern": _ecma_pattern})


def _whole_schema_valid(role: Role, data: dict[str, Any]) -> bool:
    # The role's schema as written. Its oneOf variants have distinct `$status` consts, so the
    # whole schema accepts a mapping exactly when the variant its `$status` names does.
    return bool(_Oracle(role.frontmatter).is_valid(data))


def _declares_status_field(role: Role) -> bool:
    text = json.dumps(role.frontmatter)
    return '"status":' in text


def expected_outcome(role: Role, written: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The rules of docs/format.md section 4, spelled out independently.

    (status, frontmatter), or None to refuse.
    """
    data = dict(written)
    single = role.contract.single_exit
    renamed = not single or data.get("status") == "$SUSPEND"
    if renamed and "$status" not in data and "status" in data and not _declares_status_field(role):
        data = {("$status" if k == "status" else k): v for k, v in data.items()}
    if data.get("$status") == "$SUSPEND":
        reason = data.get("reason")
        if isinstance(reason, str) and reason.strip():
            return "$SUSPEND", {"$status": "$SUSPEND", "reason": reason}
        return None
    if single:
        if "$status" in data:
            if data["$status"] != "_":
                return None
            del data["$status"]
        status = "_"
    else:
        status = data.get("$status")
        if not isinstance(status, str) or status not in role.contract.statuses:
            return None
    if any(k.startswith("$") and k != "$status" for k in data):
        return None  # reserved; no test role declares such a key
    return (status, data) if _whole_schema_valid(role, data) else None


def assert_sound(role: Role, out: Output) -> None:
    """Whatever was accepted is a valid reply for the role."""
    json.dumps(out.frontmatter)  # plain JSON data only: no dates, bytes or sets
    if out.status == "$SUSPEND":
        assert set(out.frontmatter) == {"$status", "reason"}
        assert out.frontmatter["reason"].strip()
    elif role.contract.single_exit:
        assert out.status == "_" and "$status" not in out.frontmatter
        assert _whole_schema_valid(role, out.frontmatter)
    else:
        assert out.frontmatter["$status"] == out.status
        assert out.status in role.contract.statuses
        assert _whole_schema_valid(role, out.frontmatter)


# --------------------------------------------------------------------------- arbitrary text

FRAGMENTS = [
    "---",
    "...",
    "```",
    "```yaml",
    "```markdown",
    "~~~",
    "$status: ready",
    "$status: done",
    "$status: approved",
    "$status: $SUSPEND",
    "$status: _",
    "status: rejected",
    "reason: stuck",
    "plan: x",
    "repoPath: /r",
    "comments: yes",
    "summary: ok",
    "files: [{path: a, change: added}]",
    "tests: {passed: 1, failed: 0}",
    "branch: fix/a",
    "key: [",
    "a: b: c",
    "- item",
    "  nested: 1",
    "\tTab: 1",
    "*alias",
    "&anchor x",
    "!tag x",
    "%YAML 1.2",
    "? complex",
    "'unclosed",
    "Here is my reply:",
    "",
    "\ufeff",
    "\r",
    "2024-01-01: 1:30",
]

fragment_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=25
).map(lambda parts: "\n".join(parts))


@SETTINGS
@given(role=st.sampled_from(ROLES), text=st.one_of(st.text(max_size=300), fragment_text))
def test_any_text_is_an_output_or_an_extract_error(role: str, text: str) -> None:
    try:
        out = extract_output(text, GRAPH.roles[role])
    except ExtractError as exc:
        assert exc.errors and all(isinstance(e, str) and e.strip() for e in exc.errors)
        assert all("\n" not in e for e in exc.errors)
        return
    assert_sound(GRAPH.roles[role], out)


# --------------------------------------------------------------------------- generated replies

TEXT = st.text(
    alphabet=st.characters(max_codepoint=0xFFFD, exclude_categories=("Cs",)), max_size=20
)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8,
)
STATUS_WORDS = [
    "ready",
    "continue",
    "insufficient_info",
    "done",
    "failed",
    "approved",
    "rejected",
    "tracked",
    "_",
    "$SUSPEND",
    "Ready",
    "approve",
    "",
]
file_entry = st.fixed_dictionaries(
    {"path": TEXT, "change": st.sampled_from(["added", "modified", "deleted", "add"])},
    optional={"extra": json_scalars},
)
# Values that are often right for the fixture roles' fields, so that valid replies are common.
FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "plan": TEXT,
    "repoPath": TEXT,
    "branch": st.one_of(st.from_regex(r"\Afix/[a-z0-9-]{1,8}\Z"), TEXT),
    "worktree": TEXT,
    "question": TEXT,
    "reason": st.one_of(TEXT, st.just("a reason long enough")),
    "files": st.lists(file_entry, max_size=3),
    "tests": st.fixed_dictionaries(
        {"passed": st.integers(-1, 5)}, optional={"failed": st.integers(0, 5)}
    ),
    "target": st.one_of(
        TEXT, st.fixed_dictionaries({"file": TEXT}, optional={"line": st.integers(1, 9)})
    ),
    "comments": TEXT,
    "confirmed": st.sampled_from(["yes", "no", "on", "off"]),
    "score": st.integers(-1, 11),
    "blocking": st.booleans(),
    "status": st.one_of(st.sampled_from(["open", "closed"]), st.sampled_from(STATUS_WORDS)),
    "note": TEXT,
    "summary": TEXT,
    "tags": st.lists(st.sampled_from(["bug-fix", "parser", "Bad Tag"]), max_size=3),
    "title": TEXT,
    "$status": st.sampled_from(STATUS_WORDS),
}
KEYS = [*FIELD_VALUES, "$next", "extra"]


@st.composite
def frontmatters(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.lists(st.one_of(st.sampled_from(KEYS), TEXT), max_size=7, unique=True))
    return {
        k: draw(st.one_of(FIELD_VALUES[k], json_values) if k in FIELD_VALUES else json_values)
        for k in keys
    }


@st.composite
def frontmatters_for(draw: st.DrawFn, role_name: str) -> dict[str, Any]:
    """Mostly well-formed mappings for one role (its statuses and fields), with slips: a field
    missing, a wrong value, an extra key, `status` for `$status`, a wrong status."""
    contract = GRAPH.roles[role_name].contract
    status = draw(
        st.one_of(st.sampled_from(list(contract.statuses)), st.sampled_from(STATUS_WORDS))
    )
    chosen = contract.statuses.get(status) or draw(
        st.sampled_from(list(contract.statuses.values()))
    )
    data: dict[str, Any] = {}
    if not contract.single_exit or draw(st.integers(0, 9)) == 0:
        data[draw(st.sampled_from(["$status"] * 4 + ["status"]))] = status
    for name in sorted(chosen.required):
        if draw(st.integers(0, 9)) > 0:
            data[name] = draw(FIELD_VALUES.get(name, json_values))
    for name in sorted(chosen.optional):
        if draw(st.booleans()):
            data[name] = draw(FIELD_VALUES.get(name, json_values))
    if draw(st.integers(0, 4)) == 0:
        data.update(draw(frontmatters()))
    return data


_PLAIN = re.compile(r"\A[A-Za-z_$][A-Za-z0-9_$]*\Z")
_YAML_WORDS = {"null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE"}


def _scalar(text: str) -> str:
    """A key or status as YAML: plain where that reads back as the same text, else JSON."""
    if _PLAIN.match(text) and text not in _YAML_WORDS:
        return text
    return json.dumps(text)


def to_yaml(data: dict[str, Any]) -> str:
    lines = []
    for key, value in data.items():
        if key == "$status" and isinstance(value, str):
            rendered = _scalar(value)
        else:
            # JSON is YAML 1.2 flow syntax; ASCII escapes keep every character readable.
            rendered = json.dumps(value)
        lines.append(f"{_scalar(key)}: {rendered}")
    return "\n".join(lines)


BODY = st.lists(
    st.one_of(
        st.text(
            alphabet=st.characters(
                exclude_categories=("Cs", "Cc"), exclude_characters="`~", max_codepoint=0x2FFF
            ),
            max_size=12,
        ),
        st.sampled_from(["\n", "---", "\n---\n", "# heading", "  ", "..."]),
    ),
    max_size=10,
).map("".join)


def expected_body(body: str) -> str:
    lines = body.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines).rstrip()


@st.composite
def replies(draw: st.DrawFn, role_name: str) -> tuple[str, dict[str, Any], str]:
    data = draw(st.one_of(frontmatters_for(role_name), frontmatters()))
    body = draw(BODY)
    text = f"---\n{to_yaml(data)}\n{draw(st.sampled_from(['---', '...']))}\n{body}"
    if draw(st.booleans()):
        info = draw(st.sampled_from(["markdown", "md", "yaml", ""]))
        text = f"```{info}\n{text}\n```\n"
    if draw(st.booleans()):
        text = (
            draw(st.sampled_from(["Here is my reply:\n\n", "\n\n", "Sure.\nDone below.\n"])) + text
        )
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    if draw(st.booleans()):
        text = "\ufeff" + text
    return text, data, body


@SETTINGS
@given(case=st.sampled_from(ROLES).flatmap(lambda r: st.tuples(st.just(r), replies(r))))
def test_accepts_exactly_the_valid_replies(case: tuple[str, tuple[str, Any, str]]) -> None:
    role, (text, data, body) = case
    the_role = GRAPH.roles[role]
    expected = expected_outcome(the_role, data)
    event("valid" if expected is not None else "invalid")
    try:
        out = extract_output(text, the_role)
    except ExtractError as exc:
        assert expected is None, f"a valid reply was refused: {exc.errors}"
        return
    assert expected is not None, f"an invalid reply was accepted: {data!r}"
    assert (out.status, out.frontmatter) == expected
    assert out.body == expected_body(body)
    assert_sound(the_role, out)


@SETTINGS
@given(data=frontmatters())
def test_a_mapping_reads_back_as_written(data: dict[str, Any]) -> None:
    """The YAML stage keeps every value and its type: what is written is what is validated."""
    from orchestrator.extract import parse_reply

    parsed, body = parse_reply(f"---\n{to_yaml(data)}\n---\nbody")
    assert parsed == data and body == "body"
    assert json.dumps(parsed, sort_keys=True) == json.dumps(data, sort_keys=True)


@pytest.mark.parametrize("role", ROLES)
def test_generators_reach_both_outcomes(role: str) -> None:
    """Guard against a vacuous property: valid replies are generated for every role."""
    the_role = GRAPH.roles[role]
    outcomes: set[bool] = set()

    @settings(max_examples=200, deadline=None, database=None, derandomize=True)
    @given(data=frontmatters_for(role))
    def collect(data: dict[str, Any]) -> None:
        outcomes.add(expected_outcome(the_role, data) is not None)

    collect()
    assert outcomes == {True, False}
