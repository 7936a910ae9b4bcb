"""Stage 2: the located frontmatter text -> plain data, with YAML 1.2 core-schema values.

The parser is `Yaml12Loader` (libyaml when available); values are built here from its events, so
a value keeps the text the model wrote (`yes`, `2024-05-01` and `1:30` stay strings) and the YAML
features a reply has no use for (anchors, aliases, tags, duplicate keys) are refused with the
line they are on. The package docstring lists the rules.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from ..definition.yamlpos import Yaml12Loader, too_deep_for_libyaml
from .flatyaml import flat_mapping
from .locate import body, locate, normalize
from .output import ExtractError
from .wording import an, clip, code, json_type, show

# Deeper nesting than this in a reply's frontmatter is garbage, and deep recursion is a crash.
MAX_DEPTH = 64

# YAML 1.2 core schema scalars (plain style only; quoted and block scalars are always text).
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT10 = re.compile(r"^[-+]?[0-9]+$")
_INT8 = re.compile(r"^0o[0-7]+$")
_INT16 = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(?:inf|Inf|INF)$")
_NAN = re.compile(r"^\.(?:nan|NaN|NAN)$")
_STR_TAG = "tag:yaml.org,2002:str"
# Every value above that is not text starts with one of these or is a null or bool word; a value
# that does not (most of a reply's text) skips the seven patterns.
_NOT_TEXT = re.compile(r"[-+.0-9~]|(?:null|Null|NULL|true|True|TRUE|false|False|FALSE)$")


def _resolve_plain(value: str) -> Any:
    if value and not _NOT_TEXT.match(value):
        return value
    if _NULL.match(value):
        return None
    if value in _BOOL:
        return _BOOL[value]
    try:
        if _INT10.match(value):
            return int(value, 10)
        if _INT8.match(value) or _INT16.match(value):
            number = int(value[2:], 8 if value[1] == "o" else 16)
            if number.bit_length() > 2000:  # past 600 digits, it may be too long to print
                str(number)  # raises ValueError if so: a message or JSON showing it would too
            return number
    except ValueError:  # more digits than Python converts or prints (int_max_str_digits)
        return value  # keep the text
    if _FLOAT.match(value):
        return float(value)
    if _INF.match(value):
        return -math.inf if value.startswith("-") else math.inf
    if _NAN.match(value):
        return math.nan
    return value


class _YamlProblem(Exception):
    def __init__(self, message: str, line: int, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.line = line  # 0-based, inside the frontmatter
        self.hint = hint


_QUOTE_HINT = "if the `{char}` is part of the text, put the value in double quotes"


@dataclass
class _Open:
    """A mapping or sequence being built, with the key awaiting its value."""

    container: dict[str, Any] | list[Any]
    key: str | None = None
    seen: dict[str, int] | None = None  # key -> line, to refuse duplicates

    def wants_key(self) -> bool:
        return isinstance(self.container, dict) and self.key is None


def _build(loader: Any) -> Any:
    """Plain data from the parser's events (see stage 2 in the package docstring).

    Dispatches on the event's exact class (the parser makes only PyYAML's own event classes),
    scalars first, as most events of a reply are: a chain of `isinstance` checks per event was
    most of extraction's cost."""
    stack: list[_Open] = []
    root: Any = None
    documents = 0
    get_event = loader.get_event
    while True:
        event = get_event()
        kind = type(event)
        value: Any
        if kind is _SCALAR:
            if event.anchor is not None or event.tag not in _SCALAR_TAGS:
                _refuse_node(event)
            text: str = event.value
            if stack and stack[-1].wants_key():
                # A key keeps its text as written (`1:` is "1", `yes:` is "yes").
                line = event.start_mark.line
                seen = stack[-1].seen
                assert seen is not None
                if text in seen:
                    raise _YamlProblem(
                        f"the key {code(text)} appears twice (lines {seen[text] + 1} and "
                        f"{line + 1}); write each key once",
                        line,
                    )
                seen[text] = line
                stack[-1].key = text
                continue
            plain = event.style in (None, "") and event.implicit[0] and event.tag is None
            value = _resolve_plain(text) if plain else text
        elif kind is _MAPPING_START or kind is _SEQUENCE_START:
            if event.anchor is not None or event.tag not in _COLLECTION_TAGS:
                _refuse_node(event)
            line = event.start_mark.line
            if stack and stack[-1].wants_key():
                raise _YamlProblem("a mapping key must be plain text, not a collection", line)
            if len(stack) >= MAX_DEPTH:
                raise _YamlProblem(f"the frontmatter nests deeper than {MAX_DEPTH} levels", line)
            stack.append(_Open({}, seen={}) if kind is _MAPPING_START else _Open([]))
            continue
        elif kind is _MAPPING_END or kind is _SEQUENCE_END:
            value = stack.pop().container
        elif kind is _ALIAS:
            raise _YamlProblem(
                f"`*{event.anchor}` is a YAML alias, which a reply may not use",
                event.start_mark.line,
                _QUOTE_HINT.format(char="*"),
            )
        elif kind is _DOCUMENT_START:
            documents += 1
            if documents > 1:
                raise _YamlProblem(
                    "the frontmatter holds more than one YAML document", event.start_mark.line
                )
            continue
        elif kind is _STREAM_END:
            return root
        else:
            continue  # stream start, document end
        if not stack:
            root = value
            continue
        top = stack[-1]
        if isinstance(top.container, dict):
            assert top.key is not None
            top.container[top.key] = value
            top.key = None
        else:
            top.container.append(value)


_SCALAR = yaml.ScalarEvent
_MAPPING_START, _MAPPING_END = yaml.MappingStartEvent, yaml.MappingEndEvent
_SEQUENCE_START, _SEQUENCE_END = yaml.SequenceStartEvent, yaml.SequenceEndEvent
_ALIAS, _DOCUMENT_START, _STREAM_END = yaml.AliasEvent, yaml.DocumentStartEvent, yaml.StreamEndEvent
_SCALAR_TAGS = (None, "!", _STR_TAG)  # `!!str` is allowed on a scalar only
_COLLECTION_TAGS = (None, "!")


def _refuse_node(event: Any) -> None:
    """A scalar or collection with an anchor or a tag a reply may not use: say which."""
    line = event.start_mark.line
    if event.anchor is not None:
        raise _YamlProblem(
            f"`&{event.anchor}` is a YAML anchor, which a reply may not use",
            line,
            _QUOTE_HINT.format(char="&"),
        )
    raise _YamlProblem(
        f"`{event.tag}` is a YAML tag, which a reply may not use",
        line,
        _QUOTE_HINT.format(char="!"),
    )


def load_yaml(text: str) -> Any:
    """The frontmatter's lines (without the delimiters) as plain data.

    Raises `ExtractError` naming the line at fault. A block of flat `key: plain value` lines is
    read without libyaml (flatyaml.py: the same values, a fifth of the time); anything else,
    including every block with an error, goes through libyaml's events.
    """
    flat = flat_mapping(text, _resolve_plain)
    if flat is not None:
        return flat
    return _load_events(text)


def _load_events(text: str) -> Any:
    """`load_yaml` through libyaml's events (the general path)."""
    loader: Any = None
    try:
        # The last line ended with a line break, as in the file; YAML needs it back, or a block
        # scalar at the end loses its final newline (clip chomping keeps one, `|-` strips it).
        loader = Yaml12Loader(text + "\n")
        return _build(loader)
    except _YamlProblem as exc:
        message = _yaml_message(text, exc.line, exc.message, exc.hint, syntax=False)
        raise ExtractError([message]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # An error at the end of the stream sits past that line break: name the last line.
        line = min(mark.line, text.count("\n")) if mark is not None else 0
        problem = str(exc.problem or exc.context or "invalid YAML")
        if too_deep_for_libyaml(exc):
            message = f"the frontmatter nests deeper than {MAX_DEPTH} levels"
            raise ExtractError([_yaml_message(text, line, message, "", syntax=False)]) from None
        lines = [m.line for m in (exc.problem_mark, exc.context_mark) if m is not None]
        hint = _classic_hint(text, lines)
        raise ExtractError([_yaml_message(text, line, problem, hint)]) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow, e.g. U+0008
        char = exc.character if isinstance(exc.character, str) else chr(exc.character)
        line = text[: exc.position].count("\n")
        problem = f"the character U+{ord(char):04X} is not allowed in YAML; remove it"
        raise ExtractError([_yaml_message(text, line, problem, "", syntax=False)]) from None
    except (yaml.YAMLError, ValueError, RecursionError) as exc:  # a safety net: never crash
        detail = " ".join(str(exc).split())
        raise ExtractError([f"the frontmatter is not valid YAML: {clip(detail, 200)}"]) from None
    finally:
        if loader is not None:
            loader.dispose()


def _yaml_message(text: str, line: int, problem: str, hint: str, *, syntax: bool = True) -> str:
    lines = text.split("\n")
    source = lines[line].strip() if 0 <= line < len(lines) else ""
    where = f"line {line + 1}" + (f" ({code(source)})" if source else "")
    if syntax:
        message = f"the frontmatter is not valid YAML at {where}: {problem}"
    else:
        message = f"the frontmatter, {where}: {problem}"
    return f"{message}; hint: {hint}" if hint else message


_KEY_VALUE = re.compile(r"^\s*(?:-\s+)?(?P<key>[^\s:#'\"][^:#]*?)\s*:[ \t]+(?P<value>\S.*?)\s*$")
_SPECIAL_START = "*&!%@`|>"


def _classic_hint(text: str, marks: Iterable[int]) -> str:
    """The usual cause of a YAML error in a model's reply, and how to fix it."""
    lines = text.split("\n")
    for line in marks:
        # The mark may sit on the line after the culprit (an unclosed quote or bracket).
        for candidate in (line, line - 1):
            if not 0 <= candidate < len(lines):
                continue
            source = lines[candidate]
            if "\t" in source[: len(source) - len(source.lstrip())]:
                return "indent with spaces, not tabs"
            m = _KEY_VALUE.match(source)
            if m is None:
                continue
            key, value = m["key"], m["value"]
            if value[0] in "\"'" and not (len(value) > 1 and value[-1] == value[0]):
                return f"the quoted value of {code(key)} is not closed"
            if ": " in value or value.endswith(":") or value[0] in _SPECIAL_START:
                quoted = json.dumps(value, ensure_ascii=False)
                return f"quote the value: {code(f'{key}: {quoted}')}"
    return (
        'a value that contains ": " or starts with *, &, !, %, @ or ` must be in double quotes; '
        "use `|` and an indented block for text over several lines"
    )


def parse_reply(text: str) -> tuple[dict[str, Any] | None, str]:
    """Split a reply into its parsed frontmatter mapping and its Markdown body.

    Returns `(None, body)` when the reply has no frontmatter block at all (the whole text is
    then the body). Raises `ExtractError` for a block that is malformed: never closed, not
    YAML, not a mapping, or using YAML features a reply may not use.
    """
    lines = normalize(text)
    block = locate(lines)
    if block is None:
        return None, body(lines)
    data = load_yaml(block.yaml)
    if data is None:
        return {}, block.body
    if not isinstance(data, dict):
        raise ExtractError(
            [
                "the frontmatter must be a YAML mapping of `key: value` lines, but it is "
                f"{an(json_type(data))} ({show(data)})"
            ]
        )
    return data, block.body
