"""The flat frontmatter fast path (extract/flatyaml.py) against libyaml's events (parse.py).

Differential: on generated blocks, whenever the fast path reads a block, the general path reads
the same block to the same data (values and their types, key order); the fast path must also be
taken often enough for that to mean something. Controls: a fast path with a wrong value
resolution is caught by the same comparison, and blocks the fast path must leave alone (comments,
quotes, indentation, duplicates, errors) go to libyaml, whose messages are unchanged.
"""

from __future__ import annotations

import contextlib
import math
import random
import re
from typing import Any

import pytest

from orchestrator.extract import parse
from orchestrator.extract.flatyaml import flat_mapping
from orchestrator.extract.output import ExtractError
from orchestrator.extract.parse import _load_events, _resolve_plain, load_yaml, parse_reply

KEYS = ["$status", "title", "score", "a", "b_c", "x.y", "k-1", "true", "null", "1", "_", "yes"]
VALUES = [
    "draft",
    "3",
    "-3",
    "0",
    "007",
    "0o17",
    "0x1F",
    "0xZZ",
    "1.5",
    "1e3",
    "1e400",
    "1_000",
    "true",
    "True",
    "TRUE",
    "tRue",
    "false",
    "yes",
    "no",
    "on",
    "null",
    "Null",
    "NULL",
    "nan",
    "inf",
    "2024-05-01",
    "1",
    "12 34",
    "a  b",
    "it's fine",
    "one, two; three",
    "a/b (c) + d",
    "-x",
    "- x",
    "-",
    "x-",
    "x ",
    " x",
    "a #b",
    "a#b",
    "a: b",
    "a:b",
    "'q'",
    '"q"',
    "[1]",
    "{a: 1}",
    "*ref",
    "&anchor x",
    "!tag x",
    "|",
    ">",
    "@x",
    "`x`",
    "%x",
    "?",
    "? x",
    "x?",
    "~",
    "",
    ".5",
    ".inf",
    "-.inf",
    ".nan",
    "é",
    "x\ty",
    "1" * 30,
    "9" * 5000,
]


def block(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(1, 4)):
        key = rng.choice(KEYS)
        sep = ": " if rng.random() < 0.8 else rng.choice([":  ", ":", " : ", ":\t"])
        prefix = "" if rng.random() < 0.9 else rng.choice([" ", "- "])
        lines.append(f"{prefix}{key}{sep}{rng.choice(VALUES)}")
    if rng.random() < 0.1:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(["", "# note", "---", "..."]))
    return "\n".join(lines)


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 is not True, 1.0 is not 1); NaN is NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def slow(text: str) -> Any:
    try:
        return _load_events(text)
    except ExtractError as exc:
        return exc


def test_the_fast_path_reads_what_libyaml_reads() -> None:
    rng = random.Random(23)
    taken = 0
    for _ in range(6000):
        text = block(rng)
        fast = flat_mapping(text, _resolve_plain)
        if fast is None:
            continue
        taken += 1
        assert same(fast, slow(text)), text
    assert taken > 500  # the comparison ran on enough blocks the fast path took


def test_every_value_alone_agrees_or_is_left_to_libyaml() -> None:
    for value in VALUES:
        for key in KEYS:
            text = f"{key}: {value}"
            fast = flat_mapping(text, _resolve_plain)
            if fast is not None:
                assert same(fast, slow(text)), text


def test_control_a_wrong_fast_path_is_caught_by_the_comparison() -> None:
    """The same comparison, with the values kept as text (no YAML 1.2 resolution): it must fail."""
    rng = random.Random(23)
    caught = 0
    for _ in range(2000):
        text = block(rng)
        wrong = flat_mapping(text, lambda value: value)
        if wrong is not None and not same(wrong, slow(text)):
            caught += 1
    assert caught > 50


def test_typical_replies_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(text: str) -> Any:
        raise AssertionError(f"libyaml was asked to read {text!r}")

    monkeypatch.setattr(parse, "_load_events", refuse)
    data, body = parse_reply("---\n$status: revise\ncomments: tighten it\nscore: 3\n---\nNotes.\n")
    assert data == {"$status": "revise", "comments": "tighten it", "score": 3}
    assert body == "Notes."


@pytest.mark.parametrize(
    "text",
    [
        "$status: draft  # a comment",
        "title: 'quoted'",
        "a: 1\na: 2",
        "a: 1\n  b: 2",
        "a: *alias",
        "a: &x 1",
        "a: !!int 1",
        "a: b: c",
        "a: |\n  text",
        "",
        "a: 1\n\nb: 2",
        "a: [1, 2]",
    ],
)
def test_control_other_blocks_go_to_libyaml(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert flat_mapping(text, _resolve_plain) is None
    asked: list[str] = []

    def general(block: str) -> Any:
        asked.append(block)
        return _load_events(block)

    monkeypatch.setattr(parse, "_load_events", general)
    with contextlib.suppress(ExtractError):
        load_yaml(text)
    assert asked == [text]


def test_a_duplicate_key_keeps_its_message() -> None:
    with pytest.raises(ExtractError) as caught:
        load_yaml("$status: a\n$status: b")
    assert "appears twice (lines 1 and 2)" in str(caught.value)


def resolved_in_full(value: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`_resolve_plain` with its shortcut for text switched off (every pattern tried)."""
    with monkeypatch.context() as patched:
        patched.setattr(parse, "_NOT_TEXT", re.compile(""))
        return _resolve_plain(value)


def test_the_shortcut_for_text_resolves_as_the_patterns_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(5)
    alphabet = "aeNnTtFfLlu0189.-+~_ xXoOeEiI"
    values = list(VALUES) + [
        "".join(rng.choices(alphabet, k=rng.randint(0, 6))) for _ in range(4000)
    ]
    short_cut = 0
    for value in values:
        if value and not parse._NOT_TEXT.match(value):
            short_cut += 1
        assert same(_resolve_plain(value), resolved_in_full(value, monkeypatch)), value
    assert short_cut > 500


def test_control_a_shortcut_too_wide_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Digits alone as the values that may not be text: `-3`, `null`, `true` are then wrong."""
    monkeypatch.setattr(parse, "_NOT_TEXT", re.compile("[0-9]"))
    wrong = [v for v in VALUES if not same(_resolve_plain(v), resolved_in_full(v, monkeypatch))]
    assert {"-3", "null", "true", "~", ".5"} <= set(wrong)


def test_character_level_blocks_agree_too() -> None:
    """Keys and values made character by character from what the fast path accepts (and a
    colon, a hash, a quote now and then), compared the same way."""
    rng = random.Random(2)
    value_chars = "aZeEnNtTfFxXo09 _.,;/()+'-"
    key_chars = "aZ09_$.-"
    taken = 0
    for _ in range(5000):
        lines = []
        for _ in range(rng.randint(1, 3)):
            key = rng.choice("aZ_$") + "".join(rng.choices(key_chars, k=rng.randint(0, 4)))
            value = "".join(rng.choices(value_chars, k=rng.randint(1, 10)))
            if rng.random() < 0.1:
                value += rng.choice([":", " #", '"', ": x", "\t"])
            lines.append(f"{key}:{rng.choice([' ', ' ', '  '])}{value}")
        text = "\n".join(lines)
        fast = flat_mapping(text, _resolve_plain)
        if fast is not None:
            taken += 1
            assert same(fast, slow(text)), text
    assert taken > 1000
