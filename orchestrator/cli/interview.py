"""`threads answer ID` with no answer given: the interview in a terminal, or what to pass."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ..actors.base import Attempt
from ..actors.human import HumanActor
from ..core.outcomes import Refused
from ..definition.models import Graph
from ..run.waiting import Question
from .common import EXIT_WAITING, fail, fail_error
from .terminal import neutralise

if TYPE_CHECKING:
    from ..run.contract import ThreadSession


def answer_options(question: Question) -> str:
    """What to pass when there is no terminal to ask on."""
    lines = [
        f"thread {question.thread_id} waits for an answer as '{question.role_name}' "
        f"(step {question.step}); there is no terminal to ask on, so pass the answer:"
    ]
    lines += [f"  {line}" for line in question.hints()]
    lines.append(f"  orchestrator threads answer {question.thread_id} --file REPLY.md")
    lines.append(f"(the question: orchestrator threads show {question.thread_id})")
    return "\n".join(lines)


def ask_in_terminal(session: ThreadSession, graph: Graph, question: Question) -> str:
    """The interview `run` holds for a human role, until the moderator would take the answer.

    Nothing is recorded here: the answer is committed by the session afterwards. An answer the
    role's contract refuses is shown its errors and asked again; Ctrl-C leaves the thread
    waiting, as it was.
    """
    if question.role is None:
        fail(  # no answer is taken for it (J8); a resume decides the step again
            f"the graph has no role '{question.role_name}' any more; resume the thread to "
            f"decide the step again: orchestrator threads resume {question.thread_id}"
        )
    actor = HumanActor(show=click.echo)
    attempts: tuple[Attempt, ...] = ()
    while True:
        try:
            # input() writes its prompt to the terminal itself, past sys.stdout's guard.
            text = actor.interview(question.request(attempts), lambda p: input(neutralise(p)))
        except (KeyboardInterrupt, EOFError):
            click.echo(
                f"\ninterrupted: nothing was recorded; thread {question.thread_id} still waits "
                "for its answer",
                err=True,
            )
            sys.exit(EXIT_WAITING)
        try:
            errors = session.check_answer(graph, question.thread_id, text, question.step)
        except Refused as exc:
            fail_error(exc)
        if not errors:
            return text
        attempts = (Attempt(text, errors),)
