""" "Fork from here": the thread page's link on a step, the fork's form, and the thread's lineage.

A fork (docs/format.md section 20) is a new thread whose history is this one's up to step N;
this thread is never changed. The thread page offers "fork from here" on exactly the steps
`allowed().fork_steps` lists (the moderator's answer, never worked out here); the link opens
`GET /threads/ID/fork?step=N`, this module's page, with two ways to fork:

- decide step N again, from its edge: a message for it (appended to its prompt), `reuse`
  (steps equal to this thread's take its replies without calling their actors, until the
  first difference), a title;
- or give step N's reply yourself: the reply editor is the answer form built from the role's
  contract (web/answer_form.py, one form per status, its inputs typed by the fields' schemas),
  filled in with this thread's reply for the step; the reply is validated against the contract
  like a person's answer, and the fork continues from the edge it picks.

Both post to `/threads/ID/fork` (the token and a same-origin `Origin`, like every request that
changes something: web/guard.py). A step number that is not one, a step the moderator does not
let the thread be forked at, or a reply the contract refuses is answered with 422 and the error
in words (the form shown again with what was typed), never a server error.

The page of a thread shows its lineage: the thread it was forked from (and at which step), and
the forks made of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.allowed import Allowed
from ..core.steps import StepView, ThreadView
from ..definition.models import Graph
from ..run.waiting import Question
from ..store.base import ThreadRow
from .answer_form import FormLook, answer_forms, reply_from_form
from .html import esc, page, pre, value_text

MAX_STEP_DIGITS = 12  # a longer "number" is no step (and never reaches int())


@dataclass(frozen=True)
class ForkTyped:
    """What a person typed into a fork form that was refused, to show it again."""

    errors: tuple[str, ...] = ()
    status: str | None = None  # the reply form sent (None: "decide again")
    typed: dict[str, str] = field(default_factory=dict)  # the reply's fields, `$body`
    message: str = ""
    reuse: bool = False
    title: str = ""


def step_number(text: str) -> int | None:
    """A step number as a form or a URL sent it: ASCII digits of a sane length, else None
    (a hostile "²" or 5,000 digits must not reach int())."""
    if text.isascii() and text.isdigit() and len(text) <= MAX_STEP_DIGITS:
        return int(text)
    return None


def fork_link(thread_id: str, step: int) -> str:
    """The step's "fork from here" link, on a step the moderator lets the thread be forked at."""
    return (
        f'<p class="fork-here"><a class="fork" href="/threads/{esc(thread_id)}/fork?step={step}" '
        f'data-fork="{step}">fork from here</a></p>'
    )


def forkable(allowed: Allowed, step: int) -> bool:
    return allowed.fork.ok and step in allowed.fork_steps


def lineage(forked_from: Mapping[str, Any] | None, forks: Sequence[tuple[ThreadRow, int]]) -> str:
    """Where the thread comes from, and the forks made of it."""
    parts = []
    if forked_from:
        origin, at = str(forked_from.get("thread", "")), forked_from.get("step", "?")
        parts.append(
            f'<p data-forked-from="{esc(origin)}">forked from '
            f'<a href="/threads/{esc(origin)}">{esc(origin)}</a> at step {esc(at)}</p>'
        )
    if forks:
        items = "".join(
            f'<li data-fork-thread="{esc(r.id)}"><a href="/threads/{esc(r.id)}">{esc(r.id)}</a>'
            f" at step {at} · {esc(str(r.state))}</li>"
            for r, at in forks
        )
        parts.append(f'<p>forks of this thread:</p><ul class="forks">{items}</ul>')
    return f'<div class="lineage" data-live="lineage">{"".join(parts)}</div>' if parts else ""


def question_at(row: ThreadRow, view: ThreadView, graph: Graph | None, at: int) -> Question:
    """Step `at`'s role and prompt as a question: the reply editor's contract."""
    step = _step(view, at)
    name = step.role if step is not None else ""
    role = graph.roles.get(name) if graph is not None and name else None
    if role is not None and role.graph is not None:  # a subgraph role: its child's ending
        role = None
    prompt = step.prompt if step is not None else ""
    return Question(row.id, at, name, role, prompt, dict(view.state.inputs))


def reply_of(question: Question, data: Mapping[str, str]) -> tuple[str | None, ForkTyped]:
    """(the replacement reply, or None to decide the step again; what was typed)."""
    message = data.get("message", "").replace("\r\n", "\n")
    reuse = data.get("reuse", "") in ("on", "1", "true", "yes")
    title = data.get("title", "").strip()
    if "status" not in data:
        return None, ForkTyped(message=message, reuse=reuse, title=title)
    status, text, typed = reply_from_form(question, data)
    return text, ForkTyped(status=status, typed=typed, reuse=reuse, title=title)


def fork_page(
    row: ThreadRow,
    view: ThreadView,
    question: Question,
    *,
    where: str,
    notice: str = "",
    typed: ForkTyped | None = None,
) -> str:
    at = question.step
    action = f"/threads/{row.id}/fork"
    again = typed is not None and typed.status is None
    mine = typed if again else None
    step = _step(view, at)
    body = [
        f'<h1>Fork thread <a class="mono" href="/threads/{esc(row.id)}">{esc(row.id)}</a> '
        f"from step {at}</h1>",
        f'<div class="banner error" role="alert">{esc(notice)}</div>' if notice else "",
        '<p class="note">A fork is a new thread: this thread\'s history up to step '
        f"{at}, then step {at} decided again or given your reply. This thread is not "
        "changed.</p>",
        _original(step),
        f'<section class="card"><h2>Decide step {at} again</h2>',
        f'<form class="answer fork-again" method="post" action="{esc(action)}">',
        f'<input type="hidden" name="step" value="{at}">',
        _errors(mine.errors if mine else ()),
        '<label for="fork-message">message <span class="hint">(optional: added to step '
        f"{at}'s prompt)</span></label>"
        f'<textarea id="fork-message" name="message" rows="3">'
        f"{esc(mine.message if mine else '')}</textarea>",
        _options("again", mine),
        f'<p><button class="primary" type="submit">Fork: decide step {at} again</button></p>',
        "</form></section>",
    ]
    if question.forms:
        chosen = typed if typed is not None and typed.status is not None else None
        filled = _filled(step) if chosen is None else chosen.typed
        look = FormLook(
            action=action,
            prefix=f"fork-{at}",
            title="Fork with this reply",
            button="Fork with this reply {status}",
            extra=_options("{status}", chosen),
        )
        body += [
            f'<section class="card"><h2>Or give step {at}\'s reply yourself</h2>',
            f'<p class="note">as <code>{esc(question.role_name)}</code>: checked against its '
            "contract like a person's answer; the fork goes on from the edge it picks.</p>",
            answer_forms(
                question,
                errors=chosen.errors if chosen else (),
                status=chosen.status if chosen else (step.status if step else None),
                typed=filled,
                look=look,
            ),
            "</section>",
        ]
    # The thread's feed: the header says whether the server is there (the page has no region
    # that changes, so nothing is swapped while a person types).
    feed = f"/threads/{row.id}/events"
    return page(
        f"fork {row.id} at step {at}", "".join(body), where=where, feed=feed, seq=str(row.seq)
    )


def _options(key: str, typed: ForkTyped | None) -> str:
    """The reuse checkbox and the title, with ids of their own form (`key`)."""
    checked = " checked" if typed is not None and typed.reuse else ""
    title = esc(typed.title) if typed is not None else ""
    return (
        f'<p><input type="checkbox" id="fork-{key}-reuse" name="reuse"{checked}> '
        f'<label class="inline" for="fork-{key}-reuse">reuse: steps equal to this thread\'s '
        "take its replies, without calling their actors, until the first difference</label></p>"
        f'<label for="fork-{key}-title">title <span class="hint">(optional)</span></label>'
        f'<input type="text" id="fork-{key}-title" name="title" value="{title}">'
    )


def _original(step: StepView | None) -> str:
    if step is None:
        return ""
    status = f"answered <code>{esc(step.status)}</code>" if step.status else "not committed"
    fields = {k: v for k, v in step.frontmatter.items() if k != "$status"}
    rows = "".join(
        f"<tr><td>{esc(k)}</td><td>{esc(value_text(v))}</td></tr>" for k, v in fields.items()
    )
    return (
        f'<section class="card" data-original="{step.step}"><h2>Step {step.step} in this '
        f"thread: <code>{esc(step.role)}</code> {status}</h2>"
        + (f'<table class="fields">{rows}</table>' if rows else "")
        + f"<details><summary>its prompt</summary>{pre(step.prompt, 'prompt')}</details>"
        + "</section>"
    )


def _filled(step: StepView | None) -> dict[str, str]:
    """This thread's reply for the step, as the editor's starting values."""
    if step is None or not step.committed:
        return {}
    typed = {k: value_text(v) for k, v in step.frontmatter.items() if k != "$status"}
    return {**typed, "$body": step.body}


def _errors(errors: tuple[str, ...]) -> str:
    if not errors:
        return ""
    return '<ul class="errors">' + "".join(f"<li>{esc(e)}</li>" for e in errors) + "</ul>"


def _step(view: ThreadView, at: int) -> StepView | None:
    return next((s for s in view.steps if s.step == at), None)
