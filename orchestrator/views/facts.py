"""A step summed up in short phrases: `8.2s`, `6,120 tok (1,024 cached)`, `$0.0231`,
`4 tool calls`, ... One wording for every face: the live terminal view and its plain lines
(`cli/live.py`, `cli/display.py`), the story (`views/story.py`) and the web page's timeline
(`web/thread_page.py`); each face only chooses how to join them.

The figures come from a step of the log's typed view (`core/steps.py`: rejected replies
included), or from the `StepCommitted` event the live view gets as a step ends (the accepted
reply's). A step not yet committed has no time to show. The model API's actor (the default)
is not named, since the model is; any other actor (a person, a command, Python, a replay) is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..core.events import StepCommitted
from ..core.ledger import money, tokens
from ..core.steps import StepView
from ..definition.actor_specs import ActorKind
from .plural import plural

# Actor names that go without saying: the model API's (and its class name in old logs).
UNSAID_ACTORS = frozenset({ActorKind.MODEL.value, "AnthropicActor"})


@dataclass(frozen=True)
class StepFigures:
    duration_s: float | None  # None while the step is not committed
    usage: Mapping[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    tool_calls: int = 0
    actor: str = ""
    model: str | None = None
    runs: int = 1
    rejected: int = 0

    @classmethod
    def of_step(cls, s: StepView) -> StepFigures:
        return cls(
            s.duration_s if s.committed else None,
            s.total_usage,
            s.total_cost_usd,
            s.tool_calls,
            s.actor,
            s.model,
            s.runs,
            len(s.all_attempts),
        )

    @classmethod
    def of_event(cls, e: StepCommitted) -> StepFigures:
        return cls(e.duration_s, e.usage, e.cost_usd, e.tool_calls, e.actor, e.model)


def step_facts(figures: StepFigures, *, detail: bool = False) -> list[str]:
    """Time, tokens (and how many were cache reads), cost, tool calls, the model (with its
    provider when not Anthropic's) and the actor when it is not the model API; with `detail`
    (the web page's card) also how often the step ran and how many of its replies were
    rejected."""
    f = figures
    facts = [f"{f.duration_s:.1f}s"] if f.duration_s is not None else []
    if total := tokens(f.usage):
        cached = f.usage.get("cache_read_input_tokens", 0)
        facts.append(f"{total:,} tok" + (f" ({cached:,} cached)" if cached else ""))
    if f.cost_usd:
        facts.append(money(f.cost_usd))
    if f.tool_calls:
        facts.append(plural(f.tool_calls, "tool call"))
    if f.model:
        facts.append(f.model)
    if f.actor and f.actor not in UNSAID_ACTORS:
        facts.append(f.actor)
    if detail and f.runs > 1:
        facts.append(f"ran {plural(f.runs, 'time')}")
    if detail and f.rejected:
        facts.append(plural(f.rejected, "rejected reply", "rejected replies"))
    return facts
