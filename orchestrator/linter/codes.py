"""The problem codes the loader and the linter report, and how a problem is made.

Every code has one severity; docs/problems.md explains each (a test checks that it does).
"""

from __future__ import annotations

from collections.abc import Callable

from ..definition.problems import Problem, Severity

# Every code lint or the loader can report, with its severity (docs/problems.md explains each).
CODES: dict[str, Severity] = {
    # loader
    "yaml-syntax": "error",
    "yaml-limit": "error",
    "unknown-key": "error",
    "duplicate-key": "error",
    "missing-field": "error",
    "bad-type": "error",
    "unknown-extends": "error",
    "unknown-tool": "error",
    "unmapped-tool": "warning",
    "unmapped-model": "warning",
    "unknown-model": "warning",
    "unknown-provider": "error",
    "no-tool-calls": "error",
    "unreadable": "error",
    "unknown-python": "error",
    "unknown-graph": "error",
    "graph-cycle": "error",
    # names and schemas
    "name-mismatch": "error",
    "reserved-name": "error",
    "bad-status-schema": "error",
    "invalid-json-schema": "error",
    "external-ref": "error",
    "unknown-schema-keyword": "warning",
    "misspelt-schema-keyword": "error",
    # shape
    "start-edge": "error",
    "end-has-edges": "error",
    "unknown-role": "error",
    "unused-role": "warning",
    "unreachable-role": "error",
    "no-path-to-end": "error",
    "missing-status-edge": "error",
    "unknown-status-edge": "error",
    # guards and endings
    "guard-syntax": "error",
    "guard-var": "error",
    "guard-type": "error",
    "guard-no-default": "error",
    "guard-cost": "error",
    "misplaced-ending": "error",
    # fan-outs and subgraphs
    "branch-has-edges": "error",
    "for-each-not-list": "error",
    "inputs-not-subgraph": "error",
    "missing-input": "error",
    "unknown-input": "error",
    # templates
    "template-syntax": "error",
    "template-var": "error",
    "branch-status": "error",
    "optional-var": "warning",
    "html-escape": "warning",
    "empty-prompt": "error",
    # the linter itself
    "internal-error": "error",
}

# (file, line, column) of a problem.
Where = tuple[str, int, int]
# Where a path inside one role (or graph) is: `locate("frontmatter", "oneOf", 0, key=True)`.
Locate = Callable[..., Where]


def problem(where: Where, code: str, message: str, hint: str = "") -> Problem:
    """A problem with the severity its code always has."""
    file, line, col = where
    return Problem(file, line, col, code, CODES[code], message, hint)


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
