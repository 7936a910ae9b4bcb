"""The story of a thread, told from its events (`orchestrator threads show`).

Each step's role, status, key fields, rejected attempts, tokens, cost and time; interruptions
and resumes; the ledger per role; the final message, or why the thread stopped.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.events import BranchFailed, Event, ThreadResumed, ThreadStatus, ThreadSuspended
from ..core.ledger import TOKEN_KEYS, money
from ..core.steps import StepView, ThreadView, thread_view
from ..core.titles import one_line
from ..definition.providers import provider_of
from ..store.base import StoredEvent, ThreadRow
from .facts import StepFigures, step_facts
from .plural import noun, plural
from .summary import totals

if TYPE_CHECKING:
    from ..run.waiting import Question


def ledger(steps: tuple[StepView, ...]) -> dict[str, dict[str, Any]]:
    """Steps, dollars and tokens per role, rejected replies included."""
    by_role: dict[str, dict[str, Any]] = {}
    for s in steps:
        entry = by_role.setdefault(
            s.role, {"steps": 0, "cost_usd": 0.0, **dict.fromkeys(TOKEN_KEYS, 0)}
        )
        entry["steps"] += 1
        entry["cost_usd"] += s.total_cost_usd
        usage = s.total_usage
        for key in TOKEN_KEYS:
            entry[key] += usage[key]
    return by_role


def ledger_by_provider(steps: tuple[StepView, ...]) -> dict[str, dict[str, Any]]:
    """Steps and dollars per model provider (docs/models.md): of the steps a model answered."""
    book: dict[str, dict[str, Any]] = {}
    for s in steps:
        name = provider_of(s.model)
        if name is not None:
            entry = book.setdefault(name, {"steps": 0, "cost_usd": 0.0, "models": []})
            entry["steps"] += 1
            entry["cost_usd"] += s.total_cost_usd
            if s.model not in entry["models"]:
                entry["models"].append(s.model)
    return book


Children = Callable[[str], "list[StoredEvent] | None"]  # a subgraph child's log, if any


def step_dict(s: StepView, thread_id: str = "", children: Children | None = None) -> dict[str, Any]:
    """One step as `threads show --json` gives it; a subgraph step holds its child's steps."""
    data: dict[str, Any] = {
        "step": s.step,
        "role": s.role,
        "prompt": s.prompt,
        "status": s.status,
        "frontmatter": s.frontmatter,
        "rejected": [list(a.errors) for a in s.all_attempts],
        "usage": s.total_usage,
        "cost_usd": s.total_cost_usd,
        "duration_s": s.duration_s,
        "model": s.model,
        "provider": provider_of(s.model),
        "tool_calls": s.tool_calls,
        "actor": s.actor,
        "notes": list(s.notes),
    }
    if s.branch is not None:
        data["branch"] = s.branch
    if s.join:
        data["join"] = True
    child = _child(s, thread_id, children)
    if child is not None:
        child_id, events = child
        data["child"] = {
            "thread": child_id,
            "steps": [step_dict(c, child_id, children) for c in thread_view(events).steps],
        }
    return data


def _child(
    s: StepView, thread_id: str, children: Children | None
) -> tuple[str, list[Event]] | None:
    """A subgraph step's child thread and its log (also while the step is in flight)."""
    if children is None:
        return None
    child_id = s.child or f"{thread_id}.{s.step}"
    stored = children(child_id)
    return (child_id, [e.event for e in stored]) if stored is not None else None


def _short(value: Any, width: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


CUT_LINES = 40  # a long value in the text view: its first lines, and how to see the rest
CUT_CHARS = 4000


def cut(text: str, full: bool = False) -> tuple[str, str]:
    """A long text's head and a note of what was left out ('' when nothing was)."""
    if full:
        return text, ""
    lines = text.splitlines()
    head = "\n".join(lines[:CUT_LINES])
    if len(head) > CUT_CHARS:
        head = head[:CUT_CHARS].rstrip() + "…"
    if head == text or head == text.rstrip("\n"):
        return text, ""
    return head, f"{plural(len(lines), 'line')}, {plural(len(text), 'character')} in all"


def _block(label: str, text: str, full: bool, thread_id: str, indent: str = "") -> list[str]:
    head, note = cut(text, full)
    lines = [label + head.replace("\n", "\n" + indent)]
    if note:
        lines.append(
            f"{indent}[… cut: {note}; `orchestrator threads show {thread_id} --full` prints "
            "everything, as does --json]"
        )
    return lines


def shown_state(
    row: ThreadRow, status: ThreadStatus, reason: str | None
) -> tuple[ThreadStatus, str | None]:
    """The state `threads list` and `--json` show (the row's), where the row says the thread
    ended and its log does not: a Temporal workflow terminated, timed out or failed outside the
    engine (temporal/reading.py `row_of`). Otherwise the log's own."""
    if ThreadStatus(row.state).ended and not status.ended:
        return ThreadStatus(row.state), row.reason or reason
    return status, reason


def _traceback(events: list[StoredEvent], full: bool, thread_id: str) -> list[str]:
    """The tracebacks of the functions whose failures suspended the thread (Python actors',
    redacted when they were stored; a fan-out's failed branches each keep their own): whole
    with --full, else where to find them."""
    found: list[tuple[int | None, str]] = []
    for stored in reversed(events):
        event = stored.event
        if isinstance(event, ThreadResumed):
            break  # the tracebacks of this suspension only
        if isinstance(event, ThreadSuspended | BranchFailed) and event.detail:
            found.insert(0, (event.step, event.detail))
    if not found:
        return []
    if not full:
        return [f"traceback: `orchestrator threads show {thread_id} --full` prints it"]
    lines: list[str] = []
    for step, detail in found:
        lines.append("traceback:" if len(found) == 1 else f"traceback of step {step}:")
        lines += ["  " + line for line in detail.rstrip("\n").splitlines()]
    return lines


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def story_text(
    row: ThreadRow,
    events: list[StoredEvent],
    *,
    question: Question | None = None,
    full: bool = False,
    children: Children | None = None,
) -> str:
    """The story as text. Long values are cut (`full` keeps them whole); a waiting thread's
    `question` adds what it asks and how to answer it; `children` gives the logs of subgraph
    steps' child threads, whose steps are told indented under their step."""
    view = thread_view([s.event for s in events])
    state, steps = view.state, view.steps
    status, reason = shown_state(row, state.status, state.reason)
    spent = totals(view)
    lines = [
        f"thread {row.id} · {row.graph} · {status} · {spent.steps} · {spent.cost} · {spent.tokens}",
        f"workspace: {state.workspace}",
        f"started {_when(row.created)}, last event {_when(row.updated)}",
        "",
    ]
    # What it is for (docs/threads.md), made one line again: a store may be someone else's.
    if row.labels:
        labels = ", ".join(one_line(f"{k}={v}", 220) for k, v in row.labels.items())
        lines.insert(1, f"labels: {labels}")
    if row.title:
        lines.insert(1, f"title: {one_line(row.title)}")
    lines += _step_lines(steps, row.id, children, "")
    book = ledger(steps)
    if len(book) > 1 and state.cost_usd:
        lines += ["", "cost by role:"]
        for role, entry in sorted(book.items(), key=lambda kv: -kv[1]["cost_usd"]):
            n = int(entry["steps"])
            lines.append(f"  {role:<20} {n:>3} {noun(n, 'step'):<5}  {money(entry['cost_usd'])}")
    by_provider = ledger_by_provider(steps)
    if len(by_provider) > 1:
        lines += ["", "cost by provider:"]
        for name, entry in sorted(by_provider.items(), key=lambda kv: -kv[1]["cost_usd"]):
            n = int(entry["steps"])
            lines.append(
                f"  {name:<20} {n:>3} {noun(n, 'step'):<5}  {money(entry['cost_usd'])}  "
                + ", ".join(entry["models"])
            )
    lines.append("")
    if state.ending is not None:
        lines.append(f"ending: {state.ending}" + (" (failure)" if state.status == "failed" else ""))
        lines += _block("final: ", state.final or "", full, row.id)
        if state.recovery:
            lines.append("recovery: " + state.recovery)
    elif status != ThreadStatus.RUNNING:
        lines += _block(f"{status}: ", reason or "", full, row.id)
        if status == ThreadStatus.SUSPENDED:
            lines += _traceback(events, full, row.id)
            lines.append(f"continue with: orchestrator threads resume {row.id} [--message TEXT]")
        elif state.status == ThreadStatus.WAITING:
            lines += waiting_text(row.id, question, full)
    else:
        lines.append("running (or its process died; `threads resume` continues it)")
    return "\n".join(lines)


def _step_lines(
    steps: tuple[StepView, ...], thread_id: str, children: Children | None, indent: str
) -> list[str]:
    lines: list[str] = []
    for s in steps:
        outcome = f"→ {s.status}" if s.status else "(not committed)"
        facts = step_facts(StepFigures.of_step(s))
        kind = f" [branch {s.branch + 1}]" if s.branch is not None else " [join]" if s.join else ""
        lines.append(
            f"{indent}#{s.step:<3} {s.role}{kind} {outcome}"
            + (f"   {'  '.join(facts)}" if facts else "")
        )
        for key, value in list(s.frontmatter.items())[:6]:
            if key != "$status":
                lines.append(f"{indent}       {key}: {_short(value)}")
        for i, attempt in enumerate(s.all_attempts, 1):
            errors = _short("; ".join(attempt.errors), 140)
            lines.append(f"{indent}       ✗ reply {i} rejected: {errors}")
        for note in s.notes:
            lines.append(f"{indent}       · {note}")
        child = _child(s, thread_id, children)
        if child is not None:
            child_id, events = child
            view = thread_view(events)
            lines.append(f"{indent}       ↳ {child_id} · {view.state.graph} · {view.state.status}")
            lines += _step_lines(view.steps, child_id, children, indent + "       ")
    return lines


def waiting_text(thread_id: str, question: Question | None, full: bool = False) -> list[str]:
    """The question a waiting thread asks, and the `threads answer` commands that answer it."""
    interview = f"or run `orchestrator threads answer {thread_id}` in a terminal to be asked"
    if question is None:
        return [f"answer with: orchestrator threads answer {thread_id} --file REPLY.md", interview]
    role = question.role
    about = f": {role.description}" if role is not None and role.description else ""
    lines = ["", f"question (step {question.step}, answered as '{question.role_name}'{about}):"]
    lines += _block("  ", question.prompt, full, thread_id, indent="  ")
    if role is None:  # no answer is taken for it (J8); a resume decides the step again
        lines += [
            "",
            f"the graph has no role '{question.role_name}' any more; resume the thread to "
            "decide the step again:",
            f"  orchestrator threads resume {thread_id}",
        ]
        return lines
    lines += ["", "answer with" + (" one of:" if len(question.forms) > 1 else ":")]
    lines += [f"  {line}" for line in question.hints()]
    lines.append(interview + " for each field")
    return lines


def story_json(
    row: ThreadRow,
    events: list[StoredEvent],
    question: Question | None = None,
    children: Children | None = None,
) -> dict[str, Any]:
    view: ThreadView = thread_view([s.event for s in events])
    state, steps = view.state, view.steps
    extra = {"waiting": question.to_dict()} if question is not None else {}
    return {
        **row.to_dict(),
        "graph_hash": row.graph_hash,
        "inputs": state.inputs,
        "final": state.final,
        "ending": state.ending,
        "recovery": state.recovery,
        "steps": [step_dict(s, row.id, children) for s in steps],
        "ledger": ledger(steps),
        "ledger_by_provider": ledger_by_provider(steps),
        "events": [{"seq": s.seq, "at": s.at, **s.event.to_dict()} for s in events],
        **extra,
    }
