"""Problems: what the loader and the linter report, with a place to point at.

A problem code is a stable kebab-case identifier; docs/problems.md lists every code. Severity is
"error" (the graph cannot run as written) or "warning" (it runs, but probably not as meant).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal

from ..errors import GraphError as GraphError  # defined with its family; imported from here too

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Problem:
    file: str
    line: int
    column: int
    code: str
    severity: Severity
    message: str
    hint: str = ""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def format(self) -> str:
        """Compiler style: `file:line:col: error[code]: message`, then the hint indented."""
        text = (
            f"{self.file}:{self.line}:{self.column}: {self.severity}[{self.code}]: {self.message}"
        )
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text


def has_errors(problems: Iterable[Problem]) -> bool:
    return any(p.severity == "error" for p in problems)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A hint naming the closest choice, or an empty string."""
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean '{matches[0]}'?" if matches else ""
