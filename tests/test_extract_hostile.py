"""Hostile replies and contracts (hypothesis): bounded in time and memory, never a traceback.

A reply comes from a model and a contract from a graph author; either may be built to hurt.
For YAML alias bombs, deep nesting, huge numbers and catastrophic patterns, `extract_output`
must return an `Output` whose frontmatter prints as JSON, or raise `ExtractError`, within a
time and a memory budget. The budgets are guards against a hang or a blow-up (a test that fails
instead of freezing the suite), not performance figures: they are orders of magnitude above
what the pipeline needs.

The reply parser never expands an alias: it refuses the first anchor, before reading further
(docs/format.md section 4 leaves a reply no use for anchors). So a billion-laughs frontmatter costs what its
first line costs, which `test_an_alias_bomb_is_refused_in_bounded_memory` checks in a process
whose address space is capped.
"""

from __future__ import annotations

import json
import math
import resource
import signal
import subprocess
import sys
import textwrap
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator import ExtractError, Output, extract_output
from orchestrator.definition.models import Role

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
SECONDS = 20.0  # per example: a hang guard, not a measurement
MEGABYTES = 64  # peak Python allocations per example


class Hung(Exception):
    pass


@contextmanager
def bounded(seconds: float = SECONDS, megabytes: int = MEGABYTES) -> Iterator[None]:
    """Fail, rather than hang, past `seconds`; fail when Python allocations peak past
    `megabytes`. (SIGALRM reaches Python code between bytecodes, and `re` checks for signals
    while it backtracks, so a catastrophic match is stopped too.)"""

    def alarm(signum: int, frame: FrameType | None) -> None:
        raise Hung(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    tracemalloc.start()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < megabytes << 20, f"allocated {peak >> 20} MB"


def make_role(schema: Any) -> Role:
    return Role(description="d", goal="g", frontmatter=schema)


ANY = make_role({"type": "object"})


def outcome(text: str, role: Role = ANY) -> Output | ExtractError:
    """The pipeline's answer, which must be one of the two, in bounded time and memory."""
    with bounded():
        try:
            out = extract_output(text, role)
        except ExtractError as exc:
            assert exc.errors and all(e.strip() and "\n" not in e for e in exc.errors)
            return exc
    json.dumps(out.frontmatter)  # what the CLI prints and the store records
    return out


# --------------------------------------------------------------------------- alias bombs


def alias_bomb(levels: int, width: int, style: str) -> str:
    """Billion laughs: each level an anchored list of `width` aliases of the level below."""
    lines = []
    for level in range(levels):
        items = ["lol"] * width if level == 0 else [f"*l{level - 1}"] * width
        if style == "flow":
            lines.append(f"l{level}: &l{level} [{', '.join(items)}]")
        elif style == "block":
            lines.append(f"l{level}: &l{level}")
            lines.extend(f"  - {item}" for item in items)
        else:  # merge keys: each level a mapping that merges the level below
            body = ", ".join(f"k{i}: {item}" for i, item in enumerate(items))
            merge = f"<<: *l{level - 1}, " if level else ""
            lines.append(f"l{level}: &l{level} {{{merge}{body}}}")
    lines.append(f"top: *l{levels - 1}")
    return "\n".join(lines)


@SETTINGS
@given(
    levels=st.integers(1, 9),
    width=st.integers(1, 9),
    style=st.sampled_from(["flow", "block", "merge"]),
    status=st.sampled_from(["", "$status: _\n"]),
)
def test_alias_bombs_are_refused_without_expanding(
    levels: int, width: int, style: str, status: str
) -> None:
    result = outcome(f"---\n{status}{alias_bomb(levels, width, style)}\n---\nbody\n")
    assert isinstance(result, ExtractError)
    assert "is a YAML anchor, which a reply may not use" in result.errors[0]


def test_an_alias_bomb_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    # Nine levels of nine: 9**9 (387 million) nodes if expanded; far beyond a 1 GB process.
    (tmp_path / "g.yaml").write_text(
        textwrap.dedent(
            """\
            name: g
            description: d
            roles:
              r: { description: d, goal: g, frontmatter: { type: object } }
            graph:
              $START: { _: { role: r, prompt: go } }
              r: { _: { role: $END, prompt: done } }
            """
        )
    )

    def cap_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "extract", "--graph", "g.yaml", "--role", "r"],
        input=f"---\n{alias_bomb(9, 9, 'flow')}\n---\n",
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cap_memory,
    )
    assert (proc.returncode, proc.stdout) == (1, ""), proc.stderr
    assert proc.stderr.startswith("error: the frontmatter, line 1 (`l0: &l0 [lol, lol, lol, ")
    assert "`&l0` is a YAML anchor, which a reply may not use" in proc.stderr


# --------------------------------------------------------------------------- deep nesting

OPENERS = {"[": "]", "{": "}", "a: [": "]", "{a: ": "}", "- ": ""}


@SETTINGS
@given(
    depth=st.integers(60, 10_000),
    opener=st.sampled_from(sorted(OPENERS)),
    closed=st.booleans(),
)
def test_deep_flow_nesting_is_refused_or_read(depth: int, opener: str, closed: bool) -> None:
    value = opener * depth + (OPENERS[opener] * depth if closed else "")
    result = outcome(f"---\nv: {value}\n---\n")
    if depth > 64:
        assert isinstance(result, ExtractError)


@SETTINGS
@given(depth=st.integers(60, 600), key=st.sampled_from(["k", "- k", "-"]))
def test_deep_block_nesting_is_refused_or_read(depth: int, key: str) -> None:
    lines = [" " * (2 * i) + f"{key}{i}:" for i in range(depth)]
    result = outcome("---\n" + "\n".join(lines) + " leaf\n---\n")
    if depth > 64 and key != "-":
        assert isinstance(result, ExtractError)


# --------------------------------------------------------------------------- huge numbers

NUMBER_SCHEMAS = [
    {"type": "object"},
    {"properties": {"n": {"type": "integer", "maximum": 5}}},
    {"properties": {"n": {"type": "number", "multipleOf": 0.5}}},
    {"properties": {"n": {"type": "string"}}},
    {"properties": {"n": {"enum": [1, 2.5, "x"]}}},
    {"properties": {"n": {"exclusiveMinimum": 1e308}}},
]


@st.composite
def huge_numbers(draw: st.DrawFn) -> str:
    digits = draw(st.integers(300, 12_000))
    kind = draw(st.sampled_from(["int", "neg", "hex", "octal", "float", "exp", "special"]))
    if kind == "int":
        return "9" * digits
    if kind == "neg":
        return "-1" + "0" * digits
    if kind == "hex":
        return "0x" + "f" * digits
    if kind == "octal":
        return "0o" + "7" * digits
    if kind == "float":
        return "1" * digits + "." + "5" * draw(st.integers(0, 50))
    if kind == "exp":
        return f"1e{draw(st.sampled_from(['', '-', '+']))}{digits}"
    return draw(st.sampled_from([".inf", "-.inf", ".nan", "1e308", "-0.0", "4.9e-324"]))


@SETTINGS
@given(number=huge_numbers(), schema=st.sampled_from(NUMBER_SCHEMAS))
def test_huge_numbers_in_a_reply(number: str, schema: dict[str, Any]) -> None:
    outcome(f"---\nn: {number}\nlist: [{number}, {number}]\n---\n", make_role(schema))


@SETTINGS
@given(
    keyword=st.sampled_from(
        ["maxLength", "minLength", "minimum", "maximum", "exclusiveMaximum", "multipleOf", "const"]
    ),
    value=st.one_of(
        st.integers(300, 9_000).map(lambda d: 10**d),
        st.integers(300, 9_000).map(lambda d: -(10**d)),
        st.sampled_from([math.inf, -math.inf, math.nan, 1e-320, 1e308]),
    ),
    reply=st.sampled_from(["n: 5", "n: 2.5", "n: text", "n: 0x" + "f" * 2000, "n: .nan"]),
)
def test_huge_numbers_in_a_contract(keyword: str, value: Any, reply: str) -> None:
    outcome(f"---\n{reply}\n---\n", make_role({"properties": {"n": {keyword: value}}}))


# --------------------------------------------------------------------------- hostile patterns

# Patterns that backtrack exponentially in Python's `re` on the right input.
CATASTROPHIC = ["(a+)+", "(a|a)+", "(a|aa)+", "(a*)*", "(.*a){12}", "(\\w+\\s?)+", "(a?){30}a{30}"]


@st.composite
def hostile_patterns(draw: st.DrawFn) -> str:
    core = draw(
        st.one_of(st.sampled_from(CATASTROPHIC), st.text("a()|*+?.{}[]\\^$1-", max_size=12))
    )
    return draw(st.sampled_from(["^{}$", "{}", "^{}", "{}$", "{}b"])).format(core)


# The schema check compiles patterns with Python's `re` (format "regex"), which warns about
# some generated ones, such as `[[`.
@pytest.mark.filterwarnings("ignore::FutureWarning")
@SETTINGS
@given(
    pattern=hostile_patterns(),
    where=st.sampled_from(["pattern", "patternProperties", "additional", "unevaluated", "names"]),
    value=st.tuples(st.integers(0, 200), st.sampled_from(["", "b", "!", " ", "ab"])).map(
        lambda t: "a" * t[0] + t[1]
    ),
)
def test_hostile_patterns(pattern: str, where: str, value: str) -> None:
    schemas = {
        "pattern": {"properties": {"n": {"pattern": pattern}}},
        "patternProperties": {"patternProperties": {pattern: {"type": "integer"}}},
        "additional": {"patternProperties": {pattern: {}}, "additionalProperties": False},
        "unevaluated": {
            "anyOf": [{"patternProperties": {pattern: {}}}, {"required": ["n"]}],
            "unevaluatedProperties": False,
        },
        "names": {"propertyNames": {"pattern": pattern}},
    }
    key = json.dumps(value or "empty")
    outcome(f"---\nn: {json.dumps(value)}\n{key}: text\n---\n", make_role(schemas[where]))
