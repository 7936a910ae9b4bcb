"""Static checks of a loaded graph: `lint(graph) -> list[Problem]` (FORMAT.md section 10).

Theory of operation
-------------------
The loader already rejects what pydantic can see (YAML syntax, unknown keys, missing fields, wrong
types, unknown `extends` and tools). `lint` looks at what only the whole graph shows, in passes
that each add problems and never stop the others:

1. names: the graph's `name:` against its file stem; reserved role names and statuses;
2. schemas: each role's output contract (`Contract.issues`) and the `inputs:` schema;
3. shape: `$START`/`$END`, edges into unknown roles, status keys against the statuses each
   role's schema can emit, and reachability (unused, unreachable, no path to `$END`);
4. templates: every edge's `prompt` and `location`, checked against what is known at the moment
   the edge is taken.

Pass 4 rests on a forward dataflow analysis over the edges (`_flow`). For every role it computes,
on entry, (a) the roles that have *certainly* completed on every path from `$START` (intersection
over incoming edges) and (b) for each role that *may* have run, the statuses its latest reply may
carry (union over incoming edges). Taking the edge `graph[S][st]` adds S to (a) and makes `{st}`
S's only latest status in (b). `$steps.ROLE.FIELD` is then sound when ROLE is in (a) and FIELD is
declared for every status in (b)[ROLE]. `$START.resume` is taken after a thread completed, so it
starts from what holds on entry to `$END`.

Misspelled role names (an unknown name with one close match) are read as the role they resemble
for the shape and template passes, so one typo gives one problem, not a cascade.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .problems import GraphError, Problem, Severity, did_you_mean
from .spec.contract import STATUS_KEY, Contract, StatusContract
from .spec.loader import RoleSource, build_graph, load_role, parse_role_file, parse_yaml_file
from .spec.metaschema import SchemaProblem, check_schema
from .spec.models import END, RESUME, SINGLE_EXIT, START, SUSPEND, Graph, Role
from .spec.yamlpos import SourceMap
from .templates import TemplateSyntaxError, VarUse, variables

# Every code lint or the loader can report, with its severity (docs/problems.md explains each).
CODES: dict[str, Severity] = {
    # loader
    "yaml-syntax": "error",
    "unknown-key": "error",
    "missing-field": "error",
    "bad-type": "error",
    "unknown-extends": "error",
    "unknown-tool": "error",
    "unreadable": "error",
    # names and schemas
    "name-mismatch": "error",
    "reserved-name": "error",
    "bad-status-schema": "error",
    "invalid-json-schema": "error",
    # shape
    "start-edge": "error",
    "end-has-edges": "error",
    "unknown-role": "error",
    "unused-role": "warning",
    "unreachable-role": "error",
    "no-path-to-end": "error",
    "missing-status-edge": "error",
    "unknown-status-edge": "error",
    # templates
    "template-syntax": "error",
    "template-var": "error",
    "optional-var": "warning",
    "html-escape": "warning",
    "empty-prompt": "error",
    # the linter itself
    "internal-error": "error",
}

RESERVED_ROLE_NAMES = (START, END, SUSPEND, SINGLE_EXIT)
THREAD_FACTS = ("id", "step", "workspace")
DOLLAR_ROOTS = ("$body", "$inputs", "$steps", "$thread")
# The message given to `threads resume --message` reaches `$START.resume` as `$inputs.message`.
RESUME_MESSAGE = "message"
# Value types that HTML escaping cannot change: no warning for `{{count}}`.
PLAIN_TYPES = frozenset({"integer", "number", "boolean", "null"})
# Value types a section does not enter: names inside resolve as they do outside it. (A section
# over anything else, a list, an object or a value of unknown type, may look names up in it.)
SCALAR_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})


def lint(graph: Graph) -> list[Problem]:
    """Every problem found in a loaded graph, sorted by file, line and column."""
    try:
        linter = _Linter(graph)
    except Exception as exc:
        return [internal_error(graph.position()[0], exc)]
    for check in (
        linter.check_names,
        linter.check_schemas,
        linter.check_start_and_end,
        linter.check_edges,
        linter.check_reachability,
        linter.check_templates,
    ):
        try:
            check()
        except Exception as exc:  # a linter bug must not hide the other passes' findings
            linter.internal_error(exc)
    return sorted(set(linter.problems))


def internal_error(file: str, exc: BaseException) -> Problem:
    """The problem reported when the linter itself fails on a file."""
    return Problem(
        file,
        1,
        1,
        "internal-error",
        "error",
        f"the linter failed on this file: {type(exc).__name__}: {exc}",
        "this is a bug in orchestrator; please report it with the file",
    )


# --------------------------------------------------------------------------- files


def lint_graph_file(path: Path) -> list[Problem]:
    """Load a graph file (by path, never by name) and lint it; never raises."""
    try:
        graph = build_graph(*parse_yaml_file(path), path)
    except GraphError as err:
        return sorted(err.problems)
    except Exception as exc:
        return [internal_error(str(path), exc)]
    return lint(graph)


def lint_role_file(path: Path) -> list[Problem]:
    """Check one library role file (roles/NAME.yaml or .md) on its own; never raises."""
    try:
        source = parse_role_file(path)
        if isinstance(source.data.get("extends"), str):
            role, locate = _load_extending_role(path, source)
        else:
            role = load_role(path)
            locate = _locator(source.smap, source.path_prefix)
        return sorted(set(_role_problems(path.stem, role, locate)))
    except GraphError as err:
        return sorted(err.problems)
    except Exception as exc:
        return [internal_error(str(path), exc)]


def _locator(smap: SourceMap, prefix: tuple[str | int, ...]) -> Locate:
    def locate(*where: str | int, key: bool = False) -> tuple[str, int, int]:
        line, col = smap.at(prefix + where, key=key)
        return (smap.file, line, col)

    return locate


def _load_extending_role(path: Path, source: RoleSource) -> tuple[Role, Locate]:
    """A library role that extends another: resolved the way a graph resolves its roles.

    The role is loaded as the only role of a graph read from the same file (its positions moved
    under `roles.NAME`), so `extends` chains, overrides and problem positions work as in graphs.
    """
    prefix: tuple[str | int, ...] = ("roles", path.stem)
    moved = SourceMap(
        source.smap.file,
        {prefix + k[len(source.path_prefix) :]: v for k, v in source.smap.values.items()},
        {prefix + k[len(source.path_prefix) :]: v for k, v in source.smap.keys.items()},
    )
    moved.values.setdefault(prefix, source.smap.values.get((), (1, 1)))
    data = {"name": "role", "description": "role", "roles": {path.stem: source.data}, "graph": {}}
    graph = build_graph(data, moved, path)
    return graph.roles[path.stem], _locator(moved, prefix)


# --------------------------------------------------------------------------- helpers

Locate = Callable[..., tuple[str, int, int]]


def _problem(where: tuple[str, int, int], code: str, message: str, hint: str = "") -> Problem:
    file, line, col = where
    return Problem(file, line, col, code, CODES[code], message, hint)


def _contract_usable(contract: Contract) -> bool:
    """Statuses can be trusted unless the schema itself is broken."""
    return not any(
        i.code in ("invalid-json-schema", "bad-status-schema", "bad-type") for i in contract.issues
    )


def _role_problems(name: str, role: Role, locate: Locate) -> Iterator[Problem]:
    """Problems of one role on its own: reserved statuses and fields, schema issues."""
    contract = role.contract
    for issue in contract.issues:
        code = issue.code if issue.code in CODES else "bad-status-schema"
        hint = ""
        if code == "reserved-name":
            hint = "any role may reply `$status: $SUSPEND`; the runtime handles it"
        elif code == "bad-status-schema":
            hint = "give `$status` a `const` (one status) or an `enum` (several)"
        yield _problem(
            locate("frontmatter", *issue.path), code, f"role '{name}': {issue.message}", hint
        )
    for prop in _declared_properties(role.frontmatter):
        if prop.startswith("$") and prop != STATUS_KEY:
            yield _problem(
                locate("frontmatter", key=True),
                "reserved-name",
                f"role '{name}' declares the field '{prop}'; names starting with `$` are reserved",
                "rename the field without the `$`",
            )


def _declared_properties(schema: Any) -> set[str]:
    """Property names declared at the top level or in oneOf/anyOf variants."""
    names: set[str] = set()
    if not isinstance(schema, dict):
        return names
    variants = [schema.get(key) for key in ("oneOf", "anyOf")]
    parts = [schema] + [
        v for group in variants if isinstance(group, list) for v in group if isinstance(v, dict)
    ]
    for part in parts:
        props = part.get("properties")
        if isinstance(props, dict):
            names.update(str(k) for k in props)
    return names


def _schema_type(schema: Any) -> frozenset[str] | None:
    """The JSON types a schema allows, or None when it does not say."""
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        return frozenset({kind})
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return frozenset(kind)
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        return frozenset({"string"})
    if "const" in schema and isinstance(schema["const"], str):
        return frozenset({"string"})
    return None


@dataclass(frozen=True)
class _Edge:
    source: str  # $START or a role (as written in graph:)
    status: str
    target: str  # as written in the edge
    role_source: str | None  # the role the source resolves to (typos read as their match)
    role_target: str | None  # the role or $END the target resolves to, None when unknown


@dataclass(frozen=True)
class _Facts:
    """What holds at one point of the graph (see the theory of operation)."""

    ran: frozenset[str]
    latest: Mapping[str, frozenset[str]]

    def after(self, role: str, status: str) -> _Facts:
        return _Facts(self.ran | {role}, {**self.latest, role: frozenset({status})})

    def meet(self, other: _Facts) -> _Facts:
        latest = dict(self.latest)
        for role, statuses in other.latest.items():
            latest[role] = latest.get(role, frozenset()) | statuses
        return _Facts(self.ran & other.ran, latest)


EMPTY_FACTS = _Facts(frozenset(), {})


# --------------------------------------------------------------------------- the linter


class _Linter:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.problems: list[Problem] = []
        self.roles = graph.roles
        self.alias = self._aliases()
        self.edges = list(self._edges())
        self._file_lines: list[str] | None = None
        self._reachable_cache: set[str] | None = None
        self._statuses: dict[str, list[str] | None] = {}

    # ----------------------------------------------------------------- plumbing

    def at(self, *path: str | int, key: bool = False) -> tuple[str, int, int]:
        return self.graph.position(*path, key=key)

    def report(self, where: tuple[str, int, int], code: str, message: str, hint: str = "") -> None:
        self.problems.append(_problem(where, code, message, hint))

    def internal_error(self, exc: BaseException) -> None:
        self.problems.append(internal_error(self.at()[0], exc))

    def _aliases(self) -> dict[str, str]:
        """Unknown role names (edge targets, graph keys) with one close match in roles:."""
        names = {e.role for edges in self.graph.graph.values() for e in edges.values()}
        names |= set(self.graph.graph)
        alias: dict[str, str] = {}
        for name in names - set(self.roles) - {START, END}:
            hint = did_you_mean(name, list(self.roles))
            if hint:
                alias[name] = hint.split("'")[1]
        return alias

    def role_of(self, name: str) -> str | None:
        if name in self.roles:
            return name
        return self.alias.get(name)

    def _edges(self) -> Iterator[_Edge]:
        for source, edges in self.graph.graph.items():
            for status, edge in edges.items():
                target = END if edge.role == END else self.role_of(edge.role)
                source_role = None if source == START else self.role_of(source)
                yield _Edge(source, status, edge.role, source_role, target)

    def statuses(self, role: str) -> list[str] | None:
        """The statuses a role can reply, or None when its schema is broken."""
        if role not in self._statuses:
            contract = self.roles[role].contract
            self._statuses[role] = contract.status_names if _contract_usable(contract) else None
        return self._statuses[role]

    def entry(self, role: str) -> tuple[str, dict[str, Any]] | None:
        """The graph: key holding a role's edges (its own, or one misspelling of it)."""
        if role in self.graph.graph:
            return role, dict(self.graph.graph[role])
        keys = [k for k in self.graph.graph if self.alias.get(k) == role]
        return (keys[0], dict(self.graph.graph[keys[0]])) if len(keys) == 1 else None

    def live(self, edge: _Edge) -> bool:
        """Can this edge be taken at all (its source can emit its status)?"""
        if edge.source == START:
            return edge.status in (SINGLE_EXIT, RESUME)
        if edge.role_source is None:
            return False
        statuses = self.statuses(edge.role_source)
        return statuses is None or edge.status in statuses

    # ----------------------------------------------------------------- pass 1: names

    def check_names(self) -> None:
        path = self.graph.path
        if path is not None:
            stem = Path(path).stem
            if stem != self.graph.name:
                self.report(
                    self.at("name"),
                    "name-mismatch",
                    f"the graph is named '{self.graph.name}' but its file is '{Path(path).name}'",
                    f"set `name: {stem}` or rename the file to {self.graph.name}{Path(path).suffix}",
                )
        for name in self.roles:
            if name in RESERVED_ROLE_NAMES or name.startswith("$"):
                self.report(
                    self.at("roles", name, key=True),
                    "reserved-name",
                    f"'{name}' cannot name a role: `$` names and `_` are reserved",
                    "pick a plain name such as 'planner'",
                )

    # ----------------------------------------------------------------- pass 2: schemas

    def check_schemas(self) -> None:
        for name, role in self.roles.items():

            def locate(
                *where: str | int, key: bool = False, _n: str = name
            ) -> tuple[str, int, int]:
                return self.at("roles", _n, *where, key=key)

            self.problems.extend(_role_problems(name, role, locate))
        self._check_inputs()

    def _check_inputs(self) -> None:
        schema = self.graph.inputs
        if schema is None:
            return
        try:
            check_schema(schema)
        except SchemaProblem as exc:
            self.report(
                self.at("inputs", *exc.path),
                "invalid-json-schema",
                f"inputs: invalid JSON Schema: {exc.message}",
            )
            return
        kind = schema.get("type")
        if (
            kind is not None
            and kind != "object"
            and not (isinstance(kind, list) and "object" in kind)
        ):
            self.report(
                self.at("inputs", "type"),
                "invalid-json-schema",
                f"inputs must describe an object (the named inputs), not {kind!r}",
                "use `type: object` with `properties:` naming each input",
            )

    # ----------------------------------------------------------------- pass 3: shape

    def check_start_and_end(self) -> None:
        graph = self.graph.graph
        if START not in graph:
            hint = did_you_mean(START, list(graph)) or "add `$START: {_: {role: ..., prompt: ...}}`"
            self.report(
                self.at("graph", key=True),
                "start-edge",
                "the graph has no `$START` entry, so a thread cannot begin",
                hint,
            )
        else:
            start = graph[START]
            if SINGLE_EXIT not in start:
                self.report(
                    self.at("graph", START, key=True),
                    "start-edge",
                    "`$START` has no `_` edge, the edge every new thread takes",
                    did_you_mean(SINGLE_EXIT, [k for k in start if k != RESUME]),
                )
            for key in start:
                if key not in (SINGLE_EXIT, RESUME):
                    self.report(
                        self.at("graph", START, key, key=True),
                        "start-edge",
                        f"`$START` may only have `_` and `resume` edges, not '{key}'",
                        did_you_mean(key, [SINGLE_EXIT, RESUME])
                        or "`_` starts a thread; `resume` continues a completed one",
                    )
        if END in graph:
            self.report(
                self.at("graph", END, key=True),
                "end-has-edges",
                "`$END` ends the thread, so it cannot have edges",
                "remove the `$END:` entry; route to `role: $END` instead",
            )

    def check_edges(self) -> None:
        self._check_graph_keys()
        for edge in self.edges:
            if edge.role_target is not None and edge.target in (END, *self.roles):
                continue
            where = self.at("graph", edge.source, edge.status, "role")
            if edge.target in (START, SUSPEND):
                self.report(
                    where,
                    "reserved-name",
                    f"an edge cannot lead to `{edge.target}`",
                    "route to a role, or to `$END` to finish"
                    if edge.target == START
                    else "any role may reply `$status: $SUSPEND` without an edge",
                )
                continue
            self.report(
                where,
                "unknown-role",
                f"edge {edge.source}.{edge.status} leads to '{edge.target}', which is not in roles:",
                did_you_mean(edge.target, [*self.roles, END])
                or f"roles: {', '.join(self.roles) or '(none)'}; `$END` finishes the thread",
            )
        for role in self.roles:
            self._check_status_keys(role)

    def _check_graph_keys(self) -> None:
        for key in self.graph.graph:
            if key in (START, END) or key in self.roles:
                continue
            self.report(
                self.at("graph", key, key=True),
                "unknown-role",
                f"graph: has edges for '{key}', which is not in roles:",
                did_you_mean(key, [*self.roles, START]) or "declare the role under roles:",
            )

    def _check_status_keys(self, role: str) -> None:
        statuses = self.statuses(role)
        if statuses is None:
            return  # the schema problem is reported; its statuses are unknown
        found = self.entry(role)
        if found is None:
            if role in self._reachable():
                self.report(
                    self.at("roles", role, key=True),
                    "missing-status-edge",
                    f"role '{role}' is reached but has no edges under graph:",
                    f"add `{role}: {{_: {{role: ..., prompt: ...}}}}` under graph:"
                    if statuses == [SINGLE_EXIT]
                    else f"add `{role}:` under graph: with an edge for each of: {', '.join(statuses)}",
                )
            return
        key, edges = found
        missing = [s for s in statuses if s not in edges]
        unknown = [s for s in edges if s not in statuses]
        paired = self._pair_renames(missing, unknown)
        for status in unknown:
            self._report_unknown_status(role, key, status, statuses, paired.get(status))
        for status in missing:
            if status in paired.values():
                continue
            shown = "`_`" if status == SINGLE_EXIT else f"'{status}'"
            self.report(
                self.at("graph", key, key=True),
                "missing-status-edge",
                f"role '{role}' can reply {shown} but graph.{key} has no edge for it",
                f"add `{status}: {{role: ..., prompt: ...}}` under graph.{key}",
            )

    @staticmethod
    def _pair_renames(missing: list[str], unknown: list[str]) -> dict[str, str]:
        """Unknown edge keys that are most likely a missing status misspelled."""
        paired: dict[str, str] = {}
        for status in unknown:
            hint = did_you_mean(status, [m for m in missing if m not in paired.values()])
            if hint:
                paired[status] = hint.split("'")[1]
        rest_missing = [m for m in missing if m not in paired.values()]
        rest_unknown = [u for u in unknown if u not in paired and u != SUSPEND]
        if len(rest_missing) == 1 and len(rest_unknown) == 1:
            paired[rest_unknown[0]] = rest_missing[0]
        return paired

    def _report_unknown_status(
        self, role: str, key: str, status: str, statuses: list[str], pair: str | None
    ) -> None:
        where = self.at("graph", key, status, key=True)
        if status == SUSPEND:
            self.report(
                where,
                "unknown-status-edge",
                "`$SUSPEND` needs no edge: a role that replies it suspends the thread",
                f"remove graph.{key}.$SUSPEND",
            )
            return
        if statuses == [SINGLE_EXIT]:
            hint = "this role's schema declares no `$status`, so its one exit is `_`"
        elif pair is not None:
            hint = f"did you mean '{pair}'?"
        else:
            hint = f"'{role}' can reply: {', '.join(statuses)}"
        self.report(
            where,
            "unknown-status-edge",
            f"graph.{key} has an edge for '{status}', a status role '{role}' cannot reply",
            hint,
        )

    def _reachable(self) -> set[str]:
        """Roles reachable from $START (typos read as their match)."""
        if self._reachable_cache is None:
            successors: dict[str, set[str]] = {}
            for edge in self.edges:
                source = START if edge.source == START else edge.role_source
                if source is not None and edge.role_target not in (None, END):
                    successors.setdefault(source, set()).add(str(edge.role_target))
            seen: set[str] = set()
            todo = [START]
            while todo:
                for target in successors.get(todo.pop(), ()):
                    if target not in seen:
                        seen.add(target)
                        todo.append(target)
            self._reachable_cache = seen
        return self._reachable_cache

    def check_reachability(self) -> None:
        first = self.graph.graph.get(START, {}).get(SINGLE_EXIT)
        if first is None or (first.role != END and self.role_of(first.role) is None):
            return  # start-edge or unknown-role is reported; everything would be unreachable
        reachable = self._reachable()
        targeted = {e.role_target for e in self.edges if e.role_target is not None}
        for role in self.roles:
            if role in reachable:
                continue
            if role not in targeted:
                self.report(
                    self.at("roles", role, key=True),
                    "unused-role",
                    f"role '{role}' is declared but no edge leads to it",
                    "route an edge to it, or remove it",
                )
            else:
                found = self.entry(role)
                where = (
                    self.at("graph", found[0], key=True)
                    if found
                    else self.at("roles", role, key=True)
                )
                self.report(
                    where,
                    "unreachable-role",
                    f"role '{role}' cannot be reached from $START: only unreachable roles lead to it",
                    "route an edge from $START or a reachable role to it",
                )
        self._check_paths_to_end(reachable)

    def _check_paths_to_end(self, reachable: set[str]) -> None:
        # Roles whose exits are incomplete count as reaching $END: missing-status-edge already
        # says what to add, and guessing where the missing edge goes would only add noise.
        # The same goes for a role with an edge into an unknown name.
        finishing: set[str] = {END}
        for role in self.roles:
            found = self.entry(role)
            statuses = self.statuses(role)
            if found is None or statuses is None or any(s not in found[1] for s in statuses):
                finishing.add(role)
        finishing.update(
            e.role_source for e in self.edges if e.role_source and e.role_target is None
        )
        predecessors: dict[str, set[str]] = {}
        for edge in self.edges:
            if edge.role_source and edge.role_target and self.live(edge):
                predecessors.setdefault(edge.role_target, set()).add(edge.role_source)
        todo = list(finishing)
        while todo:
            for source in predecessors.get(todo.pop(), ()):
                if source not in finishing:
                    finishing.add(source)
                    todo.append(source)
        for role in sorted(reachable - finishing, key=list(self.roles).index):
            found = self.entry(role)
            assert found is not None  # roles without an entry count as finishing
            self.report(
                self.at("graph", found[0], key=True),
                "no-path-to-end",
                f"no sequence of edges from role '{role}' reaches $END",
                "the thread could only stop at a limit; route one status towards $END",
            )

    # ----------------------------------------------------------------- pass 4: templates

    def check_templates(self) -> None:
        flow = _flow(self)
        for edge in self.edges:
            raw = self.graph.graph[edge.source][edge.status]
            scope = _Scope.for_edge(self, edge, flow)
            templates = [("prompt", raw.prompt)]
            if raw.location is not None:
                templates.append(("location", raw.location))
            for key, template in templates:
                try:
                    _TemplateCheck(self, scope, key, template).run()
                except Exception as exc:
                    self.internal_error(exc)

    def file_lines(self) -> list[str]:
        """The graph file's lines (for positions inside block-scalar prompts); [] if unknown."""
        if self._file_lines is None:
            self._file_lines = []
            if self.graph.path is not None:
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    self._file_lines = Path(self.graph.path).read_text("utf-8-sig").split("\n")
        return self._file_lines


# --------------------------------------------------------------------------- dataflow


def _flow(linter: _Linter) -> dict[str, _Facts]:
    """Facts on entry to each reached role and to $END (absent: never reached).

    A worklist fixpoint: facts only shrink (`ran`) or grow (`latest`), so meeting a node's facts
    with each new fact that reaches it converges, and only the successors of a changed node
    are looked at again.
    """
    successors: dict[str, list[_Edge]] = {}
    for edge in linter.edges:
        if linter.live(edge) and edge.role_target is not None:
            # $START.resume is taken after $END: it runs again whenever $END's facts change
            node = END if edge.status == RESUME and edge.source == START else edge.role_source
            successors.setdefault(node or START, []).append(edge)
    state: dict[str, _Facts] = {}
    todo = [START]
    while todo:
        for edge in successors.get(todo.pop(), ()):
            out = _edge_facts(edge, state)
            target = edge.role_target
            if out is None or target is None:
                continue
            new = state[target].meet(out) if target in state else out
            if new != state.get(target):
                state[target] = new
                todo.append(target)
    return state


def _edge_facts(edge: _Edge, state: Mapping[str, _Facts]) -> _Facts | None:
    """What holds right after the edge is taken (when its template renders)."""
    if edge.source == START:
        return state.get(END) if edge.status == RESUME else EMPTY_FACTS
    if edge.role_source is None or edge.role_source not in state:
        return None
    return state[edge.role_source].after(edge.role_source, edge.status)


# --------------------------------------------------------------------------- templates


@dataclass
class _Scope:
    """What a template on one edge can see."""

    edge: _Edge
    facts: _Facts | None  # None: the edge's source is never reached
    source: StatusContract | None  # the reply that took the edge; None on $START or if unknown
    inputs: dict[str, Any]
    required_inputs: set[str]

    @classmethod
    def for_edge(cls, linter: _Linter, edge: _Edge, flow: Mapping[str, _Facts]) -> _Scope:
        source: StatusContract | None = None
        if edge.role_source is not None:
            contract = linter.roles[edge.role_source].contract
            if _contract_usable(contract):
                source = contract.for_status(edge.status)
        schema = linter.graph.input_schema
        props = schema.get("properties") if isinstance(schema, dict) else None
        req = schema.get("required") if isinstance(schema, dict) else None
        return cls(
            edge=edge,
            facts=_edge_facts(edge, flow),
            source=source,
            inputs=props if isinstance(props, dict) else {},
            required_inputs={r for r in req if isinstance(r, str)}
            if isinstance(req, list)
            else set(),
        )

    @property
    def at_start(self) -> bool:
        return self.edge.source == START


@dataclass
class _Resolved:
    """How a name used by a template resolves on one edge."""

    ok: bool
    optional: bool = False  # declared but may be null
    schema: Any = None  # the value's JSON Schema, when known
    message: str = ""
    hint: str = ""
    subject: str = ""  # the optional name a section must test (for optional-var)
    opaque: bool = True  # a section over it may enter an object or list

    @classmethod
    def value(cls, schema: Any, *, optional: bool = False, subject: str = "") -> _Resolved:
        types = _schema_type(schema)
        return cls(
            ok=True,
            optional=optional,
            schema=schema,
            subject=subject,
            opaque=types is None or not types <= SCALAR_TYPES,
        )

    @classmethod
    def error(cls, message: str, hint: str = "") -> _Resolved:
        return cls(ok=False, message=message, hint=hint)


@dataclass
class _TemplateCheck:
    """template-syntax, empty-prompt, html-escape, template-var and optional-var on one template."""

    linter: _Linter
    scope: _Scope
    key: str  # "prompt" or "location"
    template: str
    escaped: dict[str, VarUse] = field(default_factory=dict)
    resolved: dict[str, _Resolved] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.scope.edge.source}.{self.scope.edge.status}.{self.key}"

    def where(self, line: int = 1, column: int = 0) -> tuple[str, int, int]:
        """The file position of `line`:`column` of the template (column 0: unknown).

        Exact inside a `|` block scalar and in a one-line scalar written verbatim; otherwise the
        start of the template's value.
        """
        edge = self.scope.edge
        file, start, col = self.linter.at("graph", edge.source, edge.status, self.key)
        lines = self.linter.file_lines()
        text = lines[start - 1][col - 1 :] if 0 < start <= len(lines) else ""
        if text.startswith("|") and start + line <= len(lines):
            body = lines[start - 1 + line]
            indent = len(body) - len(body.lstrip(" "))
            return (file, start + line, indent + max(column, 1))
        if column and "\n" not in self.template:
            if text.startswith(self.template):
                return (file, start, col + column - 1)
            if text[:1] in ("'", '"') and text[1:].startswith(self.template):
                return (file, start, col + column)
        return (file, start, col)

    def report(self, spot: tuple[int, int], code: str, message: str, hint: str = "") -> None:
        self.linter.report(self.where(*spot), code, message, hint)

    def run(self) -> None:
        if self.key == "prompt" and not self.template.strip():
            edge = self.scope.edge
            self.report(
                (1, 0),
                "empty-prompt",
                f"the prompt of edge {edge.source}.{edge.status} is empty",
                "say what the next role should do",
            )
            return
        try:
            uses = variables(self.template)
        except TemplateSyntaxError as exc:
            self.report(
                (exc.line, 0),
                "template-syntax",
                f"{self.label}: {exc.message}",
                "Mustache tags: {{{name}}}, {{#name}}...{{/name}}, {{^name}}...{{/name}}",
            )
            return
        spots = _tag_spots(self.template, uses)
        for use, kinds, spot in zip(uses, _section_kinds(uses), spots, strict=True):
            self.check_use(use, kinds, spot)
        for use in self.escaped.values():
            self.report(
                spots[uses.index(use)],
                "html-escape",
                f"{self.label}: {{{{{use.name}}}}} HTML-escapes its value (& < > \" ' become entities)",
                f"use triple braces: {{{{{{{use.name}}}}}}}",
            )

    def check_use(
        self, use: VarUse, enclosing: list[tuple[str, str]], spot: tuple[int, int]
    ) -> None:
        if use.name == ".":
            if use.escaped:
                self.escaped.setdefault(use.name, use)
            return
        # Inside a section over a list or object, a name may be the element's own field.
        in_element = any(
            kind == "section" and self.resolve(name).opaque for name, kind in enclosing
        )
        resolved = self.resolve(use.name)
        if not resolved.ok:
            if in_element:  # most likely a field of the element: text, as far as we know
                if use.escaped:
                    self.escaped.setdefault(use.name, use)
            else:
                self.report(
                    spot, "template-var", f"{self.label}: {resolved.message}", resolved.hint
                )
            return
        guarded = {name for name, _ in enclosing}
        if (
            resolved.optional
            and use.kind in ("var", "raw")
            and not in_element
            and resolved.subject not in guarded
            and use.name not in guarded
        ):
            subject = resolved.subject
            self.report(
                spot,
                "optional-var",
                f"{self.label}: '{use.name}' is optional, so it may be null and render as nothing",
                f"wrap it: {{{{#{subject}}}}}...{{{{{{{use.name}}}}}}}...{{{{/{subject}}}}}, "
                "or make it required",
            )
        if use.escaped and not (
            (_schema_type(resolved.schema) or frozenset({"string"})) <= PLAIN_TYPES
        ):
            self.escaped.setdefault(use.name, use)

    # ------------------------------------------------------------- name resolution

    def resolve(self, name: str) -> _Resolved:
        if name not in self.resolved:
            self.resolved[name] = self._resolve(name)
        return self.resolved[name]

    def _resolve(self, name: str) -> _Resolved:
        parts = name.split(".")
        head = parts[0]
        if head == "$body":
            return self._body(parts)
        if head == "$inputs":
            return self._inputs(parts)
        if head == "$steps":
            return self._steps(parts)
        if head == "$thread":
            return self._thread(parts)
        if head.startswith("$"):
            return _Resolved.error(
                f"'{name}' is not a name templates can use",
                did_you_mean(head, DOLLAR_ROOTS)
                or "names starting with `$`: " + ", ".join(DOLLAR_ROOTS),
            )
        return self._field(parts)

    def _body(self, parts: list[str]) -> _Resolved:
        if self.scope.at_start:
            return _Resolved.error(
                "'$body' is the previous step's body, and no step precedes a $START edge",
                "use {{{$inputs.NAME}}} for the thread's inputs",
            )
        if len(parts) > 1:
            return _Resolved.error(f"'{'.'.join(parts)}': $body is text; it has no fields")
        return _Resolved.value({"type": "string"})

    def _inputs(self, parts: list[str]) -> _Resolved:
        if len(parts) == 1:
            return _Resolved.value({"type": "object"})
        name = parts[1]
        if self.scope.edge.status == RESUME and self.scope.at_start and name == RESUME_MESSAGE:
            return _Resolved.value({"type": "string"} if len(parts) == 2 else None)
        if name not in self.scope.inputs:
            declared = ", ".join(f"$inputs.{n}" for n in self.scope.inputs) or "none"
            return _Resolved.error(
                f"'$inputs.{name}' is not a declared input",
                did_you_mean(name, list(self.scope.inputs))
                or f"declared inputs: {declared}; declare it under inputs:",
            )
        schema = self.scope.inputs[name] if len(parts) == 2 else None
        return _Resolved.value(
            schema,
            optional=name not in self.scope.required_inputs,
            subject=f"$inputs.{name}",
        )

    def _thread(self, parts: list[str]) -> _Resolved:
        if len(parts) == 1:
            return _Resolved.value({"type": "object"})
        if len(parts) == 2 and parts[1] in THREAD_FACTS:
            return _Resolved.value({"type": "integer" if parts[1] == "step" else "string"})
        return _Resolved.error(
            f"'{'.'.join(parts)}' is not a thread fact",
            did_you_mean(parts[1], THREAD_FACTS)
            or "thread facts: " + ", ".join(f"$thread.{f}" for f in THREAD_FACTS),
        )

    def _steps(self, parts: list[str]) -> _Resolved:
        if len(parts) == 1:
            return _Resolved.value({"type": "object"})
        name = ".".join(parts)
        role = self.linter.role_of(parts[1])
        if role is None:
            return _Resolved.error(
                f"'{name}': there is no role '{parts[1]}'",
                did_you_mean(parts[1], list(self.linter.roles)),
            )
        facts = self.scope.facts
        if facts is None:
            return _Resolved.value(None)  # the edge is never taken; nothing more to know
        if role not in facts.ran:
            return _Resolved.error(
                f"'{name}': role '{role}' has not run on every path that reaches this edge",
                f"a path from $START gets here without passing '{role}'; "
                "use a field of the previous step, or a role that always runs before",
            )
        if len(parts) == 2:
            return _Resolved.value({"type": "object"})
        contract = self.linter.roles[role].contract
        if parts[2] == "$body":
            return _Resolved.value({"type": "string"} if len(parts) == 3 else None)
        if parts[2].startswith("$") or not _contract_usable(contract):
            if parts[2].startswith("$"):
                return _Resolved.error(f"'{name}': a step has fields and `$body`, not '{parts[2]}'")
            return _Resolved.value(None)
        return self._step_field(role, parts, contract, facts.latest.get(role, frozenset()))

    def _step_field(
        self, role: str, parts: list[str], contract: Contract, latest: Iterable[str]
    ) -> _Resolved:
        name, fld = ".".join(parts), parts[2]
        absent = sorted(
            s for s in latest if s in contract.statuses and not _declares(contract.statuses[s], fld)
        )
        if absent:
            statuses = " or ".join(f"'{s}'" for s in absent)
            where = [s for s in contract.statuses if fld in contract.statuses[s].fields]
            hint = (
                f"'{fld}' is only in replies with $status {', '.join(where)}"
                if where
                else did_you_mean(
                    fld, sorted({f for s in contract.statuses.values() for f in s.fields})
                )
            )
            return _Resolved.error(
                f"'{name}': role '{role}' may last have replied {statuses} here, "
                f"which has no field '{fld}'",
                hint,
            )
        present = [contract.statuses[s] for s in latest if s in contract.statuses]
        optional = any(fld in s.optional for s in present)
        schema = present[0].field_schemas.get(fld) if present and len(parts) == 3 else None
        return _Resolved.value(schema, optional=optional, subject=".".join(parts[:3]))

    def _field(self, parts: list[str]) -> _Resolved:
        name, fld = ".".join(parts), parts[0]
        edge = self.scope.edge
        if self.scope.at_start:
            declared = ", ".join(f"$inputs.{n}" for n in self.scope.inputs) or "none"
            hint = (
                f"use {{{{{{$inputs.{fld}}}}}}}"
                if fld in self.scope.inputs
                else f"declare '{fld}' under inputs: and use {{{{{{$inputs.{fld}}}}}}} "
                f"(inputs now: {declared})"
            )
            return _Resolved.error(
                f"'{name}' is not available: no step precedes a $START edge, so nothing provides it",
                hint,
            )
        source = self.scope.source
        if source is None:
            return _Resolved.value(None)  # the source's fields are unknown; reported elsewhere
        if fld in source.required or fld in source.optional:
            schema = source.field_schemas.get(fld) if len(parts) == 1 else None
            return _Resolved.value(schema, optional=fld in source.optional, subject=fld)
        role = edge.role_source or edge.source
        contract = self.linter.roles[role].contract
        elsewhere = [s for s, c in contract.statuses.items() if fld in c.fields]
        shown = "`_`" if edge.status == SINGLE_EXIT else f"'{edge.status}'"
        if elsewhere:
            hint = f"'{fld}' is only in replies with $status {', '.join(elsewhere)}"
        else:
            hint = did_you_mean(fld, sorted(source.fields)) or (
                f"the {shown} reply has: {', '.join(sorted(source.fields))}"
                if source.fields
                else f"the {shown} reply of '{role}' declares no fields"
            )
        return _Resolved.error(
            f"'{name}' is not a field of role '{role}' when it replies {shown}", hint
        )


def _declares(contract: StatusContract, name: str) -> bool:
    return name in contract.required or name in contract.optional


def _section_kinds(uses: list[VarUse]) -> list[list[tuple[str, str]]]:
    """For each use, its enclosing sections as (name, kind), outermost first.

    `VarUse.sections` names the enclosing sections; their kinds come from the section tags seen
    earlier. Sections nest properly, so a use's enclosing sections are the innermost open ones.
    """
    open_: list[tuple[str, str]] = []
    result: list[list[tuple[str, str]]] = []
    for use in uses:
        depth = len(use.sections)
        open_ = open_[:depth]
        result.append(list(open_))
        if use.kind in ("section", "inverted"):
            open_.append((use.name, use.kind))
    return result


_TAG = re.compile(r"\{\{(\{)?\s*([#^&/!=>]?)\s*(.*?)\s*\}?\}\}", re.S)


def _tag_spots(template: str, uses: list[VarUse]) -> list[tuple[int, int]]:
    """(line, column) of each use inside the template, 1-based.

    chevron's own line counter skips the newlines that standalone tags swallow, so positions
    are taken here from the tags' offsets; with custom delimiters this falls back to chevron's
    line and no column.
    """
    fallback = [(u.line, 0) for u in uses]
    if "{{=" in template:
        return fallback
    spots: list[tuple[int, int]] = []
    line, line_start, counted = 1, 0, 0
    for match in _TAG.finditer(template):
        start = match.start()
        newlines = template.count("\n", counted, start)
        if newlines:
            line += newlines
            line_start = template.rfind("\n", counted, start) + 1
        counted = start
        if match.group(2) not in ("/", "!", "=", ">"):
            spots.append((line, start - line_start + 1))
    return spots if len(spots) == len(uses) else fallback
