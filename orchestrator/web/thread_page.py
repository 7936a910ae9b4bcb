"""A thread's page: what it is, what to do next, the graph with its path, and its timeline.

Everything comes from the session's reading methods and the typed view of the log
(`core/steps.py`): the summary row, the `ThreadView` (steps, their attempts, the edges taken)
and, for a waiting thread, the `Question` its role asks. The page shows per step its role, the
edge that led there, the status it answered, how often it ran, the prompt, the fields, the body,
each rejected reply with its errors, tokens, cost, model, tool calls and time; then the final
message, the ending and its recovery, or why the thread stopped and the buttons that continue
it (resume with a message, cancel, or the answer forms of each waiting person). The buttons and
forms are those `allowed()` (core/allowed.py) lists and nothing else: a form per step a person
may answer (each waiting branch, a person inside a subgraph's child), Resume (its message
required when the moderator needs one) and Cancel exactly when the moderator would take them,
and "fork from here" on each step the moderator lets the thread be forked at (`fork_steps`);
the thread's lineage (forked from, its forks) is web/fork_page.py's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.allowed import Allowed
from ..core.events import ThreadStatus
from ..core.steps import StepView, ThreadView
from ..definition.models import Graph
from ..render.diagram import Taken
from ..run.waiting import Question, question_for
from ..store.base import ThreadRow
from ..views.facts import StepFigures, step_facts
from ..views.story import ledger
from ..views.summary import spent as cost
from ..views.summary import totals
from .answer_form import answer_forms
from .fork_page import fork_link, forkable, lineage
from .html import badge, esc, page, pre, stamp, value_text
from .svg import to_svg


@dataclass(frozen=True)
class Notice:
    """A line above the page: an error (a refused request) or information."""

    text: str
    kind: str = "error"


@dataclass(frozen=True)
class AnswerState:
    """What a person typed into an answer form that was refused, to show it again."""

    status: str
    errors: tuple[str, ...]
    typed: dict[str, str]
    step: int | None = None  # the step it answered (None: the first that waits)


def thread_page(
    row: ThreadRow,
    view: ThreadView,
    *,
    graph: Graph | None,
    allowed: Allowed,
    where: str,
    running_here: bool = False,
    notices: tuple[Notice, ...] = (),
    answer: AnswerState | None = None,
    forks: Sequence[tuple[ThreadRow, int]] = (),  # the forks of this thread, at their steps
) -> str:
    state = view.state
    status = str(state.status)
    spent = totals(view)
    head = [
        f'<h1>thread <span class="mono">{esc(row.id)}</span></h1>',
        '<div class="facts" data-live="facts">',
        f"{badge(status)} <span>graph {esc(row.graph)}</span>",
        f"<span>{spent.steps}</span><span>{spent.tokens}</span>",
        f"<span>{spent.cost}</span><span>started {esc(stamp(row.created))}</span>",
        f"<span>last event {esc(stamp(row.updated))}</span>",
        f"<span>workspace <code>{esc(state.workspace)}</code></span>",
        "</div>",
    ]
    head.append(lineage(state.forked_from, forks))
    if state.inputs:
        head.append("<details><summary>inputs</summary>" + _fields(state.inputs) + "</details>")
    body = [
        *head,
        '<div data-live="notices">',
        *(f'<div class="banner {esc(n.kind)}">{esc(n.text)}</div>' for n in notices),
        "</div>",
        f'<div data-live="outcome">{_outcome(row, view, allowed, running_here, answer)}</div>',
        '<div class="layout"><section>',
        f'<h2>Timeline</h2><div data-live="timeline">{_timeline(view, allowed)}</div>',
        "</section><section>",
        f'<h2>Graph</h2><div data-live="graph">{_graph(graph, view)}</div>',
        f'<h2>Cost by role</h2><div data-live="ledger">{_ledger(view)}</div>',
        "</section></div>",
    ]
    return page(
        f"thread {row.id}",
        "".join(body),
        where=where,
        feed=f"/threads/{row.id}/events",
        seq=str(row.seq),
    )


def _outcome(
    row: ThreadRow,
    view: ThreadView,
    allowed: Allowed,
    running_here: bool,
    answer: AnswerState | None,
) -> str:
    state = view.state
    out: list[str] = []
    if state.ending is not None:
        failure = " (failure)" if state.status == ThreadStatus.FAILED else ""
        out.append(
            f'<div class="banner ending" data-ending="{esc(state.ending)}">'
            f"<strong>ending: {esc(state.ending)}{failure}</strong>"
            f"{pre(state.final or '', 'final')}"
        )
        if state.recovery:
            out.append(f"<p><strong>recovery:</strong> {esc(state.recovery)}</p>")
        out.append("</div>")
    elif state.status == ThreadStatus.RUNNING:
        who = "this server runs it" if running_here else "another process runs it, or it died"
        out.append(
            f'<div class="banner info">running ({esc(who)}); the page follows it live. '
            "A thread whose process died continues with resume.</div>"
        )
    elif state.status != ThreadStatus.NEW:
        out.append(
            f'<div class="banner stopped"><strong>{esc(str(state.status))}</strong>'
            f"{pre(state.reason or '', 'reason')}</div>"
        )
    for asked in allowed.answers:
        question = question_for(allowed, asked.top_step)
        if question is not None:
            mine = answer if answer is not None and answer.step in (None, question.step) else None
            out.append(_question(question, mine))
    if state.status == ThreadStatus.WAITING and not allowed.answers:
        out.append(f'<p class="note" data-answer="none">{esc(allowed.why_no_answer)}</p>')
    out.append(_actions(row, allowed, running_here))
    return "".join(out)


def _question(question: Question, answer: AnswerState | None) -> str:
    role = question.role
    about = f": {role.description}" if role is not None and role.description else ""
    return (
        f'<div class="card question" data-step="{question.step}"><h2>A person must answer '
        f"(step {question.step}, as <code>{esc(question.role_name)}</code>{esc(about)})</h2>"
        f"{pre(question.prompt, 'prompt')}"
        + answer_forms(
            question,
            errors=answer.errors if answer else (),
            status=answer.status if answer else None,
            typed=answer.typed if answer else None,
        )
        + "</div>"
    )


def _actions(row: ThreadRow, allowed: Allowed, running_here: bool) -> str:
    """Resume and cancel, offered exactly when `allowed()` says the moderator would take
    them; a thread this server runs is left to it."""
    buttons: list[str] = []
    resume = allowed.resume
    if resume.ok and not running_here:
        hint = "required: the graph's next step reads it" if resume.needs_message else "optional"
        required = " required" if resume.needs_message else ""
        buttons.append(
            f'<form method="post" action="/threads/{esc(row.id)}/resume" class="resume">'
            '<textarea name="message" aria-label="message for the next step" '
            f'placeholder="message for the next step ({hint})"{required}></textarea>'
            '<button type="submit" class="primary">Resume</button></form>'
        )
    elif not resume.ok and allowed.status in (ThreadStatus.COMPLETED, ThreadStatus.FAILED):
        buttons.append(f'<p class="note" data-resume="refused">{esc(resume.why)}</p>')
    if allowed.cancel.ok:
        buttons.append(
            f'<form method="post" action="/threads/{esc(row.id)}/cancel" class="cancel" '
            'data-confirm="Cancel this thread for good? It cannot be resumed afterwards.">'
            '<button type="submit" class="danger">Cancel thread</button></form>'
        )
    return f'<div class="actions">{"".join(buttons)}</div>' if buttons else ""


def _timeline(view: ThreadView, allowed: Allowed) -> str:
    if not view.steps:
        return '<p class="note">no step yet</p>'
    return "".join(_step(s, view, allowed) for s in view.steps)


def _step(s: StepView, view: ThreadView, allowed: Allowed) -> str:
    running = not s.committed and view.state.flight(s.step) is not None
    status = (
        f'<span class="status">→ {esc(s.status)}</span>'
        if s.status
        else f'<span class="status open">{"in progress" if running else "not committed"}</span>'
    )
    facts = step_facts(StepFigures.of_step(s), detail=True)
    edge = f"from {s.source} via {s.edge_status}" if s.source else ""
    if s.branch is not None:
        edge += f" · branch {s.branch + 1}"
    elif s.join:
        edge += " · join"
    classes = "card step" + (" rejected-some" if s.all_attempts else "")
    parts = [
        f'<details class="{classes}" id="step-{s.step}" data-step="{s.step}" '
        f'data-role="{esc(s.role)}" data-status="{esc(s.status or "")}"'
        f"{' open' if running or not s.committed else ''}>",
        f'<summary><span class="head">#{s.step} {esc(s.role)} {status}</span> '
        f'<span class="edge">{esc(edge)}</span><div class="facts">'
        + "".join(f"<span>{esc(f)}</span>" for f in facts)
        + "</div></summary>",
        f"<details><summary>prompt</summary>{pre(s.prompt, 'prompt')}</details>",
    ]
    if s.location:
        parts.append(f"<p>in <code>{esc(s.location)}</code></p>")
    if s.child:  # a subgraph role's step: its child thread has a page of its own
        parts.append(f'<p>child thread <a href="/threads/{esc(s.child)}">{esc(s.child)}</a></p>')
    fields = {k: v for k, v in s.frontmatter.items() if k != "$status"}
    if fields:
        parts.append(_fields(fields))
    if s.body.strip():
        parts.append(f"<details open><summary>body</summary>{pre(s.body, 'body')}</details>")
    for i, attempt in enumerate(s.all_attempts, 1):
        run = f" (run {attempt.run})" if s.runs > 1 else ""
        parts.append(
            f'<div class="attempt" data-attempt="{i}"><strong>reply {i} rejected{run}</strong>'
            "<ul>" + "".join(f"<li>{esc(e)}</li>" for e in attempt.errors) + "</ul>"
            f"<details><summary>the rejected reply</summary>{pre(attempt.reply)}</details></div>"
        )
    parts += [f'<p class="note">{esc(note)}</p>' for note in s.notes]
    if forkable(allowed, s.step):
        parts.append(fork_link(allowed.thread_id, s.step))
    parts.append("</details>")
    return "".join(parts)


def _fields(values: dict[str, object]) -> str:
    rows = "".join(
        f'<tr data-field="{esc(k)}"><td>{esc(k)}</td><td>{_value(v)}</td></tr>'
        for k, v in values.items()
    )
    return f'<table class="fields">{rows}</table>'


def _value(value: object) -> str:
    text = value_text(value)
    return pre(text) if "\n" in text or len(text) > 120 else esc(text)


def _graph(graph: Graph | None, view: ThreadView) -> str:
    if graph is None:
        return '<p class="note">the graph file cannot be read, and no copy of it was kept</p>'
    visits = Counter(s.role for s in view.steps)
    in_flight = view.state.in_flight
    taken = Taken.from_edges(view.edges())
    return to_svg(graph, taken, visits=visits, current=in_flight.role if in_flight else None)


def _ledger(view: ThreadView) -> str:
    book = ledger(view.steps)
    if not book:
        return '<p class="note">nothing spent yet</p>'
    rows = "".join(
        f"<tr><td>{esc(role)}</td><td class='num'>{e['steps']}</td>"
        f"<td class='num'>{sum(int(e[k]) for k in e if k.endswith('tokens')):,}</td>"
        f"<td class='num'>{cost(e['cost_usd'])}</td></tr>"
        for role, e in sorted(book.items(), key=lambda kv: -kv[1]["cost_usd"])
    )
    return (
        '<table class="threads"><thead><tr><th>role</th><th class="num">steps</th>'
        f'<th class="num">tokens</th><th class="num">cost</th></tr></thead>{rows}</table>'
    )
