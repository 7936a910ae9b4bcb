"""Edge prompt templates: strict Mustache rendering and the variables a template uses.

Rendering uses chevron_blue (spec-complete). Strict mode raises `TemplateVarError` for a name
that resolves to nothing; lists and mappings interpolate as JSON, booleans as true/false, and
null as an empty string (a declared-but-optional field is present as null so that
`{{#field}}...{{/field}}` works; the linter warns when one is used outside such a section).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

import chevron_blue
from chevron_blue import tokenizer as _tok


class TemplateSyntaxError(Exception):
    """Not valid Mustache: what is wrong, at 1-based `line` and `column` (0: unknown)."""

    def __init__(self, message: str, line: int, column: int = 0):
        super().__init__(f"line {line}: {message}")
        self.message = message
        self.line = line
        self.column = column


class TemplateVarError(Exception):
    """A strict render met a name that resolves to nothing."""

    def __init__(self, name: str):
        super().__init__(f"'{name}' resolves to nothing")
        self.name = name


class TemplateEmptyError(Exception):
    pass


@dataclass(frozen=True)
class VarUse:
    """One tag of a template that reads a name."""

    name: str
    kind: str  # "var" (escaped {{x}}), "raw" ({{{x}}} or {{&x}}), "section", "inverted"
    line: int  # 1-based line inside the template
    sections: tuple[str, ...]  # names of the enclosing sections, outermost first

    @property
    def escaped(self) -> bool:
        return self.kind == "var"


def variables(template: str) -> list[VarUse]:
    """Every name a template reads, with its enclosing sections. Raises TemplateSyntaxError."""
    return list(_variables(template))


@functools.lru_cache(maxsize=4096)
def _variables(template: str) -> tuple[VarUse, ...]:
    """Cached per template text: a graph renders the same few templates at every step."""
    uses: list[VarUse] = []
    stack: list[str] = []
    kinds = {
        "variable": "var",
        "no escape": "raw",
        "section": "section",
        "inverted section": "inverted",
    }
    _tok._CURRENT_LINE = 1
    try:
        for tag, key in _tok.tokenize(template):
            line = _tok._CURRENT_LINE
            if tag == "partial":
                raise TemplateSyntaxError(f"partials ({{{{> {key}}}}}) are not supported", line)
            if tag == "no escape?":
                raise TemplateSyntaxError(
                    f"'{{{{{{{key}}}}}' is missing its third closing brace", line
                )
            if tag == "end":
                stack.pop()
            elif tag in kinds:
                if not key:
                    raise TemplateSyntaxError("empty tag", line)
                uses.append(VarUse(key, kinds[tag], line, tuple(stack)))
                if tag in ("section", "inverted section"):
                    stack.append(key)
    except TemplateSyntaxError as exc:
        raise _located(template) or exc from None
    except _tok.ChevronError as exc:
        message = _CHEVRON_LINE.sub("", " ".join(str(exc).split()))
        raise _located(template) or TemplateSyntaxError(message, _tok._CURRENT_LINE) from None
    except (IndexError, ValueError):  # chevron's tokenizer on an empty tag such as `{{}}`
        fallback = TemplateSyntaxError("empty or malformed tag", _tok._CURRENT_LINE)
        raise _located(template) or fallback from None
    return tuple(uses)


# chevron ends its messages with a line count of its own ("line 4", "at line 2"), which skips
# the newlines that standalone tags swallow: a line early, and a line of the template.
_CHEVRON_LINE = re.compile(r"\s*(?:was opened )?(?:at )?line \d+\s*$")


def _located(template: str) -> TemplateSyntaxError | None:
    """The first syntax error of a template, found again with its exact line and column.

    chevron says what is wrong but not where; this walks the tags the way chevron's tokenizer
    does (default delimiters only: with `{{=...=}}` it gives up and returns None).
    """
    if "{{=" in template:
        return None
    stack: list[tuple[str, str, int]] = []  # open sections: name, tag text, offset
    pos = 0
    while (start := template.find("{{", pos)) != -1:
        end = template.find("}}", start + 2)
        if end == -1:
            return _at(
                template, start, f"'{_snippet(template, start)}' is never closed with '}}}}'"
            )
        inner, pos = template[start + 2 : end], end + 2
        triple = inner.startswith("{")
        if triple and template.startswith("}", pos):
            pos += 1
        text = template[start:pos]
        sigil, name = inner[:1], inner[1:].strip() if inner[:1] in "#^/>!&{" else inner.strip()
        if sigil == "!":
            continue
        if triple and not text.endswith("}}}"):
            return _at(template, start, f"'{text}' is missing its third closing brace")
        if sigil == ">":
            return _at(template, start, f"partials ({text}) are not supported")
        if not name:
            return _at(template, start, f"'{text}' is an empty tag")
        if sigil in ("#", "^"):
            stack.append((name, text, start))
        elif sigil == "/":
            if not stack:
                return _at(template, start, f"'{text}' closes a section that was never opened")
            opened, opened_text, _ = stack.pop()
            if name != opened:
                return _at(
                    template,
                    start,
                    f"'{text}' closes a section, but the open one is '{opened_text}'",
                )
    if stack:
        name, text, start = stack[-1]
        return _at(template, start, f"the section '{text}' is never closed with '{{{{/{name}}}}}'")
    return None


def _at(template: str, offset: int, message: str) -> TemplateSyntaxError:
    line = template.count("\n", 0, offset) + 1
    return TemplateSyntaxError(message, line, offset - template.rfind("\n", 0, offset))


def _snippet(template: str, start: int) -> str:
    text = template[start:].split("\n", 1)[0]
    return text if len(text) <= 20 else text[:17] + "..."


def check_syntax(template: str) -> None:
    variables(template)


class _JsonList(list):  # type: ignore[type-arg]
    # chevron renders a falsy value as "" unless it carries this flag: `[]` must print as JSON.
    _CHEVRON_return_scope_when_falsy = True

    def __str__(self) -> str:
        return json.dumps(_plain(self), ensure_ascii=False, default=str)


class _JsonDict(dict):  # type: ignore[type-arg]
    _CHEVRON_return_scope_when_falsy = True

    def __str__(self) -> str:
        return json.dumps(_plain(self), ensure_ascii=False, default=str)


class _Bool:
    """A boolean that prints as JSON and still drives sections."""

    _CHEVRON_return_scope_when_falsy = True

    def __init__(self, value: bool):
        self.value = value

    def __bool__(self) -> bool:
        return self.value

    def __str__(self) -> str:
        return "true" if self.value else "false"


def _wrap(value: Any) -> Any:
    if isinstance(value, bool):
        return _Bool(value)
    if isinstance(value, dict):
        return _JsonDict({k: _wrap(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return _JsonList(_wrap(v) for v in value)
    return value


_PLAIN = frozenset((int, float, _Bool, _JsonList, _JsonDict))  # what `_render_flat` prints by str()


def _plain(value: Any) -> Any:
    if isinstance(value, _Bool):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@functools.lru_cache(maxsize=4096)
def _tokens(template: str) -> tuple[tuple[str, str], ...]:
    """The template's tokens, made once per template text: chevron renders a list of tokens
    as it renders the text (it tokenizes the text itself otherwise, at every call). Only
    called once `check_syntax` has passed."""
    return tuple(_tok.tokenize(template))


@functools.lru_cache(maxsize=4096)
def _roots(template: str) -> frozenset[str] | None:
    """The top-level names a template can read (`a` of `{{a.b}}`, inside sections too), or None
    when it may read the whole context (`{{.}}`, a name starting with a dot). Only called once
    `check_syntax` has passed."""
    roots = set()
    for use in _variables(template):
        if use.name.startswith("."):
            return None
        roots.add(use.name.split(".", 1)[0])
    return frozenset(roots)


def may_read(template: str, name: str) -> bool:
    """Whether the template may read the top-level `name` (`$steps` of `{{$steps.a.b}}`); True
    when unsure: it may read the whole context, or it has a syntax error (its render says so)."""
    try:
        roots = _roots(template)
    except TemplateSyntaxError:
        return True
    return roots is None or name in roots


def _scope(template: str, data: dict[str, Any]) -> dict[str, Any]:
    """The context made ready for chevron: only the names the template reads are wrapped.

    A name is looked up in the enclosing sections' values, then in the context's top level,
    by its first part; a top level holding every such first part resolves every name alike, so
    the output (and a strict miss) is the same as with the whole context wrapped, without
    wrapping every step's output at every render."""
    roots = _roots(template)
    if roots is None:
        return _wrap(data)  # type: ignore[no-any-return]
    return {name: _wrap(data[name]) for name in roots if name in data}


Flat = tuple[tuple[str, str | tuple[str, ...]], ...]
_FLAT_TAGS = frozenset(("literal", "variable", "no escape"))
_MISSING = object()
_UNSURE = object()


@functools.lru_cache(maxsize=4096)
def _flat(template: str) -> Flat | None:
    """A template of text and names only (no sections, no `{{.}}`), as (tag, text or the
    name's parts); None for any other."""
    tokens = _tokens(template)
    if any(tag not in _FLAT_TAGS for tag, _ in tokens) or _roots(template) is None:
        return None
    return tuple((tag, key if tag == "literal" else tuple(key.split("."))) for tag, key in tokens)


def _find(scope: Any, parts: tuple[str, ...]) -> Any:
    """A name's value through mappings only, as chevron finds it; _MISSING when a mapping lacks
    a part, _UNSURE when the walk meets anything else (chevron then tries attributes and list
    indexes: it renders the template itself)."""
    for part in parts:
        if not isinstance(scope, dict):
            return _UNSURE
        scope = scope.get(part, _MISSING)
        if scope is _MISSING:
            return _MISSING
    return scope


def _escape(text: str) -> str:
    # chevron's HTML escaping: `&` first, then `"`, `<`, `>` (not `'`).
    return (
        text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def _render_flat(flat: Flat, scope: dict[str, Any], strict: bool) -> str | None:
    """chevron's output for a flat template, without its generic loop and the exception it
    raises and catches for every plain value; None when a value is not plain JSON (chevron
    renders it). The rules followed: null renders empty, a string as it is, a number, a
    boolean (`_Bool`), a list or a mapping (`_JsonList`, `_JsonDict`) as its `str`."""
    out: list[str] = []
    for tag, key in flat:
        if tag == "literal":
            out.append(key)  # type: ignore[arg-type]
            continue
        value = _find(scope, key)  # type: ignore[arg-type]
        if value is _UNSURE:
            return None
        if value is _MISSING:
            if strict:
                raise TemplateVarError(".".join(key))
            continue
        if value is None:
            continue
        if type(value) is str:
            text = value
        elif type(value) in _PLAIN:
            text = str(value)
        else:
            return None
        out.append(_escape(text) if tag == "variable" else text)
    return "".join(out)


def render(template: str, data: dict[str, Any], *, strict: bool = True) -> str:
    """Render a template. Strict: a missing name raises TemplateVarError (nulls render empty)."""
    _variables(template)  # check_syntax, without copying the cached list
    flat = _flat(template)
    if flat is not None:
        scope = _scope(template, data)
        rendered_flat = _render_flat(flat, scope, strict)
        if rendered_flat is not None:
            return rendered_flat
    try:
        rendered: str = chevron_blue.render(
            _tokens(template),
            _scope(template, data),
            on_missing_key="error" if strict else "ignore",
        )
        return rendered
    except KeyError as exc:
        text = str(exc.args[0]) if exc.args else ""
        name = text.split("'")[1] if text.count("'") >= 2 else text
        raise TemplateVarError(name) from None


def render_prompt(template: str, data: dict[str, Any]) -> str:
    """Render an edge prompt: strict, and an empty result is an error."""
    text = render(template, data, strict=True)
    if not text.strip():
        raise TemplateEmptyError("the prompt rendered empty")
    return text
