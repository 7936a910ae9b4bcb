"""A suite file (docs/evals.md): the graph under test and its cases, checked whole on load.

Every mistake is reported with the file and line it is on (the suite's YAML, or the line of a
`cases:` JSONL file), all of them at once, before any run starts: a suite that cannot be run
costs nothing. `@path` inputs are read here, relative to the suite's folder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..definition.yamlpos import SourceMap, YamlSyntaxError, load_yaml
from ..errors import InputError
from ..run.input_files import FileRefused, read_regular_file

MAX_FILE = 50_000_000  # bytes of a suite, a cases file or an @input
CASE_KEYS = {"id", "inputs", "workspace", "expect"}
EXPECT_KEYS = {
    "ending",
    "path_contains",
    "fields",
    "command",
    "python",
    "judge",
    "max_cost_usd",
}
SUITE_KEYS = {"eval", "graph", "cases", "defaults", "description"}


class SuiteError(InputError):
    """The suite cannot be run; the message lists every problem as `file:line: what`."""


@dataclass(frozen=True)
class Command:
    run: str  # a shell command line, run with `sh -c` in the final workspace
    copy: Path | None = None  # a folder of the suite copied into the workspace first
    timeout: float = 300.0


@dataclass(frozen=True)
class Judge:
    role: str  # a role of the graph under test, or of the role library
    min_score: float = 0.5


@dataclass(frozen=True)
class Expect:
    ending: str | None = None
    path_contains: tuple[str, ...] = ()
    fields: dict[str, Any] = field(default_factory=dict)
    command: Command | None = None
    python: str | None = None  # "module:function", imported from the suite's folder
    judge: Judge | None = None
    max_cost_usd: float | None = None


@dataclass(frozen=True)
class Case:
    id: str
    inputs: dict[str, Any]
    workspace: Path | None  # copied (or cloned) fresh for every run; None: an empty folder
    expect: Expect
    where: str  # file:line of the case, for messages


@dataclass(frozen=True)
class Suite:
    path: Path
    graph: str | None  # the graph under test, as written (resolved from the suite's folder)
    cases: tuple[Case, ...]

    @property
    def folder(self) -> Path:
        return self.path.parent


class _Problems:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{where}: {message}")


def _read(path: Path) -> str:
    try:
        return read_regular_file(path, MAX_FILE).decode("utf-8")
    except FileRefused as exc:
        raise SuiteError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{path} is not UTF-8 text (bad byte at offset {exc.start})") from None


def load_suite(path: str | Path) -> Suite:
    """The suite at `path`; SuiteError naming each problem's file and line."""
    path = Path(path).resolve()
    if not path.is_file():
        raise SuiteError(f"{path}: no such suite file")
    try:
        data, smap = load_yaml(_read(path), str(path))
    except YamlSyntaxError as exc:
        raise SuiteError(f"{path}:{exc.line}: YAML syntax: {exc.message}") from None
    problems = _Problems()

    def at(*keys: str | int) -> str:
        return f"{path}:{smap.at(keys)[0]}"

    if not isinstance(data, dict):
        raise SuiteError(f"{path}:1: a suite is a mapping with `eval: 1`, `graph:` and `cases:`")
    if data.get("eval") != 1:
        problems.add(at("eval"), "the suite must start with `eval: 1`")
    for key in data:
        if key not in SUITE_KEYS:
            problems.add(at(key), f"unknown key {key!r} (known: {', '.join(sorted(SUITE_KEYS))})")
    graph = data.get("graph")
    if graph is not None and not isinstance(graph, str):
        problems.add(at("graph"), "`graph` is the name or path of a graph file")
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        problems.add(at("defaults"), "`defaults` is a mapping (workspace, inputs, expect)")
        defaults = {}
    dexpect = defaults.get("expect")
    if isinstance(dexpect, dict):  # reported where they are written, not at every case
        for key in [k for k in dexpect if k not in EXPECT_KEYS]:
            problems.add(
                at("defaults", "expect", key),
                f"unknown expectation {key!r} (known: {', '.join(sorted(EXPECT_KEYS))})",
            )
        defaults = {**defaults, "expect": {k: v for k, v in dexpect.items() if k in EXPECT_KEYS}}
    raw_cases = data.get("cases")
    cases: list[Case] = []
    if isinstance(raw_cases, str):
        cases = _jsonl_cases(path.parent / raw_cases, path.parent, defaults, problems)
    elif isinstance(raw_cases, list):
        for i, raw in enumerate(raw_cases):
            case = _case(raw, at("cases", i), path.parent, defaults, problems, smap, ("cases", i))
            if case is not None:
                cases.append(case)
    else:
        problems.add(at("cases"), "`cases` is a list of cases, or the path of a JSONL file")
    seen: dict[str, str] = {}
    for case in cases:
        if case.id in seen:
            problems.add(
                case.where, f"case id {case.id!r} is used twice (first at {seen[case.id]})"
            )
        seen.setdefault(case.id, case.where)
    if not cases and not problems.items:
        problems.add(at("cases"), "the suite has no cases")
    if problems.items:
        raise SuiteError("\n".join(problems.items))
    return Suite(path, graph, tuple(cases))


def _jsonl_cases(
    file: Path, folder: Path, defaults: dict[str, Any], problems: _Problems
) -> list[Case]:
    if not file.is_file():
        problems.add(str(file), "no such cases file")
        return []
    cases: list[Case] = []
    for number, line in enumerate(_read(file).splitlines(), 1):
        if not line.strip():
            continue
        where = f"{file}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(where, f"not JSON: {exc.msg}")
            continue
        case = _case(raw, where, folder, defaults, problems, None, ())
        if case is not None:
            cases.append(case)
    return cases


def _case(
    raw: Any,
    where: str,
    folder: Path,
    defaults: dict[str, Any],
    problems: _Problems,
    smap: SourceMap | None,
    base: tuple[str | int, ...],
) -> Case | None:
    def at(*keys: str) -> str:
        if smap is None:
            return where
        return f"{where.rsplit(':', 1)[0]}:{smap.at((*base, *keys))[0]}"

    if not isinstance(raw, dict):
        problems.add(where, "a case is a mapping with `id`, `inputs` and `expect`")
        return None
    before = len(problems.items)
    for key in raw:
        if key not in CASE_KEYS:
            problems.add(
                at(key), f"unknown case key {key!r} (known: {', '.join(sorted(CASE_KEYS))})"
            )
    case_id = raw.get("id")
    if not isinstance(case_id, str) or not case_id.strip():
        problems.add(at("id"), "every case needs an `id` (a short text)")
        case_id = "?"
    elif not all(c.isalnum() or c in "-_." for c in case_id) or case_id.startswith("."):
        problems.add(at("id"), f"case id {case_id!r}: use letters, digits, '-', '_' and '.'")
    inputs = {**(defaults.get("inputs") or {}), **(raw.get("inputs") or {})}
    if not isinstance(raw.get("inputs", {}), dict):
        problems.add(at("inputs"), "`inputs` is a mapping of input names to values")
        inputs = {}
    for name, value in list(inputs.items()):
        if isinstance(value, str) and value.startswith("@"):
            file = folder / value[1:]
            try:
                inputs[name] = _read(file)
            except SuiteError as exc:
                problems.add(at("inputs", name), f"input {name!r}: {exc}")
    workspace: Path | None = None
    ws = raw.get("workspace", defaults.get("workspace"))
    if ws is not None:
        if not isinstance(ws, str):
            problems.add(at("workspace"), "`workspace` is a folder, relative to the suite")
        else:
            workspace = (folder / ws).resolve()
            if not workspace.is_dir():
                problems.add(at("workspace"), f"workspace {ws!r}: no such folder ({workspace})")
    expect_raw = {**(defaults.get("expect") or {}), **(raw.get("expect") or {})}
    expect = _expect(expect_raw, at, folder, problems)
    if len(problems.items) > before:
        return None
    return Case(case_id, inputs, workspace, expect, where)


def _expect(raw: Any, at: Any, folder: Path, problems: _Problems) -> Expect:
    if not isinstance(raw, dict):
        problems.add(at("expect"), "`expect` is a mapping of expectations")
        return Expect()
    for key in raw:
        if key not in EXPECT_KEYS:
            problems.add(
                at("expect", key),
                f"unknown expectation {key!r} (known: {', '.join(sorted(EXPECT_KEYS))})",
            )
    ending = raw.get("ending")
    if ending is not None and not isinstance(ending, str):
        problems.add(at("expect", "ending"), "`ending` is the name of an ending")
    path = raw.get("path_contains", [])
    if isinstance(path, str):
        path = [path]
    if not isinstance(path, list) or not all(isinstance(r, str) for r in path):
        problems.add(at("expect", "path_contains"), "`path_contains` is a list of role names")
        path = []
    fields = raw.get("fields", {})
    if not isinstance(fields, dict):
        problems.add(
            at("expect", "fields"), "`fields` maps names like `$steps.tester.result` to values"
        )
        fields = {}
    python = raw.get("python")
    if python is not None and (not isinstance(python, str) or ":" not in python):
        problems.add(at("expect", "python"), "`python` is `module:function`")
        python = None
    cost = raw.get("max_cost_usd")
    if cost is not None and (
        isinstance(cost, bool) or not isinstance(cost, (int, float)) or cost < 0
    ):
        problems.add(at("expect", "max_cost_usd"), "`max_cost_usd` is a number of dollars")
        cost = None
    return Expect(
        ending=ending if isinstance(ending, str) else None,
        path_contains=tuple(path),
        fields=dict(fields),
        command=_command(raw.get("command"), at, folder, problems),
        python=python,
        judge=_judge(raw.get("judge"), at, problems),
        max_cost_usd=float(cost) if cost is not None else None,
    )


def _command(raw: Any, at: Any, folder: Path, problems: _Problems) -> Command | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = {"run": raw}
    where = at("expect", "command")
    if not isinstance(raw, dict) or not isinstance(raw.get("run"), str) or not raw["run"].strip():
        problems.add(where, "`command` is a command line, or {run, copy, timeout}")
        return None
    copy = None
    if raw.get("copy") is not None:
        copy = (folder / str(raw["copy"])).resolve()
        if not copy.is_dir():
            problems.add(where, f"command: copy {raw['copy']!r}: no such folder ({copy})")
    timeout = raw.get("timeout", 300)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        problems.add(where, "command: `timeout` is a number of seconds")
        timeout = 300
    return Command(raw["run"], copy, float(timeout))


def _judge(raw: Any, at: Any, problems: _Problems) -> Judge | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = {"role": raw}
    where = at("expect", "judge")
    if not isinstance(raw, dict) or not isinstance(raw.get("role"), str):
        problems.add(where, "`judge` is a role name, or {role, min_score}")
        return None
    score = raw.get("min_score", 0.5)
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
        problems.add(where, "judge: `min_score` is a number in [0, 1]")
        score = 0.5
    return Judge(raw["role"], float(score))
