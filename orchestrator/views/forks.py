"""Forks shown (docs/format.md section 20): where two threads differ, step by step, and lineage.

`thread_diff(a, b)` compares two threads' committed steps at the same positions (step n of
one beside step n of the other): the role, the status and the fields (the output's frontmatter
without `$status`). A step only one of them has differs too. The threads' endings close the
comparison. `diff_text` words it for `threads diff`, `diff_json` is its `--json`. Lineage words
a fork's origin ("forked from T at step 3") and a thread's forks, for `threads list` and `show`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..core.steps import StepView, ThreadView
from .plural import noun


@dataclass(frozen=True)
class Side:
    """A committed step as the comparison sees it."""

    role: str
    status: str
    fields: dict[str, Any]

    @classmethod
    def of(cls, step: StepView) -> Side:
        fields = {k: v for k, v in step.frontmatter.items() if k != "$status"}
        return cls(step.role, step.status or "", fields)

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "status": self.status, "fields": self.fields}


@dataclass(frozen=True)
class StepDiff:
    step: int
    a: Side | None
    b: Side | None

    @property
    def differs(self) -> tuple[str, ...]:
        """What differs: "step" (only one has it), else "role", "status", "fields"."""
        if self.a is None or self.b is None:
            return ("step",)
        return tuple(
            name
            for name in ("role", "status", "fields")
            if getattr(self.a, name) != getattr(self.b, name)
        )


@dataclass(frozen=True)
class ThreadDiff:
    a: str
    b: str
    steps: tuple[StepDiff, ...]
    endings: tuple[str, str]  # each thread's state and ending, worded

    @property
    def first_difference(self) -> int | None:
        return next((s.step for s in self.steps if s.differs), None)


def thread_diff(a_id: str, a: ThreadView, b_id: str, b: ThreadView) -> ThreadDiff:
    """Compare the committed steps of two threads, position by position."""
    mine = {s.step: Side.of(s) for s in a.committed}
    theirs = {s.step: Side.of(s) for s in b.committed}
    numbers = sorted(set(mine) | set(theirs))
    steps = tuple(StepDiff(n, mine.get(n), theirs.get(n)) for n in numbers)
    return ThreadDiff(a_id, b_id, steps, (_ending(a), _ending(b)))


def _ending(view: ThreadView) -> str:
    state = view.state
    return f"{state.status}" + (f" ({state.ending})" if state.ending else "")


def _side(side: Side | None) -> str:
    if side is None:
        return "(no such step)"
    fields = ", ".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in side.fields.items())
    return f"{side.role} -> {side.status}" + (f"  {fields}" if fields else "")


def diff_text(diff: ThreadDiff, *, width: int = 100) -> list[str]:
    """The lines `threads diff` prints: each step, same or what differs, then the endings."""
    first = diff.first_difference
    lines = [
        f"A {diff.a}",
        f"B {diff.b}",
        "the same steps" if first is None else f"first difference at step {first}",
    ]
    for s in diff.steps:
        differs = s.differs
        if not differs:
            lines.append(_cut(f"step {s.step}: same  {_side(s.a)}", width))
            continue
        if differs == ("step",):
            which, side = ("A", s.a) if s.a is not None else ("B", s.b)
            lines.append(_cut(f"step {s.step}: only in {which}  {_side(side)}", width))
            continue
        lines.append(
            f"step {s.step}: {', '.join(differs)} {noun(len(differs), 'differs', 'differ')}"
        )
        lines.append(_cut(f"  A {_side(s.a)}", width))
        lines.append(_cut(f"  B {_side(s.b)}", width))
    same = diff.endings[0] == diff.endings[1]
    lines.append(
        f"end: {'same  ' + diff.endings[0] if same else f'A {diff.endings[0]}, B {diff.endings[1]}'}"
    )
    return lines


def diff_json(diff: ThreadDiff) -> dict[str, Any]:
    return {
        "a": diff.a,
        "b": diff.b,
        "first_difference": diff.first_difference,
        "steps": [
            {
                "step": s.step,
                "differs": list(s.differs),
                "a": s.a.to_dict() if s.a else None,
                "b": s.b.to_dict() if s.b else None,
            }
            for s in diff.steps
        ],
        "end": {"a": diff.endings[0], "b": diff.endings[1]},
    }


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def lineage(forked_from: dict[str, Any] | None, forks: list[tuple[str, int]]) -> list[str]:
    """Lines for `threads show`: where the thread was forked from, and its forks."""
    lines = []
    if forked_from:
        lines.append(f"forked from {forked_from['thread']} at step {forked_from['step']}")
    for fork, step in forks:
        lines.append(f"fork {fork} at step {step}")
    return lines


def forks_of(thread_id: str, forks: dict[str, dict[str, Any]]) -> list[tuple[str, int]]:
    """The forks made of `thread_id` (store.forks()), by id, with their steps."""
    return sorted((f, int(o["step"])) for f, o in forks.items() if o.get("thread") == thread_id)
