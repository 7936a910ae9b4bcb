"""The theory of operation numbers each rule once, and the moderator's tables test every one.

The rules are those listed in orchestrator/core/engine.py's docstring: a rule is named where it
is defined, at the start of a line (`A4 StepCommitted ...`) or in the right-hand column after a
run of spaces (`... D9 Record(...)`); anywhere else a name is a reference. The rows are the
string names of the table-driven tests (tests/test_moderator*.py), which start with a rule's
name (`"J10 Ctrl-C at a person's step"`). Every listed rule must have a row, every row must name
a listed rule, and every reference in the moderator's modules must name a listed rule. Any group
of rules (A, D, J, S, ...) is read the same way.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import orchestrator.core.engine as engine

ROOT = Path(__file__).resolve().parent.parent
NAME = r"[A-Z]\d+[a-z]?"
DEFINED = re.compile(rf"(?:^\s*|\s{{2,}})({NAME})\s")
MENTIONED = re.compile(rf"(?<![\w.$-])({NAME})(?:-({NAME}))?(?![\w(])")
ROW = re.compile(rf"^({NAME}) ")


def theory(text: str) -> list[str]:
    """The rule names a theory of operation defines, in order (repeats kept)."""
    start = text.index("Theory of operation")
    return [m.group(1) for line in text[start:].splitlines() for m in DEFINED.finditer(line)]


def row_names(files: list[Path]) -> dict[str, list[str]]:
    """Rule name -> the rows that name it, from the string constants of the table tests."""
    rows: dict[str, list[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and (match := ROW.match(text)):
                rows.setdefault(match.group(1), []).append(f"{path.name}: {text}")
    return rows


def table_files() -> list[Path]:
    return sorted((ROOT / "tests").glob("test_moderator*.py"))


def test_the_parsers_see_definitions_rows_and_their_mistakes() -> None:
    """Control: the reading itself can fail (a repeated or missing rule is seen)."""
    text = (
        "Theory of operation\n"
        "    A1 ThreadStarted  -> running\n"
        "decide: a step in flight (as D5-D8)                 D3 RunStep\n"
        "        branches running                            D3 RunBranches\n"
        "    S1 a child starts; see (A1) and J3, J4 or J6b\n"
    )
    assert theory(text) == ["A1", "D3", "D3", "S1"]
    assert [n for n, c in Counter(theory(text)).items() if c > 1] == ["D3"]
    mentioned = {n for m in MENTIONED.finditer(text) for n in m.groups() if n}
    assert {"D5", "D8", "J3", "J4", "J6b", "S1"} <= mentioned


def test_the_theory_numbers_each_rule_once() -> None:
    names = theory(engine.__doc__ or "")
    assert len(names) > 40
    repeated = sorted(n for n, count in Counter(names).items() if count > 1)
    assert not repeated, f"rules named twice in the theory of operation: {repeated}"


def test_every_listed_rule_has_a_row_and_every_row_names_a_listed_rule() -> None:
    listed = set(theory(engine.__doc__ or ""))
    rows = row_names(table_files())
    missing = sorted(listed - set(rows))
    assert not missing, f"rules of the theory with no row in tests/test_moderator*.py: {missing}"
    unknown = {name: rows[name] for name in sorted(set(rows) - listed)}
    assert not unknown, f"rows that name no rule of the theory: {unknown}"


def stale_references(text: str, listed: set[str]) -> list[str]:
    """References to rules the theory does not list, and ranges from a group's first rule
    (`J1-J17`: the whole group) that stop short of its last, as `line: what`."""
    last: dict[str, int] = {}
    for name in listed:
        last[name[0]] = max(last.get(name[0], 0), int(re.sub(r"\D", "", name)))
    stale: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in MENTIONED.finditer(line):
            first, end = match.groups()
            stale += [f"{number}: {n}" for n in (first, end) if n and n not in listed]
            if end and first[1:] == "1" and int(re.sub(r"\D", "", end)) < last.get(end[0], 0):
                stale.append(f"{number}: {first}-{end} stops short")
    return stale


def test_a_stale_reference_is_seen() -> None:
    """Control for the test below: the old `J1-J17` and a rule that is gone are caught."""
    listed = {f"J{n}" for n in range(1, 20)} | {"D1"}
    assert stale_references("Rules J1-J17 of the theory, and J15-J17, D1", listed) == [
        "1: J1-J17 stops short"
    ]
    assert stale_references("see D9b", listed) == ["1: D9b"]


def test_the_moderators_modules_refer_only_to_listed_rules() -> None:
    """A comment or docstring citing `J17` or `D1-D14` must not point past the theory."""
    listed = set(theory(engine.__doc__ or ""))
    stale = [
        f"{path.name}:{where}"
        for path in sorted((ROOT / "orchestrator" / "core").glob("*.py"))
        for where in stale_references(path.read_text(encoding="utf-8"), listed)
    ]
    assert not stale, f"references to rules the theory does not list: {stale}"
