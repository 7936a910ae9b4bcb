"""The extract pipeline (FORMAT.md section 4): a role's reply text -> validated `Output`.

Theory of operation
===================

A role replies in Markdown that begins with a YAML frontmatter block. Models are messy, so the
pipeline is tolerant about *where* the block is and strict about *what* it says. It runs five
stages; each either passes its result on or raises `ExtractError` with concrete, self-contained
sentences a model can act on when the reply is sent back for repair.

1. Normalize and locate (`parse_reply`). A UTF-8 BOM is dropped and CRLF/CR line ends become
   `\\n`. The block opens with a `---` line, which may follow blank lines, a short preamble (at
   most `MAX_PREAMBLE_LINES` non-blank lines and `MAX_PREAMBLE_CHARS` characters, such as "Here
   is my reply:") and a fence that wraps the whole reply (```` ```markdown ````, ```` ```md ````,
   ```` ```yaml ````, ```` ```yml ````, ```` ```text ```` or a bare ```` ``` ````). It closes with
   a `---` or `...` line at column 0; inside a wrapping fence, the fence's own closing line also
   ends a block that was never closed with `---`. A `---` after a longer preamble, or after
   fenced code, is a Markdown rule in an essay, not frontmatter; the preamble is dropped. When
   there is no such `---` block, a fenced ```` ```yaml ```` or ```` ```yml ```` block holding a
   top-level `$status:` or `status:` line (or a bare fence holding `$status:`) is the
   frontmatter, wherever it is, and the text before and after it, joined by a blank line, is the
   body; two such blocks are ambiguous and refused. Otherwise the body is everything after the
   block, without its leading blank lines and trailing whitespace, and without the closing line
   of a wrapping fence (text after that line, a model's sign-off, stays in the body).

2. Parse YAML. The parser is `Yaml12Loader` (libyaml when available) and values are built from
   its events here, following the YAML 1.2 core schema: only `true`/`false` are booleans (`yes`,
   `no`, `on`, `off` stay strings), integers are decimal, `0o` octal or `0x` hex, and there are
   no timestamps, sexagesimal numbers or merge keys (`2024-05-01` and `1:30` stay strings), so a
   value keeps the text the model wrote. Keys are kept as written (`1:` is the key "1"). A
   duplicate key, an anchor, an alias or a tag other than `!!str` is refused: in a reply they
   are almost always an unquoted value starting with `&`, `*` or `!`, and two `$status:` lines
   are ambiguous. Syntax errors name the frontmatter line and, for the classic cause (an
   unquoted value containing `: ` or starting with a special character), say to quote the value.
   YAML comments (` #` after a value) are comments, as in any YAML file.

3. Read the status. A reply without `$status` whose `status` key the schema does not declare
   has that key read as `$status` (for a single-exit role only when its value is `$SUSPEND`: a
   single-exit role has no routing key, so a stray `status` there is just a field). `$SUSPEND`
   with a non-empty string `reason` suspends the thread whatever the role's schema says; the
   output then holds only `$status` and `reason`.
   A multi-status role needs `$status` to be one of its statuses, written exactly (no case
   folding, no guessing; errors suggest the closest status). A single-exit role routes by `_`:
   it may omit `$status` or write `$status: _`; any other value is refused, telling the model to
   omit it, and `$status` is removed before validation.

4. Validate the frontmatter against the chosen status's compiled validator
   (`StatusContract.validator`), as written: nothing is coerced (`plan: 5` against
   `type: string` is an error; quoting it fixes it). Every error is reported, sorted by field
   path, naming the status and the field (`items[2].name`); a failing nested `oneOf`/`anyOf`
   reports the error of the closest alternative instead of "not valid under any of the given
   schemas". Keys starting with `$` other than `$status` are reserved (FORMAT 4) and refused
   unless the schema declares them.

5. Return `Output(frontmatter, body, status)`: `status` is the routing key (the `$status`
   value, `_` for a single-exit role, or `$SUSPEND`). An `ExtractError` carries `.status` when
   the reply named a status the role has (or `$SUSPEND`), so its errors are about that status.

The key property, checked by property-based tests: an invalid reply is never accepted, and no
input makes the pipeline raise anything but `ExtractError`.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml
from jsonschema.exceptions import ValidationError
from referencing.exceptions import Unresolvable

from .problems import did_you_mean
from .spec.contract import STATUS_KEY, Contract, StatusContract
from .spec.models import SINGLE_EXIT, SUSPEND
from .spec.yamlpos import Yaml12Loader

if TYPE_CHECKING:
    from .spec.models import Role

__all__ = [
    "MAX_PREAMBLE_CHARS",
    "MAX_PREAMBLE_LINES",
    "ExtractError",
    "Output",
    "describe_contract",
    "extract_output",
    "extract_status_only",
    "parse_reply",
]

# A preamble longer than this is an essay; a `---` after it is a Markdown rule, not frontmatter.
MAX_PREAMBLE_LINES = 5
MAX_PREAMBLE_CHARS = 500
# Deeper nesting than this in a reply's frontmatter is garbage, and deep recursion is a crash.
MAX_DEPTH = 64
REASON_KEY = "reason"
_SHOW_LIMIT = 60  # characters of a value quoted in an error message


# --------------------------------------------------------------------------- public types


@dataclass(frozen=True)
class Output:
    """A validated reply: its frontmatter, its Markdown body and its routing key."""

    frontmatter: dict[str, Any]
    body: str
    status: str


class ExtractError(Exception):
    """A reply that cannot be accepted; `.errors` says why, one actionable sentence each.

    `.status` is the reply's status when it named a valid one (the errors then concern that
    status's fields), else None.
    """

    def __init__(self, errors: Sequence[str], status: str | None = None):
        self.errors = list(errors) or ["the reply could not be read"]
        self.status = status
        super().__init__("\n".join(self.errors))

    def __reduce__(self) -> tuple[Any, ...]:  # keep .errors and .status through pickling
        return (type(self), (self.errors, self.status))


# --------------------------------------------------------------------------- stage 1: locate

_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)[^`]*$")
_WRAPPER_INFOS = frozenset({"", "markdown", "md", "yaml", "yml", "text", "txt"})
_YAML_INFOS = frozenset({"yaml", "yml"})
_STATUS_LINE = re.compile(r"^[\"']?\$?status[\"']?[ \t]*:")
_DOLLAR_STATUS_LINE = re.compile(r"^[\"']?\$status[\"']?[ \t]*:")


@dataclass(frozen=True)
class _Block:
    yaml: str  # the frontmatter text, without delimiters
    body: str


def _normalize(text: str) -> str:
    text = text.removeprefix("\ufeff")
    if "\r" in text:  # YAML counts a lone CR as a line break too; keep line numbers in step
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _is_opener(line: str) -> bool:
    return line.strip() == "---"


def _is_closer(line: str) -> bool:
    # Column 0 only: an indented `---` belongs to a block scalar's text.
    return line.rstrip() in ("---", "...")


def _fence(line: str) -> tuple[str, str] | None:
    """(fence marker, lower-cased info string) when `line` opens or closes a code fence."""
    m = _FENCE.match(line)
    if m is None:
        return None
    return m["fence"], m["info"].lower()


def _closes(line: str, marker: str) -> bool:
    """Whether `line` is a bare fence that closes a fence opened with `marker`."""
    f = _fence(line)
    return f is not None and f[1] == "" and f[0][0] == marker[0] and len(f[0]) >= len(marker)


def _next_nonblank(lines: Sequence[str], i: int) -> int:
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i


def _body(lines: Sequence[str]) -> str:
    start = _next_nonblank(lines, 0)
    return "\n".join(lines[start:]).rstrip()


def _strip_wrapper_close(lines: list[str], marker: str) -> list[str]:
    """The body lines without the closing line of a fence that wraps the whole reply.

    The body may hold fenced code of its own. If the last non-blank line closes the wrapper,
    that is it; otherwise, with an odd number of fence lines, the last bare one is the closer
    and any text after it (a model's sign-off) stays in the body.
    """
    last = len(lines) - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    if last >= 0 and _closes(lines[last], marker):
        return lines[:last]
    fences = [i for i, line in enumerate(lines) if (f := _fence(line)) and f[0][0] == marker[0]]
    if len(fences) % 2 == 1:
        bare = [i for i in fences if _closes(lines[i], marker)]
        if bare:
            return lines[: bare[-1]] + lines[bare[-1] + 1 :]
    return lines


def _find_dash_block(lines: list[str]) -> _Block | None:
    """The `---` block at the start of the reply (after blank lines, a preamble, a fence)."""
    i = _next_nonblank(lines, 0)
    preamble_lines = preamble_chars = 0
    status_line: int | None = None  # a preamble line that looks like a field: `---` forgotten
    wrapper: str | None = None
    while i < len(lines):
        line = lines[i]
        if _is_opener(line):
            break
        if status_line is None and _STATUS_LINE.match(line):
            status_line = i
        fence = _fence(line)
        if fence is not None:
            after = _next_nonblank(lines, i + 1)
            wraps = wrapper is None and fence[1] in _WRAPPER_INFOS
            if wraps and after < len(lines) and _is_opener(lines[after]):
                wrapper = fence[0]
                i = after
                break
            return None  # fenced code before any `---`: not a frontmatter reply
        if line.strip():
            preamble_lines += 1
            preamble_chars += len(line)
            if preamble_lines > MAX_PREAMBLE_LINES or preamble_chars > MAX_PREAMBLE_CHARS:
                return None
        i += 1
    else:
        return None
    opener = i
    for j in range(opener + 1, len(lines)):
        line = lines[j]
        if _is_closer(line) or (wrapper is not None and _closes(line, wrapper)):
            rest = lines[j + 1 :]
            if wrapper is not None and not _closes(line, wrapper):
                rest = _strip_wrapper_close(rest, wrapper)
            return _Block("\n".join(lines[opener + 1 : j]), _body(rest))
    if status_line is not None:
        raise ExtractError(
            [
                f"the frontmatter must start with a line `---`: line {status_line + 1} "
                f"({_code(lines[status_line].strip())}) comes before the first `---` line "
                f"(line {opener + 1}); put a `---` line before the first field"
            ]
        )
    raise ExtractError(
        [
            f"the frontmatter block opened by the `---` on line {opener + 1} is never closed: "
            "end it with a line holding only `---`, before the Markdown body"
        ]
    )


def _find_fenced_yaml(lines: list[str]) -> _Block | None:
    """A fenced YAML block holding the status, anywhere in the reply (when no `---` block)."""
    found: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        fence = _fence(lines[i])
        if fence is None:
            i += 1
            continue
        marker, info = fence
        end = next((j for j in range(i + 1, len(lines)) if _closes(lines[j], marker)), None)
        content = lines[i + 1 : end if end is not None else len(lines)]
        probe = _DOLLAR_STATUS_LINE if info == "" else _STATUS_LINE
        holds_status = (info in _YAML_INFOS or info == "") and any(probe.match(c) for c in content)
        if holds_status:
            if end is None:
                raise ExtractError(
                    [
                        f"the ```{info} block opened on line {i + 1} is never closed: end it "
                        "with a line holding only ```"
                    ]
                )
            found.append((i, end))
        if end is None:
            break
        i = end + 1
    if not found:
        return None
    if len(found) > 1:
        where = ", ".join(str(start + 1) for start, _ in found)
        raise ExtractError(
            [
                f"the reply holds {len(found)} fenced YAML blocks with a status (opened on lines "
                f"{where}); write exactly one frontmatter block, at the start, between `---` lines"
            ]
        )
    start, end = found[0]
    content = lines[start + 1 : end]
    # A model may put the `---` delimiters inside the fence as well.
    while content and not content[0].strip():
        content = content[1:]
    if content and _is_opener(content[0]):
        content = content[1:]
    while content and not content[-1].strip():
        content = content[:-1]
    if content and _is_closer(content[-1]):
        content = content[:-1]
    # The text around the block is the body, joined by one blank line where the block was.
    around = [part for part in (_body(lines[:start]), _body(lines[end + 1 :])) if part]
    return _Block("\n".join(content), "\n\n".join(around))


def _late_block_line(lines: list[str]) -> int | None:
    """Line (1-based) of a `---` block holding a status that sits too far down to count."""
    for i, line in enumerate(lines):
        if _is_opener(line):
            for j in range(i + 1, min(len(lines), i + 50)):
                if _is_closer(lines[j]):
                    break
                if _STATUS_LINE.match(lines[j]):
                    return i + 1
    return None


def parse_reply(text: str) -> tuple[dict[str, Any] | None, str]:
    """Split a reply into its parsed frontmatter mapping and its Markdown body.

    Returns `(None, body)` when the reply has no frontmatter block at all (the whole text is
    then the body). Raises `ExtractError` for a block that is malformed: never closed, not
    YAML, not a mapping, or using YAML features a reply may not use.
    """
    lines = _normalize(text).split("\n")
    block = _find_dash_block(lines)
    if block is None:
        block = _find_fenced_yaml(lines)
    if block is None:
        return None, _body(lines)
    data = _load_yaml(block.yaml)
    if data is None:
        return {}, block.body
    if not isinstance(data, dict):
        raise ExtractError(
            [
                "the frontmatter must be a YAML mapping of `key: value` lines, but it is "
                f"{_a(_json_type(data))} ({_show(data)})"
            ]
        )
    return data, block.body


# --------------------------------------------------------------------------- stage 2: YAML

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


def _resolve_plain(value: str) -> Any:
    if _NULL.match(value):
        return None
    if value in _BOOL:
        return _BOOL[value]
    try:
        if _INT10.match(value):
            return int(value, 10)
        if _INT8.match(value):
            return int(value[2:], 8)
        if _INT16.match(value):
            return int(value[2:], 16)
    except ValueError:  # more digits than Python converts (int_max_str_digits): keep the text
        return value
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
    """Plain data from the parser's events (see stage 2 in the module docstring)."""
    stack: list[_Open] = []
    root: Any = None
    documents = 0
    while True:
        event = loader.get_event()
        line = event.start_mark.line
        if isinstance(event, yaml.StreamEndEvent):
            return root
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise _YamlProblem("the frontmatter holds more than one YAML document", line)
            continue
        if isinstance(event, yaml.AliasEvent):
            raise _YamlProblem(
                f"`*{event.anchor}` is a YAML alias, which a reply may not use",
                line,
                _QUOTE_HINT.format(char="*"),
            )
        if isinstance(event, yaml.NodeEvent):
            if event.anchor is not None:
                raise _YamlProblem(
                    f"`&{event.anchor}` is a YAML anchor, which a reply may not use",
                    line,
                    _QUOTE_HINT.format(char="&"),
                )
            tag = getattr(event, "tag", None)
            if tag not in (None, "!", _STR_TAG) or (tag == _STR_TAG and not _is_scalar(event)):
                raise _YamlProblem(
                    f"`{tag}` is a YAML tag, which a reply may not use",
                    line,
                    _QUOTE_HINT.format(char="!"),
                )
        value: Any
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            if stack and stack[-1].wants_key():
                raise _YamlProblem("a mapping key must be plain text, not a collection", line)
            if len(stack) >= MAX_DEPTH:
                raise _YamlProblem(f"the frontmatter nests deeper than {MAX_DEPTH} levels", line)
            if isinstance(event, yaml.MappingStartEvent):
                stack.append(_Open({}, seen={}))
            else:
                stack.append(_Open([]))
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            value = stack.pop().container
        elif isinstance(event, yaml.ScalarEvent):
            text: str = event.value
            if stack and stack[-1].wants_key():
                # A key keeps its text as written (`1:` is "1", `yes:` is "yes").
                seen = stack[-1].seen
                assert seen is not None
                if text in seen:
                    raise _YamlProblem(
                        f"the key {_code(text)} appears twice (lines {seen[text] + 1} and "
                        f"{line + 1}); write each key once",
                        line,
                    )
                seen[text] = line
                stack[-1].key = text
                continue
            plain = event.style in (None, "") and event.implicit[0] and event.tag is None
            value = _resolve_plain(text) if plain else text
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


def _is_scalar(event: Any) -> bool:
    return isinstance(event, yaml.ScalarEvent)


def _load_yaml(text: str) -> Any:
    loader: Any = None
    try:
        loader = Yaml12Loader(text)
        return _build(loader)
    except _YamlProblem as exc:
        message = _yaml_message(text, exc.line, exc.message, exc.hint, syntax=False)
        raise ExtractError([message]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line if mark is not None else 0
        problem = str(exc.problem or exc.context or "invalid YAML")
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
        raise ExtractError([f"the frontmatter is not valid YAML: {_clip(detail, 200)}"]) from None
    finally:
        if loader is not None:
            loader.dispose()


def _yaml_message(text: str, line: int, problem: str, hint: str, *, syntax: bool = True) -> str:
    lines = text.split("\n")
    source = lines[line].strip() if 0 <= line < len(lines) else ""
    where = f"line {line + 1}" + (f" ({_code(source)})" if source else "")
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
                return f"the quoted value of {_code(key)} is not closed"
            if ": " in value or value.endswith(":") or value[0] in _SPECIAL_START:
                quoted = json.dumps(value, ensure_ascii=False)
                return f"quote the value: {_code(f'{key}: {quoted}')}"
    return (
        'a value that contains ": " or starts with *, &, !, %, @ or ` must be in double quotes; '
        "use `|` and an indented block for text over several lines"
    )


# --------------------------------------------------------------------------- stage 3: status


def _declares(contract: Contract, name: str) -> bool:
    return any(name in sc.fields for sc in contract.statuses.values())


def _suggest(word: str, choices: Sequence[str]) -> str:
    """did-you-mean that also catches case and whitespace slips (`Ready` for `ready`)."""
    folded = word.strip().casefold()
    same = [c for c in choices if c.casefold() == folded]
    if len(same) == 1:
        return f"did you mean '{same[0]}'?"
    by_fold = {c.casefold(): c for c in choices}
    close = difflib.get_close_matches(folded, list(by_fold), n=1, cutoff=0.6)
    return f"did you mean '{by_fold[close[0]]}'?" if close else ""


def _status_text(value: str) -> str:
    """A status as the model wrote it, quoted when spaces at its ends would hide otherwise."""
    return _show(value) if not value or value != value.strip() else _clip(value)


def _allowed(contract: Contract) -> str:
    return ", ".join(contract.status_names)


def _no_frontmatter(contract: Contract, lead: str) -> str:
    if contract.single_exit:
        return (
            f"{lead}: a YAML frontmatter block is required: begin the reply with a line `---`, "
            "then the fields as `key: value` lines, then a line `---`, then the Markdown body"
        )
    return (
        f"{lead}: a YAML frontmatter block is required: begin the reply with a line `---`, then "
        "`$status: <status>` and the fields as `key: value` lines, then a line `---`, then the "
        f"Markdown body; the status is one of: {_allowed(contract)}"
    )


def _suspend(data: dict[str, Any], body: str) -> Output:
    reason = data.get(REASON_KEY)
    if not isinstance(reason, str) or not reason.strip():
        got = "is missing" if reason is None else f"is {_show(reason)}"
        raise ExtractError(
            [
                f"`$status: {SUSPEND}` needs a `reason`: a non-empty text saying why the work "
                f"must stop and what would let it continue (`reason` {got})"
            ],
            status=SUSPEND,
        )
    return Output({STATUS_KEY: SUSPEND, REASON_KEY: reason}, body, SUSPEND)


def _choose(contract: Contract, data: dict[str, Any]) -> StatusContract:
    """The status contract the reply chose; raises when the status is missing or unknown."""
    if contract.single_exit:
        if STATUS_KEY in data:
            value = data.pop(STATUS_KEY)
            if value != SINGLE_EXIT:
                raise ExtractError(
                    [
                        "this role has a single exit and takes no `$status`: remove the line "
                        f"{_code(f'$status: {_show(value, quote=False)}')} (the role's fields "
                        "alone are the reply)"
                    ]
                )
        return contract.statuses[SINGLE_EXIT]
    if not contract.statuses:
        problems = "; ".join(i.message for i in contract.issues) or "it declares no statuses"
        raise ExtractError([f"the role's frontmatter schema cannot be used: {problems}"])
    allowed = _allowed(contract)
    if STATUS_KEY not in data:
        raise ExtractError(
            [f"the frontmatter has no `$status`: add a line `$status: <status>`, one of: {allowed}"]
        )
    value = data[STATUS_KEY]
    if value is None:
        raise ExtractError([f"`$status` is empty: write one of: {allowed}"])
    if not isinstance(value, str):
        raise ExtractError(
            [
                f"`$status` must be one of the statuses {allowed}, written as text; got "
                f"{_a(_json_type(value))} ({_show(value)})"
            ]
        )
    chosen = contract.for_status(value)
    if chosen is None:
        hint = _suggest(value, contract.status_names)
        raise ExtractError(
            [
                f"{_code(f'$status: {_status_text(value)}')} is not a status of this role"
                + (f" ({hint})" if hint else "")
                + f"; write exactly one of: {allowed}"
            ]
        )
    return chosen


# --------------------------------------------------------------------------- stage 4: validate

_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    type(None): "null",
    list: "array",
    dict: "object",
}
_IDENT = re.compile(r"^[A-Za-z_$][\w$-]*$")


def _json_type(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in ("a", "e", "i", "o", "u") else f"a {noun}"


def _clip(text: str, limit: int = _SHOW_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _code(text: str) -> str:
    """`text` as Markdown inline code, even when it holds backticks itself."""
    text = _clip(text)
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _plural(n: Any, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _show(value: Any, *, quote: bool = True) -> str:
    if isinstance(value, str) and not quote:
        return _clip(value)
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # a circular structure cannot come from the builder; be safe anyway
        text = repr(value)
    return _clip(text)


def _field(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(str(part)):
            out += f".{part}" if out else str(part)
        else:
            out += f"[{json.dumps(str(part), ensure_ascii=False)}]"
    return out


def _names(values: Iterable[Any]) -> str:
    return ", ".join(sorted(str(v) for v in values if v != STATUS_KEY)) or "(none)"


def _expected_types(types: Any) -> str:
    return " or ".join(types) if isinstance(types, list) else str(types)


def _extras(err: ValidationError) -> list[str]:
    """The keys an object carries that its `additionalProperties: false` schema forbids."""
    schema = err.schema if isinstance(err.schema, dict) else {}
    props = schema.get("properties") or {}
    patterns = schema.get("patternProperties") or {}
    instance = err.instance if isinstance(err.instance, dict) else {}
    return sorted(
        k
        for k in instance
        if k not in props and not any(_search(p, k) for p in patterns if isinstance(p, str))
    )


def _search(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:  # a JSON Schema regex Python cannot compile; jsonschema reports the rest
        return False


_SortKey = tuple[tuple[int, int | str], ...]


def _sort_key(path: Iterable[Any]) -> _SortKey:
    # Paths mix list indexes and keys; order indexes numerically and before keys.
    return tuple((0, p) if isinstance(p, int) else (1, str(p)) for p in path)


def _describe(err: ValidationError, owner: str) -> Iterator[tuple[_SortKey, str]]:
    """(sort key, sentence) for one jsonschema error; `owner` names the variant in sentences
    about required fields ("status 'ready'" or "the role")."""
    path = list(err.absolute_path)
    name = _field(path)
    subject = f"field '{name}'" if name else "the frontmatter"
    kind, expected, instance = err.validator, err.validator_value, err.instance

    def at(sub: str, text: str) -> tuple[_SortKey, str]:
        return _sort_key([*path, sub] if sub else path), text

    if kind == "required" and isinstance(instance, dict) and isinstance(expected, list):
        needs = f"{name} requires" if name else f"{owner} requires"
        for missing in (r for r in expected if r not in instance):
            field = _field([*path, missing])
            yield at(str(missing), f"field '{field}' is required ({needs}: {_names(expected)})")
    elif kind in ("additionalProperties", "unevaluatedProperties") and expected is False:
        extras = _extras(err) if kind == "additionalProperties" else []
        if not extras:
            yield at("", f"{subject}: {_clip(err.message, 200)}")
        allowed = (err.schema.get("properties") or {}) if isinstance(err.schema, dict) else {}
        for extra in extras:
            hint = did_you_mean(extra, [k for k in allowed if k != STATUS_KEY])
            yield at(
                extra,
                f"field '{_field([*path, extra])}' is not allowed ({kind} is false; "
                f"allowed: {_names(allowed)})" + (f"; {hint}" if hint else ""),
            )
    elif kind == "type":
        text = f"{subject} must be of type {_expected_types(expected)}, got {_json_type(instance)}"
        wants_text = expected == "string" or (isinstance(expected, list) and "string" in expected)
        if instance is None:
            text += " (the value is empty): write a value after the colon"
        else:
            text += f" ({_show(instance)})"
        if wants_text and isinstance(instance, bool | int | float):
            text += "; write it in double quotes to make it text"
        yield at("", text)
    elif kind == "enum" and isinstance(expected, list):
        choices = ", ".join(_show(v) for v in expected)
        text = f"{subject} must be one of: {choices}; got {_show(instance)}"
        if isinstance(instance, str):
            hint = _suggest(instance, [v for v in expected if isinstance(v, str)])
            text += f"; {hint}" if hint else ""
        yield at("", text)
    elif kind == "const":
        yield at("", f"{subject} must be {_show(expected)}, got {_show(instance)}")
    elif kind in ("minLength", "maxLength") and isinstance(instance, str):
        bound = "at least" if kind == "minLength" else "at most"
        yield at(
            "",
            f"{subject} must be {bound} {_plural(expected, 'character')} long, got {len(instance)} "
            f"({_show(instance)})",
        )
    elif kind in ("minItems", "maxItems") and isinstance(instance, list):
        bound = "at least" if kind == "minItems" else "at most"
        yield at(
            "", f"{subject} must have {bound} {_plural(expected, 'item')}, got {len(instance)}"
        )
    elif kind in ("minProperties", "maxProperties") and isinstance(instance, dict):
        bound = "at least" if kind == "minProperties" else "at most"
        yield at(
            "", f"{subject} must have {bound} {_plural(expected, 'field')}, got {len(instance)}"
        )
    elif kind == "pattern":
        yield at("", f"{subject} must match the pattern {expected!r}, got {_show(instance)}")
    elif kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        op = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
        yield at("", f"{subject} must be {op[kind]} {expected}, got {_show(instance)}")
    elif kind == "multipleOf":
        yield at("", f"{subject} must be a multiple of {expected}, got {_show(instance)}")
    elif kind == "uniqueItems":
        yield at("", f"{subject} must not contain the same item twice")
    elif kind in ("oneOf", "anyOf") and err.context:
        yield from _describe_alternatives(err, subject, owner, at)
    elif kind == "oneOf":
        yield at("", f"{subject} matches more than one of the allowed shapes; it must match one")
    elif kind is None and err.schema is False:
        # jsonschema drops the path of a `false` subschema's error; _validate names top-level
        # fields itself, this covers nested ones.
        yield at("", f"a value ({_show(instance)}) is not allowed where it stands (schema `false`)")
    else:
        yield at("", f"{subject}: {_clip(err.message, 200)}")


def _describe_alternatives(
    err: ValidationError, subject: str, owner: str, at: Any
) -> Iterator[tuple[_SortKey, str]]:
    """The most helpful reading of a failed `oneOf`/`anyOf`, never "not valid under any"."""
    by_variant: dict[Any, list[ValidationError]] = {}
    for sub in err.context or []:
        index = sub.relative_schema_path[0] if sub.relative_schema_path else 0
        by_variant.setdefault(index, []).append(sub)
    # A variant whose very type is wrong is the least likely meant; among the others, the one
    # with the fewest errors is the closest.
    fitting = {
        i: subs
        for i, subs in by_variant.items()
        if not any(s.validator == "type" and not s.relative_path for s in subs)
    }
    if not fitting:
        types: list[str] = []
        for subs in by_variant.values():
            for sub in subs:
                if sub.validator == "type" and not sub.relative_path:
                    vals = sub.validator_value
                    for t in vals if isinstance(vals, list) else [vals]:
                        if t not in types:
                            types.append(str(t))
        yield at(
            "",
            f"{subject} must be of type {' or '.join(types)}, got {_json_type(err.instance)} "
            f"({_show(err.instance)})",
        )
        return
    closest = min(fitting.values(), key=len)
    for sub in closest:
        yield from _describe(sub, owner)


def _validate(chosen: StatusContract, data: dict[str, Any], single_exit: bool) -> list[str]:
    """Every error of `data` against the chosen status, sorted by field, each a sentence."""
    try:
        errors = list(chosen.validator.iter_errors(data))
    except (Unresolvable, RecursionError, re.error) as exc:
        # A schema that check_schema accepts can still fail to evaluate (a `$ref` to nowhere,
        # a `$ref` loop). That is the graph's fault, not the reply's; say so, don't crash.
        detail = _clip(" ".join(str(exc).split()), 200)
        raise ExtractError([f"the role's frontmatter schema cannot be used: {detail}"]) from None
    if not errors and not any(k.startswith("$") and k != STATUS_KEY for k in data):
        return []  # the common case, kept cheap
    declared = chosen.fields | {STATUS_KEY}
    described: list[tuple[_SortKey, str]] = []
    for key in data:
        if key.startswith("$") and key not in declared:
            text = f"field '{_field([key])}' is not allowed: keys starting with `$` are reserved"
            described.append((_sort_key([key]), text))
        elif chosen.field_schemas.get(key) is False:
            described.append((_sort_key([key]), f"field '{_field([key])}' is not allowed"))
    named_false = any(chosen.field_schemas.get(k) is False for k in data)
    owner = "the role" if single_exit else f"status '{chosen.status}'"
    for err in errors:
        if named_false and err.validator is None and not err.absolute_path:
            continue  # already named above
        described.extend(_describe(err, owner))
    prefix = "" if single_exit else f"status '{chosen.status}': "
    out: list[str] = []
    for _, text in sorted(described, key=lambda item: item[0]):
        if prefix + text not in out:
            out.append(prefix + text)
    return out


# --------------------------------------------------------------------------- the pipeline


def format_reply(status: str | None, fields: Mapping[str, Any], body: str = "") -> str:
    """The inverse of `extract_output`: a reply text from a status, fields and a body.

    Used for answers typed by people (`threads answer --status --set`, the terminal interview)
    and for replies built in tests (`orchestrator.testing.reply`). No status: no `$status` line.
    """
    data: dict[str, Any] = {} if status is None else {STATUS_KEY: status}
    data.update(fields)
    front = yaml.safe_dump(data, sort_keys=False, allow_unicode=True) if data else ""
    return f"---\n{front}---\n{body}"


def extract_output(text: str, role: Role) -> Output:
    """Turn a reply into its validated `Output`, or raise `ExtractError` saying what is wrong."""
    contract = role.contract
    if not text.strip("\ufeff \t\r\n"):
        raise ExtractError([_no_frontmatter(contract, "the reply is empty")])
    data, body = parse_reply(text)
    if data is None:
        errors = [_no_frontmatter(contract, "the reply has no frontmatter")]
        lines = _normalize(text).split("\n")
        first = _next_nonblank(lines, 0)
        late = _late_block_line(lines)
        if first < len(lines) and _STATUS_LINE.match(lines[first]):
            errors.append(
                f"line {first + 1} ({_code(lines[first].strip())}) starts the fields without "
                "a `---` line before them; put a `---` line before the first field and after "
                "the last one"
            )
        elif late is not None:
            errors.append(
                f"a `---` block with a status starts on line {late}, but the frontmatter must "
                "come first: only blank lines and a short preamble (at most "
                f"{MAX_PREAMBLE_LINES} lines, no code blocks) may come before it"
            )
        raise ExtractError(errors)

    # A single-exit role has no routing key, so a stray `status` there is just a field.
    routes = not contract.single_exit or data.get("status") == SUSPEND
    if routes and STATUS_KEY not in data and "status" in data and not _declares(contract, "status"):
        data = {(STATUS_KEY if k == "status" else k): v for k, v in data.items()}
    if data.get(STATUS_KEY) == SUSPEND:
        return _suspend(data, body)

    chosen = _choose(contract, data)  # single-exit: drops `$status: _` from data
    errors = _validate(chosen, data, contract.single_exit)
    if errors:
        raise ExtractError(errors, status=chosen.status)
    return Output(data, body, chosen.status)


def extract_status_only(text: str, role: Role) -> str:
    """The routing key of a valid reply (`orchestrator extract --status-only`)."""
    return extract_output(text, role).status


# --------------------------------------------------------------------------- describe


def _describe_type(schema: Any) -> str:
    if not isinstance(schema, dict) or not schema:
        return "any"
    if "const" in schema:
        return _show(schema["const"])
    if isinstance(schema.get("enum"), list):
        return "one of " + " | ".join(_show(v) for v in schema["enum"])
    types = schema.get("type")
    if types == "array" and isinstance(schema.get("items"), dict):
        return f"array of {_describe_type(schema['items'])}"
    if types is not None:
        return _expected_types(types)
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list):
            return " or ".join(_describe_type(s) for s in schema[key])
    return "any"


def _describe_fields(sc: StatusContract) -> str:
    def fields(names: Iterable[str]) -> str:
        return ", ".join(f"{n} ({_describe_type(sc.field_schemas.get(n))})" for n in sorted(names))

    parts = []
    if sc.required:
        parts.append(f"required {fields(sc.required)}")
    if sc.optional:
        parts.append(f"optional {fields(sc.optional)}")
    return "; ".join(parts) or "no fields"


def describe_contract(role: Role) -> str:
    """A short, deterministic description of the statuses and fields a reply may carry."""
    contract = role.contract
    if contract.single_exit:
        sc = contract.statuses[SINGLE_EXIT]
        return f"This role has a single exit: write no `$status`. Fields: {_describe_fields(sc)}."
    if not contract.statuses:
        return "This role's frontmatter schema declares no usable statuses."
    lines = [f"`$status` is one of: {_allowed(contract)}."]
    for status, sc in contract.statuses.items():
        lines.append(f"- `$status: {status}`: {_describe_fields(sc)}")
    return "\n".join(lines)
