"""YAML loading that remembers where every node came from.

Graph problems must point at a line, so loading keeps a `SourceMap` from the path of each value
(a tuple of mapping keys and list indexes) to its line and column. Scalars follow YAML 1.2's core
schema for booleans: only true/false are booleans; yes/no/on/off stay strings, as people mean them
in prompts and frontmatter. Anchors, aliases and `<<` merge keys work as in any YAML file, within
limits that refuse alias bombs and runaway nesting (`yaml-limit`) before they cost time or memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

try:  # the C loader is several times faster on big graph files
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

Path_ = tuple[str | int, ...]
Pos = tuple[int, int]  # line and column, 1-based


class Yaml12Loader(_BaseLoader):  # type: ignore[valid-type,misc,unused-ignore]
    """A safe loader whose booleans are only true/false (any case), as in YAML 1.2."""


def too_deep_for_libyaml(exc: yaml.MarkedYAMLError) -> bool:
    """libyaml's own nesting limit (1,000 levels, in the libyaml of recent PyYAML wheels), which it
    meets while scanning ahead, before our own depth checks see the events."""
    return "maximum nesting depth" in str(exc.problem)


# Drop the YAML 1.1 bool resolver (yes/no/on/off/y/n) and add the 1.2 one back.
Yaml12Loader.yaml_implicit_resolvers = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for key, resolvers in _BaseLoader.yaml_implicit_resolvers.copy().items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


@dataclass
class SourceMap:
    """Line and column (1-based) of each value and each mapping key, by path."""

    file: str
    values: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    # A key written twice in one mapping: its path, where it first was, where it is again.
    # (YAML forbids it; PyYAML keeps the last value. The loader reports each as an error.)
    duplicates: list[tuple[Path_, tuple[int, int], tuple[int, int]]] = field(default_factory=list)

    # Subtrees written in another file (a library role's fields in a graph): path -> that
    # file's map and the path of the subtree there.
    borrowed: dict[Path_, tuple[SourceMap, Path_]] = field(default_factory=dict)
    # Warnings found while loading (an agent file's tool with no counterpart), reported by lint.
    notes: list[Any] = field(default_factory=list)

    def where(self, path: Path_, *, key: bool = False) -> tuple[str, int, int]:
        """(file, line, column) of `path`, in the file its subtree was written in."""
        p = tuple(path)
        if self.borrowed:
            for n in range(len(p), 0, -1):
                if p[:n] in self.borrowed:
                    other, there = self.borrowed[p[:n]]
                    return other.where(there + p[n:], key=key)
        return (self.file, *self.at(p, key=key))

    def at(self, path: Path_, *, key: bool = False) -> tuple[int, int]:
        """Where `path` is; falls back to its nearest ancestor, then to line 1."""
        table = self.keys if key else self.values
        p = tuple(path)
        while p:
            if p in table:
                return table[p]
            if p in self.values:
                return self.values[p]
            p = p[:-1]
        return self.values.get((), (1, 1))


class YamlSyntaxError(Exception):
    """A file that cannot be read as YAML (`code` yaml-syntax) or exceeds a limit (yaml-limit)."""

    def __init__(
        self, message: str, line: int, column: int, code: str = "yaml-syntax", hint: str = ""
    ):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.code = code
        self.hint = hint


# Loading limits. A graph file is a few hundred values; these are far above any real one and far
# below what hurts: without them a 9-level "billion laughs" alias bomb never finishes loading,
# and libyaml's recursive composer crashes the process on tens of thousands of nested `[`.
MAX_DEPTH = 200  # nested mappings and sequences
MAX_VALUES = 200_000  # values in a file, aliases counted as often as they are expanded
MAX_ALIAS_VALUES = 50_000  # values produced by expanding aliases
# Below this many nesting characters a document cannot nest deep enough to endanger libyaml's
# composer (which survives ~20,000 levels), so the depth pre-scan is skipped for ordinary files.
_SAFE_TO_COMPOSE = 5_000
_NESTING_CHARS = ("[", "{", "-", ":", "?")


def load_yaml(text: str, file: str = "<string>") -> tuple[Any, SourceMap]:
    """Parse one YAML document; returns the plain data and its source map."""
    smap = SourceMap(file)
    try:
        if sum(text.count(c) for c in _NESTING_CHARS) >= _SAFE_TO_COMPOSE:
            _check_depth(text)
        loader = Yaml12Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None, smap
            # Without `&` the file has no anchor, so no alias to expand: the plain builder
            # skips that bookkeeping (a fifth of the walk's time).
            builder = _Builder if "&" in text else _PlainBuilder
            data = builder(loader, smap).build(node, (), 0)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        if too_deep_for_libyaml(exc) and exc.problem_mark is not None:
            raise _too_deep(exc.problem_mark) from None
        raise _syntax_error(text, exc) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(str(exc), 1, 1) from None
    return data, smap


def _syntax_error(text: str, exc: yaml.MarkedYAMLError) -> YamlSyntaxError:
    """The parser's problem at its place, with the context it gives ("while parsing ... at").

    libyaml notices some mistakes only at the next token: a key without `:` when the next line
    starts, an unclosed quote or bracket at the end of the file. Those are placed right after
    the last text before that token, on the line where the mistake is.
    """
    problem, context = exc.problem, exc.context
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    if exc.problem_mark is not None and (
        problem == "could not find expected ':'" or _at_end(text, line, col)
    ):
        line, col = _after_text_before(text, line, col)
    message = str(problem or context or exc)
    if problem and context:
        message += f" ({context}"
        if exc.context_mark is not None:
            at = exc.context_mark
            message += f" that started at line {at.line + 1}, column {at.column + 1}"
        message += ")"
    return YamlSyntaxError(message, line, col, hint=_syntax_hint(text, message, line))


# What the parser's words usually mean in a graph file, for the hint under its message.
_HINTS = (
    (
        ("did not find expected key", "expected <block end>", "did not find expected '-'"),
        "check the indentation: the keys of one mapping start in the same column, and a value "
        "on its own lines is indented further than its key",
    ),
    (
        ("mapping values are not allowed here",),
        'a `: ` inside a plain value starts a mapping: quote the value ("..."), or check '
        "this line's indentation",
    ),
    (
        ("could not find expected ':'",),
        "a key needs a `:` after it; if this line continues the one above, check its indentation",
    ),
    (
        ("found unexpected end of stream", "found unclosed", "did not find expected ',' or"),
        "a quote or bracket is not closed",
    ),
)


def _syntax_hint(text: str, message: str, line: int) -> str:
    """A hint for a YAML syntax error: tabs first (the parser's words do not say it)."""
    lines = text.split("\n")
    here = lines[line - 1] if 0 < line <= len(lines) else ""
    if "\\t" in message or "\t" in here[: len(here) - len(here.lstrip(" \t"))]:
        return "YAML does not allow tabs for indentation: indent with spaces"
    for words, hint in _HINTS:
        if any(w in message for w in words):
            return hint
    return ""


def _at_end(text: str, line: int, col: int) -> bool:
    """Is 1-based `line`:`col` at the end of the text, past any trailing whitespace?"""
    lines = text.split("\n")
    rest = "\n".join([lines[line - 1][col - 1 :], *lines[line:]]) if line <= len(lines) else ""
    return not rest.strip()


def _after_text_before(text: str, line: int, col: int) -> Pos:
    """The position just after the last non-blank character before `line`:`col` (1-based)."""
    lines = text.split("\n")
    for index in range(min(line, len(lines)) - 1, -1, -1):
        part = lines[index][: col - 1] if index == line - 1 else lines[index]
        stripped = part.rstrip()
        if stripped:
            return index + 1, len(stripped) + 1
    return line, col


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH before libyaml composes (and recurses into) it.

    Reads parser events, which libyaml produces without recursion.
    """
    loader = Yaml12Loader(text)
    try:
        depth = 0
        while (event := loader.get_event()) is not None:
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _too_deep(event.start_mark)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    finally:
        loader.dispose()


def _too_deep(mark: Any) -> YamlSyntaxError:
    return YamlSyntaxError(
        f"values nest more than {MAX_DEPTH} levels deep",
        mark.line + 1,
        mark.column + 1,
        "yaml-limit",
        "a graph file nests a few levels; check for unclosed or runaway brackets",
    )


def _pos(node: yaml.Node) -> Pos:
    return node.start_mark.line + 1, node.start_mark.column + 1


MERGE_TAG = "tag:yaml.org,2002:merge"
STR_TAG = "tag:yaml.org,2002:str"


class _Builder:
    """Plain data from a composed node graph, recording positions and enforcing the limits.

    libyaml composes an alias as the very node its anchor names, so a node met a second time is
    an alias being expanded: what it produces counts against MAX_ALIAS_VALUES, and a node met
    again while it is still being built is an alias inside its own anchor (it would never end).
    """

    def __init__(self, loader: Any, smap: SourceMap):
        self.loader = loader
        self.smap = smap
        self.values = 0
        self.alias_values = 0
        self.seen: set[int] = set()  # nodes built at least once
        self.open: set[int] = set()  # collections being built
        self.alias_use: Pos | None = None  # where the outermost alias being expanded is used
        self.alias_anchor = 0  # the line of the anchor it names

    def build(self, node: yaml.Node, path: Path_, depth: int, use: Pos | None = None) -> Any:
        """The value of `node` at `path`; `use`: where it is used (its key or its parent)."""
        if depth > MAX_DEPTH:
            raise _too_deep(node.start_mark)
        self.smap.values.setdefault(path, _pos(node))
        outermost = self._count(node, use or _pos(node))
        try:
            if isinstance(node, yaml.ScalarNode):
                return self._scalar(node)
            self.open.add(id(node))
            try:
                if isinstance(node, yaml.MappingNode):
                    return self._mapping(node, path, depth)
                here = _pos(node)
                return [
                    self.build(v, path + (i,), depth + 1, here) for i, v in enumerate(node.value)
                ]
            finally:
                self.open.discard(id(node))
        finally:
            if outermost:
                self.alias_use = None

    def _count(self, node: yaml.Node, use: Pos) -> bool:
        """Count one value against the limits; True when it starts an alias expansion."""
        outermost = False
        if id(node) in self.seen:
            if id(node) in self.open:
                raise YamlSyntaxError(
                    f"an alias of the anchor on line {_pos(node)[0]} is inside the value that "
                    "anchor names, so it would expand forever",
                    *use,
                    "yaml-limit",
                    "write the value out, or anchor a part that does not contain the alias",
                )
            if self.alias_use is None:
                self.alias_use, self.alias_anchor, outermost = use, _pos(node)[0], True
        self.seen.add(id(node))
        self.values += 1
        if self.alias_use is not None:
            self.alias_values += 1
            if self.alias_values > MAX_ALIAS_VALUES:
                raise YamlSyntaxError(
                    f"aliases expand to more than {MAX_ALIAS_VALUES:,} values (an alias bomb?); "
                    f"stopped in the alias of the anchor on line {self.alias_anchor}",
                    *self.alias_use,
                    "yaml-limit",
                    "a graph file needs far fewer; do not nest aliases of aliases",
                )
        if self.values > MAX_VALUES:
            raise YamlSyntaxError(
                f"the file holds more than {MAX_VALUES:,} values",
                *_pos(node),
                "yaml-limit",
                "a graph file needs far fewer; split it, or check what generated it",
            )
        return outermost

    def _scalar(self, node: yaml.Node) -> Any:
        if node.tag == STR_TAG:  # most scalars: the text itself, as the constructor would give
            return node.value
        try:
            return self.loader.construct_object(node, deep=True)
        except ValueError as exc:  # a date such as 2024-13-45, an integer of 5,000 digits
            raise YamlSyntaxError(
                f"cannot read the value {_quote(node)}: {exc}", *_pos(node)
            ) from None

    def _key(self, node: yaml.Node) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise YamlSyntaxError("a mapping key must be a scalar", *_pos(node))
        key = self._scalar(node)
        return key if isinstance(key, str) else ("null" if key is None else str(key))

    def _mapping(self, node: yaml.MappingNode, path: Path_, depth: int) -> dict[str, Any]:
        own: dict[str, Any] = {}
        merged: list[tuple[yaml.Node, Pos]] = []  # `<<` mappings, lowest precedence first
        for key_node, value_node in node.value:
            if key_node.tag == MERGE_TAG:
                merged.extend((m, _pos(key_node)) for m in _merge_sources(value_node))
                continue
            key = self._key(key_node)
            if key in own:
                self.smap.duplicates.append(
                    (path + (key,), self.smap.keys[path + (key,)], _pos(key_node))
                )
            self.smap.keys.setdefault(path + (key,), _pos(key_node))
            own[key] = self.build(value_node, path + (key,), depth + 1, _pos(key_node))
        if not merged:
            return own
        # As PyYAML's flatten_mapping: merged keys come first; later merges and own keys win.
        out: dict[str, Any] = {}
        for source, use in merged:
            out.update(self.build(source, path, depth, use))
        out.update(own)
        return out


class _PlainBuilder(_Builder):
    """`_Builder` for a document without anchors: every node is met once, so only the depth
    and the number of values are limited."""

    def build(self, node: yaml.Node, path: Path_, depth: int, use: Pos | None = None) -> Any:
        mark = node.start_mark
        if depth > MAX_DEPTH:
            raise _too_deep(mark)
        self.smap.values.setdefault(path, (mark.line + 1, mark.column + 1))
        self.values += 1
        if self.values > MAX_VALUES:
            self._count(node, (mark.line + 1, mark.column + 1))  # raises, with its message
        if node.__class__ is yaml.ScalarNode:
            return node.value if node.tag == STR_TAG else self._scalar(node)
        if node.__class__ is yaml.MappingNode:
            return self._plain_mapping(node, path, depth)
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path, depth)
        return [self.build(v, (*path, i), depth + 1) for i, v in enumerate(node.value)]

    def _plain_mapping(self, node: yaml.MappingNode, path: Path_, depth: int) -> dict[str, Any]:
        """`_mapping` for the usual case, every key a string scalar and none twice: the key's
        text and position taken inline. Another key (a merge, a number) or a duplicate key: the
        whole mapping goes to `_mapping`, before any of it is built."""
        pairs = node.value
        for key_node, _ in pairs:
            if key_node.__class__ is not yaml.ScalarNode or key_node.tag != STR_TAG:
                return self._mapping(node, path, depth)
        if len({key_node.value for key_node, _ in pairs}) != len(pairs):
            return self._mapping(node, path, depth)
        own: dict[str, Any] = {}
        keys = self.smap.keys
        build = self.build
        for key_node, value_node in pairs:
            key = key_node.value
            where = path + (key,)
            mark = key_node.start_mark
            keys.setdefault(where, (mark.line + 1, mark.column + 1))
            own[key] = build(value_node, where, depth + 1)
        return own


def _merge_sources(value: yaml.Node) -> list[yaml.Node]:
    """The mappings `<<: VALUE` merges, in increasing precedence (the first listed wins)."""
    nodes = list(reversed(value.value)) if isinstance(value, yaml.SequenceNode) else [value]
    for item in nodes:
        if not isinstance(item, yaml.MappingNode):
            raise YamlSyntaxError("`<<` merges a mapping or a list of mappings", *_pos(item))
    return nodes


def _quote(node: yaml.Node) -> str:
    text = str(node.value)
    return repr(text if len(text) <= 40 else text[:37] + "...")


def typed_value(text: str, schema: Any = None) -> Any:
    """A value typed at a prompt or on the command line, read for a field of `schema`.

    Text stays text for string fields (and fields of no declared type); other fields read it as
    YAML 1.2 (`3`, `true`, `[a, b]`), falling back to the text when it is not valid YAML.
    """
    declared = schema.get("type") if isinstance(schema, dict) else None
    if declared in (None, "string") or (isinstance(declared, list) and "string" in declared):
        return text
    try:
        return yaml.load(text, Loader=Yaml12Loader)
    except yaml.YAMLError:
        return text
