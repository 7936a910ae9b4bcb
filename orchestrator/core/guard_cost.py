"""A guard's cost: the bound that keeps a CEL expression from running for minutes.

The `common-expression-language` package has no cost limit of its own (its `Program.execute`
takes no budget and cannot be interrupted), and a guard of nested comprehensions over a list of
a thousand items (`l.map(a, l.map(b, a + b))`) runs for minutes. So a guard's cost is bounded
before it runs, deterministically (a replay takes the same decision):

- `shape(expression)` reads the expression once (cached): its comprehension macros (`all`,
  `exists`, `exists_one`, `map`, `filter`) as a tree by nesting, the names they bind, and in
  each macro's arguments the operators that may cost as much as a whole list (`in`, `+`, `==`,
  `!=` and the string functions, unless one side is a literal);
- `estimate(shape, names)` bounds the work with the values the guard is about to see: every
  list the guard can range over has at most R items, R being the largest list or map in the
  names (or literal list in the expression) times one more than the number of `+` (each may
  join two lists); a macro nested k deep runs at most R^k iterations; an iteration costs one
  unit (about 0.35 microseconds), plus R/4 per list-wide operator and R for `map` and `filter`
  (the package copies their accumulator on every iteration: quadratic);
- the package also copies every value a macro's arguments name from outside it, on every
  iteration (`output.m[k]` inside `output.keys.all(k, ...)` copies the whole map `output.m`),
  and an accumulator's items are copied whole (a `filter` over a list of lists): so a macro's
  iteration costs the weight (values and items, nested) of each outside value it names, divided
  by 4, and an accumulating macro's R becomes R times the heaviest item it may hold (the
  heaviest list item in the names, or such an outside value). Without this, one level of
  `filter` over 600 lists of 600 numbers, or a lookup in a map of 50,000 keys for each of them
  (replies of under a million characters), passed the budget and ran for tens of seconds to
  minutes;
- `GUARD_BUDGET` units (about one second) is the most a guard may cost; more, and it is not
  run (core/guards.py raises a GuardError, and the thread suspends naming the edge).

`validate` reports comprehensions nested more than twice as `guard-cost` (linter/guards.py):
their cost grows as the cube of the data, which no budget makes reasonable.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

GUARD_BUDGET = 3_000_000
MAX_NESTING = 2  # deeper nesting is reported by `validate` as guard-cost

_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_ACCUMULATING = frozenset({"map", "filter"})
_LIST_WIDE = frozenset({"in", "+", "==", "!=", "contains", "startsWith", "endsWith", "matches"})
_LITERAL = re.compile(r"^(?:\d[\w.]*|''|true|false|null)$")
# Strings become '' first, so their contents are no tokens.
_STRINGS = re.compile(
    r"[rRbB]*('''.*?'''|\"\"\".*?\"\"\"|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")", re.S
)
_NAME = re.compile(r"^[A-Za-z_]\w*$")
_KEYWORDS = frozenset({"true", "false", "null", "in"})
_TOKENS = re.compile(r"''|[A-Za-z_]\w*|\d[\w.]*|==|!=|&&|\|\||<=|>=|\S")


@dataclass(frozen=True)
class Comprehension:
    """One macro call: what it is, the name it binds, what its arguments cost."""

    macro: str
    variable: str
    list_wide: int  # list-wide operators in its arguments, outside nested macros
    inner: tuple[Comprehension, ...]
    free: tuple[str, ...] = ()  # dotted paths of outside values its arguments name (`output.m`)

    @property
    def depth(self) -> int:
        return 1 + max((c.depth for c in self.inner), default=0)


@dataclass(frozen=True)
class Shape:
    """What an expression's cost depends on, read from its text."""

    comprehensions: tuple[Comprehension, ...]
    pluses: int
    literal_items: int  # an upper bound on the items of a list literal in it
    bound: frozenset[str]  # the names its macros bind

    @property
    def depth(self) -> int:
        return max((c.depth for c in self.comprehensions), default=0)


@dataclass
class _Open:
    """A parenthesis still open while `shape` reads: a macro's arguments, or any other group.
    Mutable, as it counts what it holds until it closes into a frozen Comprehension."""

    macro: str | None
    variable: str = ""
    list_wide: int = 0
    inner: list[Comprehension] | None = None
    free: list[str] | None = None


@functools.lru_cache(maxsize=4096)
def shape(expression: str) -> Shape:
    tokens = _TOKENS.findall(_STRINGS.sub("''", expression))
    top: list[Comprehension] = []
    stack: list[_Open] = []
    bound: set[str] = set()
    for i, token in enumerate(tokens):
        before = tokens[i - 1] if i else ""
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token == "(":
            if before in _MACROS and i >= 2 and tokens[i - 2] == ".":
                variable = after if re.match(r"[A-Za-z_]", after) else ""
                bound.add(variable)
                stack.append(_Open(before, variable, 0, [], []))
            else:
                stack.append(_Open(None))
        elif token == ")" and stack:
            frame = stack.pop()
            if frame.macro is not None:
                done = Comprehension(
                    frame.macro,
                    frame.variable,
                    frame.list_wide,
                    tuple(frame.inner or ()),
                    tuple(frame.free or ()),
                )
                _innermost(stack, top).append(done)
        elif _NAME.match(token) and before != "." and after != "(" and token not in _KEYWORDS:
            macros = [f for f in stack if f.macro is not None]
            if macros and token not in {f.variable for f in macros}:
                assert macros[-1].free is not None
                macros[-1].free.append(_path(tokens, i))
        elif token in _LIST_WIDE and not (_LITERAL.match(before) or _LITERAL.match(after)):
            for frame in reversed(stack):
                if frame.macro is not None:
                    frame.list_wide += 1
                    break
    bound.discard("")
    pluses = sum(
        1
        for i, token in enumerate(tokens)
        if token == "+"
        and not _LITERAL.match(tokens[i - 1])
        and not (i + 1 < len(tokens) and _LITERAL.match(tokens[i + 1]))
    )
    return Shape(tuple(top), pluses, tokens.count(",") + 1, frozenset(bound))


def _path(tokens: list[str], i: int) -> str:
    """The dotted path starting at token `i` (`output.m` of `output.m[k]`), up to a call."""
    parts = [tokens[i]]
    j = i + 1
    while j + 1 < len(tokens) and tokens[j] == "." and _NAME.match(tokens[j + 1]):
        if j + 2 < len(tokens) and tokens[j + 2] == "(":
            break
        parts.append(tokens[j + 1])
        j += 2
    return ".".join(parts)


def _innermost(stack: list[_Open], top: list[Comprehension]) -> list[Comprehension]:
    for frame in reversed(stack):
        if frame.inner is not None:
            return frame.inner
    return top


def estimate(found: Shape, names: dict[str, Any]) -> int:
    """The most units of work evaluating the expression over these names can take."""
    if not found.comprehensions:
        return 1
    largest, longest, heaviest = _sizes(names)
    items = max(largest, found.literal_items) * (found.pluses + 1)
    wide = max(items, longest // 8) // 4 + 1

    def cost(macro: Comprehension, outside: int) -> int:
        runs = outside * items
        named = [_weight(_resolve(names, path)) for path in macro.free]
        each = 1 + macro.list_wide * wide + sum(named) // 4
        if macro.macro in _ACCUMULATING:
            each += items * max(heaviest, *named, 1)
        return runs * each + sum(cost(c, runs) for c in macro.inner)

    return sum(cost(c, 1) for c in found.comprehensions)


def _sizes(value: Any) -> tuple[int, int, int]:
    """The most items of any list or map in `value`, the longest string, and the weight of the
    heaviest item of any list (what a `filter` or `map` accumulator may hold)."""
    largest = longest = heaviest = 0
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            largest = max(largest, len(item))
            todo.extend(item.values())
        elif isinstance(item, (list, tuple)):
            largest = max(largest, len(item))
            todo.extend(item)
            heaviest = max([heaviest, *(_weight(i) for i in item if isinstance(i, _NESTED))])
        elif isinstance(item, (str, bytes)):
            longest = max(longest, len(item))
    return largest, longest, heaviest


_NESTED = (dict, list, tuple)


def _weight(value: Any) -> int:
    """How many values `value` holds, nested ones included (itself counted): what copying it
    costs the package, in units."""
    total = 0
    todo = [value]
    while todo:
        item = todo.pop()
        total += 1
        if isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, (list, tuple)):
            todo.extend(item)
        elif isinstance(item, (str, bytes)):
            total += len(item) // 64
    return total


def _resolve(names: dict[str, Any], path: str) -> Any:
    """The value a dotted path names, as far as it can be followed (a name the guard does not
    get: nothing)."""
    root, *rest = path.split(".")
    value: Any = names.get(root)
    for part in rest:
        if not isinstance(value, dict) or part not in value:
            break
        value = value[part]
    return value
