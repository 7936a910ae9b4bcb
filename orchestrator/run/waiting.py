"""What a waiting thread asks: the question of its step, and the answers its contract takes.

A thread waits when a `human` role's step had no terminal to ask on. `threads show`, the end of
a `run` and `threads answer` without options all tell the person the same things, from here:
the prompt of the waiting step (the question), the statuses the role may answer with and the
fields each needs, and concrete `threads answer` commands built from the role's contract.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..actors.base import ActRequest, Attempt
from ..core import engine
from ..core.allowed import Allowed, Answerable
from ..core.outcomes import Answered, Refused
from ..core.state import ThreadState
from ..definition.models import SINGLE_EXIT, Graph, Role


@dataclass(frozen=True)
class Field:
    name: str
    required: bool
    schema: dict[str, Any]

    def describe(self) -> str:
        """`budget: integer, required: the amount` as one line."""
        schema = self.schema if isinstance(self.schema, dict) else {}
        kind = schema.get("type")
        parts = [" or ".join(kind) if isinstance(kind, list) else str(kind or "any value")]
        if "enum" in schema:
            parts = [
                "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
            ]
        elif "const" in schema:
            parts = ["exactly " + json.dumps(schema["const"], ensure_ascii=False)]
        parts.append("required" if self.required else "optional")
        text = f"{self.name}: {', '.join(parts)}"
        about = schema.get("description")
        return text + (f" ({about})" if isinstance(about, str) and about.strip() else "")


@dataclass(frozen=True)
class AnswerForm:
    """One status a person may answer with, and its fields."""

    status: str  # "_" for a role without statuses
    fields: tuple[Field, ...]

    def command(self, thread_id: str, step: int | None = None) -> str:
        """`orchestrator threads answer ID --status S --set FIELD=...` for the required fields
        (with `--step N` when more than one step waits)."""
        words = ["orchestrator", "threads", "answer", thread_id]
        if step is not None:
            words += ["--step", str(step)]
        if self.status != SINGLE_EXIT:
            words += ["--status", self.status]
        for f in self.fields:
            if f.required:
                words += ["--set", f"{f.name}=..."]
        return " ".join(words)


@dataclass(frozen=True)
class Question:
    """The step a waiting thread waits on, and how to answer it."""

    thread_id: str  # the thread an answer is sent to (a parent, for a person in its child)
    step: int  # the step of that thread an answer names
    role_name: str
    role: Role | None  # None when the graph no longer has the role
    prompt: str
    inputs: dict[str, Any]
    several: bool = False  # more than one step waits: an answer names its step (--step)

    @classmethod
    def of(cls, thread_id: str, asked: Answerable, several: bool = False) -> Question:
        """The question of a step `allowed()` lists as answerable, sent to `thread_id`."""
        return cls(
            thread_id,
            asked.top_step,
            asked.role_name,
            asked.role,
            asked.prompt,
            dict(asked.inputs),
            several,
        )

    def command(self, form: AnswerForm) -> str:
        return form.command(self.thread_id, self.step if self.several else None)

    @property
    def forms(self) -> list[AnswerForm]:
        if self.role is None:
            return []
        forms = []
        for name, spec in self.role.contract.statuses.items():
            fields = [Field(f, True, spec.field_schemas.get(f, {})) for f in sorted(spec.required)]
            fields += [
                Field(f, False, spec.field_schemas.get(f, {})) for f in sorted(spec.optional)
            ]
            forms.append(AnswerForm(name, tuple(fields)))
        return forms

    def hints(self) -> list[str]:
        """Lines a person reads: one command per status, with its fields under it."""
        lines = []
        for form in self.forms:
            lines.append(self.command(form))
            lines += [f"    {f.describe()}" for f in form.fields]
        return lines

    def request(self, attempts: tuple[Attempt, ...] = ()) -> ActRequest:
        """The step as the `human` actor's interview asks it."""
        if self.role is None:
            raise LookupError(f"the graph has no role '{self.role_name}' any more")
        return ActRequest(
            thread_id=self.thread_id,
            step=self.step,
            role_name=self.role_name,
            role=self.role,
            prompt=self.prompt,
            inputs=dict(self.inputs),
            attempts=attempts,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "role": self.role_name,
            "prompt": self.prompt,
            "answers": [
                {
                    "status": form.status,
                    "required": [f.name for f in form.fields if f.required],
                    "optional": [f.name for f in form.fields if not f.required],
                    "command": self.command(form),
                }
                for form in self.forms
            ],
        }


def question_of(state: ThreadState, roles: dict[str, Role]) -> Question | None:
    """The question of a waiting thread's first waiting step, read from the state alone (no
    graph to ask `allowed()` with): None when it does not wait for a person."""
    step = state.waiting_for
    if step is None:
        return None
    return Question(
        state.thread_id, step.step, step.role, roles.get(step.role), step.prompt, state.inputs
    )


def question_for(allowed: Allowed, step: int | None = None) -> Question | None:
    """The question of the step `allowed()` lists that an answer naming `step` (None: the
    first) goes to, or None when no such step may be answered."""
    asked = allowed.answering(step)
    if asked is None:
        return None
    return Question.of(allowed.thread_id, asked, several=len(allowed.answers) > 1)


def answer_errors(
    graph: Graph, state: ThreadState, text: str, step: int | None = None
) -> tuple[str, ...]:
    """Why the moderator would refuse this answer (empty: it would take it); nothing is
    recorded. Raises Refused when the thread (or that step) does not wait for an answer."""
    try:
        engine.judge(graph, state, Answered(text, step))
    except Refused as exc:
        if not exc.errors:
            raise
        return exc.errors
    return ()
