"""The story of a thread, told from its events (`orchestrator threads show`).

Each step's role, status, key fields, rejected attempts, tokens, cost and time; interruptions
and resumes; the ledger per role; the final message, or why the thread stopped.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from .engine import (
    AttemptRejected,
    HumanWaiting,
    StepCommitted,
    StepStarted,
    ThreadResumed,
    ThreadSuspended,
    fold,
)
from .ledger import TOKEN_KEYS, money, tokens
from .store.base import StoredEvent, ThreadRow


@dataclass
class StepStory:
    step: int
    role: str
    prompt: str = ""
    status: str | None = None
    frontmatter: dict[str, Any] = field(default_factory=dict)
    rejected: list[list[str]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    duration_s: float = 0.0
    model: str | None = None
    tool_calls: int = 0
    actor: str = ""
    notes: list[str] = field(default_factory=list)


def _add_usage(into: dict[str, int], usage: dict[str, int]) -> None:
    for key in TOKEN_KEYS:
        into[key] = into.get(key, 0) + int(usage.get(key, 0))


def build_steps(events: list[StoredEvent]) -> list[StepStory]:
    steps: dict[int, StepStory] = {}
    last: StepStory | None = None
    for stored in events:
        e = stored.event
        if isinstance(e, StepStarted):
            last = steps.setdefault(e.step, StepStory(e.step, e.role, e.prompt))
            last.prompt = e.prompt  # a step that ran again shows the prompt it ran with
        elif isinstance(e, AttemptRejected) and e.step in steps:
            s = steps[e.step]
            s.rejected.append(list(e.errors))
            _add_usage(s.usage, e.usage)
            s.cost_usd += e.cost_usd
        elif isinstance(e, StepCommitted):
            s = steps.setdefault(e.step, StepStory(e.step, e.role))
            s.status, s.frontmatter = e.status, dict(e.frontmatter)
            _add_usage(s.usage, e.usage)
            s.cost_usd += e.cost_usd
            s.duration_s, s.model, s.tool_calls, s.actor = (
                e.duration_s,
                e.model,
                e.tool_calls,
                e.actor,
            )
        elif isinstance(e, ThreadSuspended) and last is not None and last.status is None:
            last.notes.append(f"suspended: {e.reason}")
        elif isinstance(e, ThreadResumed) and last is not None and last.status is None:
            last.notes.append(
                "the process died during this step; it ran again on resume"
                if e.interrupted
                else "resumed" + (f" with message: {e.message}" if e.message else "")
            )
        elif isinstance(e, HumanWaiting) and e.step in steps:
            steps[e.step].notes.append("waited for a person")
    return [steps[k] for k in sorted(steps)]


def ledger(steps: list[StepStory]) -> dict[str, dict[str, Any]]:
    by_role: dict[str, dict[str, Any]] = {}
    for s in steps:
        entry = by_role.setdefault(
            s.role, {"steps": 0, "cost_usd": 0.0, **dict.fromkeys(TOKEN_KEYS, 0)}
        )
        entry["steps"] += 1
        entry["cost_usd"] += s.cost_usd
        for key in TOKEN_KEYS:
            entry[key] += s.usage.get(key, 0)
    return by_role


def _short(value: Any, width: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def story_text(row: ThreadRow, events: list[StoredEvent]) -> str:
    state = fold([s.event for s in events])
    steps = build_steps(events)
    total = sum(tokens(s.usage) for s in steps)
    lines = [
        f"thread {row.id} · {row.graph} · {state.status} · {len(state.steps)} steps · "
        f"{money(state.cost_usd)} · {total:,} tokens",
        f"workspace: {state.workspace}",
        f"started {_when(row.created)}, last event {_when(row.updated)}",
        "",
    ]
    for s in steps:
        outcome = f"→ {s.status}" if s.status else "(not committed)"
        facts = [f"{s.duration_s:.1f}s"] if s.status else []
        tok = tokens(s.usage)
        if tok:
            cached = s.usage.get("cache_read_input_tokens", 0)
            facts.append(f"{tok:,} tok" + (f" ({cached:,} cached)" if cached else ""))
        if s.cost_usd:
            facts.append(money(s.cost_usd))
        if s.tool_calls:
            facts.append(f"{s.tool_calls} tool calls")
        if s.actor and s.actor not in ("anthropic", "AnthropicActor"):
            facts.append(s.actor)
        lines.append(
            f"#{s.step:<3} {s.role} {outcome}" + (f"   {'  '.join(facts)}" if facts else "")
        )
        for key, value in list(s.frontmatter.items())[:6]:
            if key != "$status":
                lines.append(f"       {key}: {_short(value)}")
        for i, errors in enumerate(s.rejected, 1):
            lines.append(f"       ✗ reply {i} rejected: {_short('; '.join(errors), 140)}")
        for note in s.notes:
            lines.append(f"       · {note}")
    book = ledger(steps)
    if len(book) > 1 and state.cost_usd:
        lines += ["", "cost by role:"]
        for role, entry in sorted(book.items(), key=lambda kv: -kv[1]["cost_usd"]):
            lines.append(f"  {role:<20} {entry['steps']:>3} steps  {money(entry['cost_usd'])}")
    lines.append("")
    if state.status == "completed":
        lines.append("final: " + (state.final or ""))
    elif state.status in ("suspended", "waiting", "failed", "cancelled"):
        lines.append(f"{state.status}: {state.reason}")
        if state.status == "suspended":
            lines.append(f"continue with: orchestrator threads resume {row.id} [--message TEXT]")
        elif state.status == "waiting":
            lines.append(f"answer with: orchestrator threads answer {row.id} --status ...")
    elif state.status == "running":
        lines.append("running (or its process died; `threads resume` continues it)")
    return "\n".join(lines)


def story_json(row: ThreadRow, events: list[StoredEvent]) -> dict[str, Any]:
    state = fold([s.event for s in events])
    steps = build_steps(events)
    return {
        **row.to_dict(),
        "graph_hash": row.graph_hash,
        "inputs": state.inputs,
        "final": state.final,
        "steps": [s.__dict__ for s in steps],
        "ledger": ledger(steps),
        "events": [{"seq": s.seq, "at": s.at, **s.event.to_dict()} for s in events],
    }
