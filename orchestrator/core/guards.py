"""Edge guards: CEL expressions the moderator evaluates to choose among a status's edges.

docs/format.md section 11. Expressions are compiled once (cached by their text) by the
`common-expression-language` package, a binding of Google's own CEL implementation: evaluation
takes microseconds, and its errors say where an expression is wrong. A guard sees:

    output      the previous step's frontmatter (declared-but-absent fields as null), with
                `output.status` for its `$status`
    inputs      the thread's inputs
    steps.ROLE  ROLE's latest output, the same way (absent if ROLE has not run: `has(steps.ROLE)`)
    visits.ROLE how many times ROLE has committed (0 if never)
    thread.step the number of the step about to start

Pure: the same state gives the same names, so guards replay like everything else. A guard's
cost is bounded before it runs (core/guard_cost.py: the package has no cost limit of its own).
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from .guard_cost import GUARD_BUDGET, estimate, shape

GUARD_NAMES = ("output", "inputs", "steps", "visits", "thread")


class GuardError(ValueError):
    """A guard that does not compile, or fails to evaluate to a boolean."""


@functools.cache
def _cel() -> ModuleType:
    """The compiled CEL module.

    The package's `__init__` also imports its interactive command line (prompt_toolkit and
    more: about 450 ms); the extension module alone loads in about 50 ms, so it is loaded
    directly when it can be, and through the package otherwise.
    """
    spec = importlib.util.find_spec("cel")
    if spec is None or spec.origin is None:
        raise GuardError(
            "edge guards need the `common-expression-language` package: pip install it"
        )
    folder = Path(spec.origin).parent
    for candidate in sorted(folder.glob("cel.*.so")) + sorted(folder.glob("cel.*.pyd")):
        loader = importlib.machinery.ExtensionFileLoader("cel.cel", str(candidate))
        found = importlib.util.spec_from_file_location("cel.cel", candidate, loader=loader)
        if found is not None:
            module = importlib.util.module_from_spec(found)
            loader.exec_module(module)
            return module
    return importlib.import_module("cel")


@functools.lru_cache(maxsize=4096)
def compile_guard(expression: str) -> Any:
    """The compiled program; GuardError with CEL's own message when it does not parse."""
    try:
        return _cel().compile(expression)
    except ValueError as exc:
        # CEL's message: "Failed to parse expression '...': ERROR: <input>:1:19: Syntax error:
        # ..." then the expression with a caret; the first line after ERROR says it all.
        text = str(exc)
        raise GuardError(text.split("ERROR: ", 1)[-1].split("\n", 1)[0]) from None


def names_used(expression: str) -> list[str]:
    """The top-level names a guard reads (for the linter's guard-var check).

    CEL lists the names comprehensions bind (the `x` of `l.all(x, x > 0)`) among the variables;
    they are no names the guard reads.
    """
    bound = shape(expression).bound
    return [name for name in compile_guard(expression).variables() if name not in bound]


def evaluate(expression: str, names: dict[str, Any]) -> bool:
    """Whether the guard holds; GuardError when it fails, is not a boolean or would cost more
    than its budget (core/guard_cost.py: then it does not run at all)."""
    program = compile_guard(expression)
    cost = estimate(shape(expression), names)
    if cost > GUARD_BUDGET:
        raise GuardError(
            f"it could take {cost:,} steps over these values, more than the budget of "
            f"{GUARD_BUDGET:,} (its comprehensions nest {shape(expression).depth} deep over "
            "lists this large); guard over smaller lists or nest less"
        )
    context = _cel().Context()
    for name in GUARD_NAMES:
        context.add_variable(name, names.get(name, {}))
    try:
        value = program.execute(context)
    except KeyError as exc:  # the package's word for a key the value does not have
        raise GuardError(f"no such key: {exc.args[0]!r}" if exc.args else "no such key") from None
    except (TypeError, ValueError, RuntimeError) as exc:
        raise GuardError(str(exc).split("\n", 1)[0]) from None
    if not isinstance(value, bool):
        raise GuardError(f"it gave {value!r}, not true or false")
    return value
