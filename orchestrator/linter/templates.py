"""Pass 4, templates: every edge's `prompt` and `location`, checked against what is known at the
moment the edge is taken (docs/format.md section 6).

The names a template uses come from `orchestrator.core.templates.variables`; each resolves in the
edge's `Scope`. Inside a section over a list or object a name may be the element's own field,
so an unknown name there is not reported. Problems point at the tag inside the template when
its position in the file can be told (see `TemplateCheck.where`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core.templates import TemplateSyntaxError, VarUse, variables
from .codes import Where
from .dataflow import flow
from .scope import Scope, schema_type
from .view import GraphView

# Value types that HTML escaping cannot change: no warning for `{{count}}`.
PLAIN_TYPES = frozenset({"integer", "number", "boolean", "null"})


def check_templates(view: GraphView) -> None:
    facts = flow(view)
    for edge in view.edges:
        raw = view.raw_target(edge)
        scope = Scope.for_edge(view, edge, facts)
        templates: list[tuple[tuple[str, ...], str]] = []
        fields = type(raw).model_fields  # a branch or join target has no `recovery`
        for key in ("prompt", "location", "recovery"):
            value = getattr(raw, key) if key in fields else None
            if isinstance(value, str):
                templates.append(((key,), value))
        for name, value in (raw.inputs or {}).items():
            templates.append((("inputs", name), value))
        for keys, template in templates:
            try:
                TemplateCheck(scope, keys, template).run()
            except Exception as exc:  # one template's linter bug must not hide the others
                view.internal_error(exc)


@dataclass
class TemplateCheck:
    """template-syntax, empty-prompt, html-escape, template-var, optional-var and branch-status
    on one template."""

    scope: Scope
    keys: tuple[str, ...]  # ("prompt",), ("location",), ("recovery",) or ("inputs", NAME)
    template: str
    escaped: dict[str, VarUse] = field(default_factory=dict)

    @property
    def view(self) -> GraphView:
        return self.scope.view

    @property
    def key(self) -> str:
        return self.keys[0]

    @property
    def label(self) -> str:
        return f"{self.scope.edge.label}.{'.'.join(self.keys)}"

    def where(self, line: int = 1, column: int = 0) -> Where:
        """The file position of `line`:`column` of the template (column 0: unknown).

        Exact inside a `|` block scalar and in a one-line scalar written verbatim; otherwise the
        start of the template's value.
        """
        edge = self.scope.edge
        file, start, col = self.view.at(*edge.path, *self.keys)
        lines = self.view.file_lines()
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
        self.view.report(self.where(*spot), code, message, hint)

    def run(self) -> None:
        if self.key == "prompt" and not self.template.strip():
            edge = self.scope.edge
            self.report(
                (1, 0),
                "empty-prompt",
                f"the prompt of edge {edge.label} is empty",
                "say what the next role should do",
            )
            return
        try:
            uses = variables(self.template)
        except TemplateSyntaxError as exc:
            self.report(
                (exc.line, exc.column),
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
        if use.name == "$status" and any(name == "$branches" for name, _ in enclosing):
            # Mustache finds `$status` in the join's own context (the fan-out step's status):
            # a branch's entry holds its status as `status`.
            self.report(
                spot,
                "branch-status",
                f"{self.label}: {{{{{{$status}}}}}} inside {{{{#$branches}}}} is the status of the "
                "step that fanned out, not the branch's",
                "write {{{status}}} for each branch's status; keep {{{$status}}} outside the "
                "section for the fan-out's own",
            )
            return
        # Inside a section over a list or object, a name may be the element's own field.
        in_element = any(
            kind == "section" and self.scope.resolve(name).opaque for name, kind in enclosing
        )
        resolved = self.scope.resolve(use.name)
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
            (schema_type(resolved.schema) or frozenset({"string"})) <= PLAIN_TYPES
        ):
            self.escaped.setdefault(use.name, use)


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
