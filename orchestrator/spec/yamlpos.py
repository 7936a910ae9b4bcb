"""YAML loading that remembers where every node came from.

Graph problems must point at a line, so loading keeps a `SourceMap` from the path of each value
(a tuple of mapping keys and list indexes) to its line and column. Scalars follow YAML 1.2's core
schema for booleans: only true/false are booleans; yes/no/on/off stay strings, as people mean them
in prompts and frontmatter. Anchors, aliases and `<<` merge keys work as in any YAML file.
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


class Yaml12Loader(_BaseLoader):  # type: ignore[valid-type,misc]
    """A safe loader whose booleans are only true/false (any case), as in YAML 1.2."""


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
    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


def load_yaml(text: str, file: str = "<string>") -> tuple[Any, SourceMap]:
    """Parse one YAML document; returns the plain data and its source map."""
    smap = SourceMap(file)
    try:
        loader = Yaml12Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None, smap
            data = _build(loader, node, (), smap)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        message = " ".join(str(x) for x in (exc.context, exc.problem) if x) or str(exc)
        raise YamlSyntaxError(message, line, col) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(str(exc), 1, 1) from None
    return data, smap


def _pos(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _build(loader: Any, node: yaml.Node, path: Path_, smap: SourceMap, depth: int = 0) -> Any:
    if depth > 200:
        raise YamlSyntaxError("nesting too deep (or a recursive alias)", *_pos(node))
    smap.values.setdefault(path, _pos(node))
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # resolves `<<` merge keys
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                raise YamlSyntaxError("a mapping key must be a scalar", *_pos(key_node))
            key = key if isinstance(key, str) else ("null" if key is None else str(key))
            smap.keys.setdefault(path + (key,), _pos(key_node))
            out[key] = _build(loader, value_node, path + (key,), smap, depth + 1)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, v, path + (i,), smap, depth + 1) for i, v in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


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
