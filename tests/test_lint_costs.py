"""The cuts of `validate`'s cost keep what it finds (docs/performance.md, "validate: the second
pass"): the metaschema's number check skips its path walk only where the walk would refuse
nothing, and a graph's roles all get the graph's folder, resolved once."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from orchestrator.definition import metaschema
from orchestrator.definition.actor_specs import folder_of
from orchestrator.definition.loader import load_graph

ODD = [10**5000, -(10**5000), math.inf, -math.inf, math.nan]  # 5,001 digits: past the limit


def _values() -> st.SearchStrategy[Any]:
    leaf = st.one_of(
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([*ODD[2:], 10**700, True, None, "x", 2**2001]),
        st.sampled_from([1, -1]).map(lambda sign: sign * 10**5000),  # unprintable: no repr
    )
    keys = st.sampled_from(["type", "multipleOf", "minimum", "const", "items", "p"])
    return st.recursive(
        leaf,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
        max_leaves=12,
    )


def _walk_refuses(schema: Any) -> bool:
    """What the path walk alone says (the fast scan switched off)."""
    try:
        _walk(schema)
    except metaschema.SchemaProblem:
        return True
    return False


def _walk(schema: Any) -> None:
    scan = metaschema._no_odd_numbers
    metaschema._no_odd_numbers = lambda s: False  # type: ignore[assignment]
    try:
        metaschema._check_numbers(schema, ())
    finally:
        metaschema._no_odd_numbers = scan  # type: ignore[assignment]


@settings(max_examples=300, deadline=None)
@given(schema=_values())
@example(schema={"multipleOf": math.inf})
@example(schema={"items": [{"minimum": 10**700}]})  # flagged, yet printable: the walk passes it
def test_the_quick_scan_passes_only_what_the_walk_passes(schema: Any) -> None:
    if metaschema._no_odd_numbers(schema):
        assert not _walk_refuses(schema)
    # and with the scan on, the same verdict and the same message as the walk alone
    try:
        metaschema._check_numbers(schema, ())
        quick = ""
    except metaschema.SchemaProblem as exc:
        quick = exc.message
    try:
        _walk(schema)
        slow = ""
    except metaschema.SchemaProblem as exc:
        slow = exc.message
    assert quick == slow


@pytest.mark.parametrize("odd", ODD, ids=["big", "-big", "inf", "-inf", "nan"])
def test_an_odd_number_deep_in_a_schema_is_still_refused(odd: Any) -> None:
    schema = {"oneOf": [{"properties": {"a": {"multipleOf": odd, "maximum": odd}}}]}
    assert not metaschema._no_odd_numbers(schema)
    assert _walk_refuses(schema)
    with pytest.raises(metaschema.SchemaProblem):
        metaschema.check_schema(schema)


def test_control_a_plain_schema_passes_the_quick_scan() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 10**6}}}
    assert metaschema._no_odd_numbers(schema)
    metaschema.check_schema(schema)


def test_every_role_gets_its_graph_files_folder(tmp_path: Path) -> None:
    folder = tmp_path / "project" / "graphs"
    folder.mkdir(parents=True)
    (tmp_path / "link").symlink_to(folder)
    roles = "".join(
        f"  r{i}:\n    description: d\n    goal: g\n    capabilities: [work]\n"
        "    frontmatter: { type: object }\n"
        for i in range(3)
    )
    text = (
        "name: g\ndescription: d\nroles:\n"
        + roles
        + "graph:\n  $START:\n    _: { role: r0, prompt: go }\n"
        + "".join(f"  r{i}:\n    _: {{ role: $END, prompt: done }}\n" for i in range(3))
    )
    (folder / "g.yaml").write_text(text, encoding="utf-8")
    graph = load_graph(tmp_path / "link" / "g.yaml")  # through a link: resolved to the real one
    assert {role.folder for role in graph.roles.values()} == {str(folder.resolve())}
    assert folder_of(tmp_path / "link" / "g.yaml") == str(folder.resolve())
