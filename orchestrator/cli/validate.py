"""`orchestrator validate [PATH...] [--format text|json] [--strict]`: check graph and role files.

Each PATH is a graph file, a role file (`roles/NAME.yaml` or `.md`), a graph's name as `run` takes
it (`solve-issue`: in ./graphs/, then the bundled graphs) or a folder: `graphs/` holds
graphs, `roles/` holds role files, and any other folder is searched for YAML files with a top-level
`graph:` key (and for `graphs/` and `roles/` folders inside it). Without PATHs, `./graphs` and
`./roles` are checked.

Exit codes: 0 clean or warnings only, 1 any error (or, with --strict, any warning: for CI), 2 a
path that does not exist or cannot be read, or nothing to check.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import click

from ..definition.problems import Problem

GRAPH_SUFFIXES = (".yaml", ".yml")
ROLE_SUFFIXES = (".yaml", ".yml", ".md")
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages"})
GRAPH_KEY = re.compile(r"^graph[ \t]*:", re.MULTILINE)
ROLE_KEY = re.compile(r"^frontmatter[ \t]*:", re.MULTILINE)
ROLE_NAMED = re.compile(r"\brole '[^']*'")


@click.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help='text: one problem per line, compiler style; json: {"problems": [...]}.',
)
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1): for CI.")
def validate(paths: tuple[Path, ...], fmt: str, strict: bool) -> None:
    """Check graph and role files, or graphs by name (default: ./graphs and ./roles)."""
    problems, checked = run_validate(list(paths), quiet_collector=True)
    if fmt == "json":
        click.echo(json.dumps({"problems": [p.to_dict() for p in problems]}, indent=2))
    else:
        for problem in problems:
            click.echo(problem.format())
        click.echo(summary(problems, checked))
    code = exit_code(problems)
    if strict and code == 0 and problems:  # only warnings are left
        code = 1
    click.get_current_context().exit(code)


# Collect cyclic garbage after this many new objects, not CPython's 700: loading a graph makes
# tens of thousands of short-lived YAML nodes, and each collection the default would run walks
# them (and, at the oldest generation, every object the imports made).
GC_THRESHOLD = 20_000


@contextlib.contextmanager
def _quiet_collector() -> Iterator[None]:
    """Make the garbage collector cheap while many files are checked: the modules the checks
    need are imported first and frozen (never scanned again), and collections run less often.
    The cyclic garbage loading makes is still collected, and the collector is left as it was
    found (tests run the command inside their own process). About a fifth of `validate`'s CPU
    time on many files (docs/performance.md, issue 23)."""
    # deferred: only a run with files to check pays for the linter's imports
    from .. import linter  # noqa: F401

    threshold = gc.get_threshold()
    # No collection first: in a process that goes on (a test runner calling the command many
    # times) a full collection of its whole heap at every call would cost more than it saves;
    # freezing and unfreezing only move the generations' lists.
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def run_validate(paths: list[Path], *, quiet_collector: bool = False) -> tuple[list[Problem], int]:
    """All problems in the given paths (or the defaults) and how many files were checked.

    quiet_collector: tune the garbage collector for a short process that checks many files (the
    `validate` command; not for a caller that goes on running)."""
    problems: list[Problem] = []
    files: list[tuple[Path, str]] = []
    if not paths:
        defaults = [p for p in (Path("graphs"), Path("roles")) if p.is_dir()]
        if not defaults:
            return [_nothing("no ./graphs or ./roles folder here; name a file or folder")], 0
        paths = defaults
    for path in paths:
        try:
            if not path.exists():
                named = by_name(path)
                if isinstance(named, Problem):
                    problems.append(named)
                else:
                    files.append((named, "graph"))
                continue
            found = list(discover(path))
        except (OSError, ValueError) as exc:  # a name too long, a NUL byte, a loop of links
            problems.append(_unreadable(path, str(exc)))
            continue
        if not found:
            problems.append(_nothing(f"no graph or role files found in {path}", path))
        files.extend(found)
    seen: set[Path] = set()
    borrowed: list[Problem] = []  # problems a file's check found in another file
    quiet = _quiet_collector() if quiet_collector and files else contextlib.nullcontext()
    with quiet:
        for file, kind in files:
            if file.absolute() in seen:
                continue
            seen.add(file.absolute())
            here = os.path.realpath(file)
            for problem in check_file(file, kind):
                (problems if os.path.realpath(problem.file) == here else borrowed).append(problem)
    # A library role's own problem is found again by every graph that extends it, under the
    # path the graph found it by: report it once, as the role file's own check (if it ran) has.
    places = {_place(p) for p in problems}
    for problem in borrowed:
        if _place(problem) not in places:
            places.add(_place(problem))
            problems.append(problem)
    return sorted(set(problems)), len(seen)


def by_name(path: Path) -> Path | Problem:
    """A graph named as `run` takes it (`solve-issue`: ./graphs/ first, then the bundled
    graphs), or why not. Anything that looks like a path is a missing file."""
    # deferred: the loader is only needed when a name is given
    from ..definition.loader import resolve_graph_path
    from ..definition.problems import GraphError

    arg = str(path)
    if len(path.parts) > 1 or path.suffix in GRAPH_SUFFIXES:
        return _unreadable(path, "no such file or folder")
    try:
        return resolve_graph_path(arg)
    except GraphError as err:
        found = err.problems[0]
        return Problem(
            found.file,
            1,
            1,
            "unreadable",
            "error",
            f"no file or folder {arg}, and {found.message}",
            found.hint,
        )


def _place(problem: Problem) -> tuple[str, int, int, str, str]:
    # The message is part of it: several problems may share a place (each unmapped tool of an
    # agent file's `tools: A, B, C` line), and each must be shown. The role it names is not:
    # each graph or role that meets a library role's problem names it by its own name.
    return (
        os.path.realpath(problem.file),
        problem.line,
        problem.column,
        problem.code,
        ROLE_NAMED.sub("role", problem.message),
    )


def check_file(path: Path, kind: str) -> list[Problem]:
    """Problems in one file; an unexpected failure becomes an internal-error problem."""
    # deferred: `validate` with nothing to check, or --help, does not load the linter
    from ..linter import internal_error, lint_graph_file, lint_role_file

    try:
        return lint_role_file(path) if kind == "role" else lint_graph_file(path)
    except Exception as exc:
        return [internal_error(str(path), exc)]


def discover(path: Path) -> Iterator[tuple[Path, str]]:
    """The files under a path, each with its kind: "graph" or "role"."""
    if path.is_file():
        yield path, _file_kind(path)
    elif path.is_dir():
        yield from _folder(path)


def _file_kind(path: Path) -> str:
    if path.suffix == ".md" or path.parent.name == "roles":
        return "role"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "graph"  # the loader reports why it cannot be read
    if not GRAPH_KEY.search(text) and ROLE_KEY.search(text):
        return "role"
    return "graph"


def _folder(folder: Path) -> Iterator[tuple[Path, str]]:
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return
    if folder.name == "graphs":
        yield from ((p, "graph") for p in entries if p.is_file() and p.suffix in GRAPH_SUFFIXES)
        return
    if folder.name == "roles":
        yield from ((p, "role") for p in entries if p.is_file() and p.suffix in ROLE_SUFFIXES)
        return
    for entry in entries:
        if entry.name.startswith(".") or entry.name in SKIP_DIRS:
            continue
        if entry.is_dir():
            yield from _folder(entry)
        elif entry.suffix in GRAPH_SUFFIXES and _has_graph_key(entry):
            yield entry, "graph"


def _has_graph_key(path: Path) -> bool:
    try:
        return bool(GRAPH_KEY.search(path.read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return False


def _unreadable(path: Path, reason: str) -> Problem:
    return Problem(str(path), 1, 1, "unreadable", "error", f"cannot read {path}: {reason}")


def _nothing(message: str, path: Path | None = None) -> Problem:
    return Problem(str(path or "."), 1, 1, "unreadable", "error", message)


def exit_code(problems: list[Problem]) -> int:
    if any(p.code == "unreadable" for p in problems):
        return 2
    return 1 if any(p.severity == "error" for p in problems) else 0


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary(problems: list[Problem], checked: int) -> str:
    """One line: `2 errors, 1 warning in 3 files` or `ok: 3 files, no problems`."""
    if not problems:
        return f"ok: {_count(checked, 'file')}, no problems"
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    return f"{_count(errors, 'error')}, {_count(warnings, 'warning')} in {_count(checked, 'file')}"
