"""The fault matrix: provider failures through the real `anthropic` client and FakeAnthropic.

Every case runs a real three-role thread (planner -> developer -> reviewer) with the default
actor resolution (roles without `actor:` are played by the AnthropicActor built from
RunOptions), a durable SqliteStore, and a fake Messages API that answers each role with its one
good reply, except for the faults a case injects at one role:

- 429, 529 and 500 bursts shorter than the SDK's retries: the SDK absorbs them, the thread
  completes;
- the same bursts one longer than the retries, a slow response past the timeout, a stream cut
  in the middle of a message, malformed JSON and an empty reply: the thread suspends with a
  message that says what happened (and the kind a batch runner acts on); the fake is then
  healthy again and `advance(..., first=ResumeRequested())` completes the thread.

Whatever happens, the store's log must tell the same story: every committed step exactly once,
in order, with the expected role and the scripted good reply (nothing lost, nothing duplicated);
a committed step is never asked again (the fake counts the requests per role); the failed step
is started again only after the resume, with the same prompt.

The SDK's retries are kept fast: faults carry `retry-after: 0` (the fake sends 1 ms), timeouts
are short. No assertion depends on wall-clock time beyond "a 3 s delay exceeds a 1 s timeout".
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator import run_thread
from orchestrator.actors.anthropic import AnthropicActor
from orchestrator.core.events import (
    StepCommitted,
    StepStarted,
    ThreadCompleted,
    ThreadResumed,
    ThreadStarted,
    ThreadSuspended,
)
from orchestrator.core.outcomes import ResumeRequested
from orchestrator.definition.models import Graph
from orchestrator.run.options import ActorFor, RunOptions, ThreadResult
from orchestrator.run.runner import advance
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from tests.anthropic_fixtures import fake_server

GRAPH = """
name: fault-matrix
description: Plan, implement and review, through a flaky provider.
inputs:
  type: object
  properties:
    issue: { type: string }
  required: [issue]
roles:
  planner:
    description: Plans the fix
    goal: You plan fixes.
    frontmatter:
      type: object
      properties:
        $status: { enum: [ready] }
        plan: { type: string }
      required: [$status, plan]
  developer:
    description: Implements the plan
    goal: You implement plans.
    frontmatter:
      type: object
      properties:
        $status: { enum: [done] }
        summary: { type: string }
      required: [$status, summary]
  reviewer:
    description: Reviews the change
    goal: You review changes.
    frontmatter:
      type: object
      properties:
        $status: { enum: [approved] }
        comments: { type: string }
      required: [$status, comments]
graph:
  $START:
    _: { role: planner, prompt: "Plan a fix for: {{{$inputs.issue}}}" }
  planner:
    ready: { role: developer, prompt: "Implement: {{{plan}}}" }
  developer:
    done: { role: reviewer, prompt: "Review: {{{summary}}}" }
  reviewer:
    approved: { role: $END, prompt: "Fixed: {{{comments}}}" }
"""

ROLES = ("planner", "developer", "reviewer")
GOOD = {
    "planner": "---\n$status: ready\nplan: guard against an empty input\n---\nThe plan.",
    "developer": "---\n$status: done\nsummary: parse() returns [] on empty input\n---\nDone.",
    "reviewer": "---\n$status: approved\ncomments: looks right\n---\nApproved.",
}
FINAL = "Fixed: looks right"

RETRIES = 2  # the SDK's own retries in the HTTP-status cases: 3 attempts in all
TIMEOUT = 10.0  # seconds, for every case but the slow ones
SLOW_TIMEOUT = 1.0  # the slow cases: a reply that takes SLOW_DELAY seconds never arrives in time
SLOW_DELAY = 3.0


def role_of(body: dict[str, Any]) -> str:
    return str(body["system"][0]["text"].split("\n", 1)[0].removeprefix("# Role: "))


class Model:
    """The fake model: each role's good reply, after the faults queued for that role."""

    def __init__(self, faults: dict[str, list[FakeResponse]]):
        self.faults = {role: list(queued) for role, queued in faults.items()}
        self.calls: dict[str, int] = dict.fromkeys(ROLES, 0)
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> FakeResponse:
        role = role_of(body)
        with self._lock:
            self.calls[role] += 1
            queued = self.faults.get(role)
            if queued:
                return queued.pop(0)
        return FakeResponse.text(GOOD[role])

    @property
    def pending(self) -> int:
        with self._lock:
            return sum(len(q) for q in self.faults.values())

    def heal(self) -> None:
        with self._lock:
            self.faults.clear()


# --------------------------------------------------------------------------- the cases


def burst(status: int, times: int) -> Callable[[], list[FakeResponse]]:
    return lambda: [FakeResponse.error(status, retry_after=0) for _ in range(times)]


def slow(times: int) -> Callable[[], list[FakeResponse]]:
    # The right reply, but after the client gave up waiting for it.
    return lambda: [FakeResponse.text("---\n$status: late\n---\n", delay=SLOW_DELAY)] * times


def cut(times: int = 1) -> Callable[[], list[FakeResponse]]:
    return lambda: [FakeResponse.text(GOOD["planner"] * 4, fault="cut") for _ in range(times)]


def malformed() -> list[FakeResponse]:
    return [FakeResponse(fault="malformed")]


def empty() -> list[FakeResponse]:
    return [FakeResponse(content=[], fault="empty")]


@dataclass(frozen=True)
class Case:
    id: str
    faults: Callable[[], list[FakeResponse]]
    suspends: bool
    kind: str | None = None  # ThreadResult.kind and ThreadSuspended.kind when it suspends
    says: tuple[str, ...] = ()  # fragments of the suspension message
    at: str = "planner"  # the role the faults hit (planner: step 1, developer: step 2, ...)
    max_retries: int = RETRIES
    timeout: float = TIMEOUT
    stream: bool = True  # False: a non-streaming actor given through actor_for

    @property
    def step(self) -> int:
        return ROLES.index(self.at) + 1


CASES = [
    # HTTP status bursts: the SDK retries 429/5xx itself, honouring retry-after.
    Case("429-short", burst(429, RETRIES), suspends=False),
    Case(
        "429-long",
        burst(429, RETRIES + 1),
        suspends=True,
        kind="rate-limit",
        says=("Anthropic API rate limit (429) after 3 attempts", "per-minute rate limit"),
    ),
    Case("529-short", burst(529, RETRIES), suspends=False),
    Case(
        "529-long",
        burst(529, RETRIES + 1),
        suspends=True,
        kind="provider",
        says=("Anthropic API overloaded (529) after 3 attempts: Overloaded",),
    ),
    Case("500-short", burst(500, RETRIES), suspends=False),
    Case(
        "500-long",
        burst(500, RETRIES + 1),
        suspends=True,
        kind="provider",
        says=("Anthropic API internal server error (500) after 3 attempts",),
    ),
    # Slow responses: the SDK times out, retries once, then gives up.
    Case("slow-short", slow(1), suspends=False, max_retries=1, timeout=SLOW_TIMEOUT),
    Case(
        "slow-long",
        slow(2),
        suspends=True,
        kind="timeout",
        says=("Anthropic API timed out (no response within 1 s) after 2 attempts",),
        max_retries=1,
        timeout=SLOW_TIMEOUT,
    ),
    # Broken bodies: once a stream has begun the SDK does not retry it.
    Case(
        "stream-cut",
        cut(),
        suspends=True,
        kind="provider",
        says=("the connection to the Anthropic API broke off mid-response",),
    ),
    Case(
        "malformed-sse",
        malformed,
        suspends=True,
        kind="provider",
        says=("malformed response from the Anthropic API", "JSONDecodeError"),
    ),
    Case(
        "empty-reply",
        empty,
        suspends=True,
        kind="provider",
        says=("the Anthropic API returned an empty reply (stop_reason: end_turn)",),
    ),
    # The same faults in the middle of a thread, after step 1 committed.
    Case(
        "529-long-at-step-2",
        burst(529, RETRIES + 1),
        suspends=True,
        kind="provider",
        says=("overloaded (529)",),
        at="developer",
    ),
    Case(
        "429-long-at-step-3",
        burst(429, RETRIES + 1),
        suspends=True,
        kind="rate-limit",
        says=("rate limit (429)",),
        at="reviewer",
    ),
    Case(
        "stream-cut-at-step-2",
        cut(),
        suspends=True,
        kind="provider",
        says=("broke off mid-response",),
        at="developer",
    ),
    Case(
        "slow-long-at-step-2",
        slow(2),
        suspends=True,
        kind="timeout",
        says=("timed out",),
        at="developer",
        max_retries=1,
        timeout=SLOW_TIMEOUT,
    ),
    Case("500-short-at-step-3", burst(500, RETRIES), suspends=False, at="reviewer"),
    # Plain JSON (stream: false): a body cut short is a connection error, which the SDK retries.
    Case("json-cut-short", cut(1), suspends=False, stream=False),
    Case(
        "json-cut-long",
        cut(RETRIES + 1),
        suspends=True,
        kind="provider",
        says=("broke off mid-response after 3 attempts", "RemoteProtocolError"),
        stream=False,
    ),
    Case(
        "malformed-json",
        malformed,
        suspends=True,
        kind="provider",
        says=("malformed response from the Anthropic API", "JSONDecodeError"),
        stream=False,
    ),
    Case(
        "empty-json",
        empty,
        suspends=True,
        kind="provider",
        says=("empty reply",),
        stream=False,
        at="developer",
    ),
]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with fake_server(monkeypatch) as fake:
        yield fake


@pytest.fixture
def graph(make_graph: Callable[..., Graph]) -> Graph:
    return make_graph(GRAPH)


def actor_for_case(case: Case) -> ActorFor | None:
    """None: the runner's default resolution (AnthropicActor from RunOptions, streaming)."""
    if case.stream:
        return None
    actor = AnthropicActor(max_retries=case.max_retries, timeout=case.timeout, stream=False)
    return lambda name, role: actor


def expected_log(case: Case) -> list[str]:
    """The thread's whole story, one line per event."""
    log = ["started"]
    for n, role in enumerate(ROLES, 1):
        if case.suspends and n == case.step:
            log += [f"step {n} {role}", f"suspended at {n}: {case.kind}", "resumed"]
        log += [f"step {n} {role}", f"committed {n} {role}"]
    return [*log, "completed"]


def describe(store: SqliteStore, thread_id: str) -> list[str]:
    lines = []
    for stored in store.events(thread_id):
        match stored.event:
            case ThreadStarted():
                lines.append("started")
            case StepStarted(step=n, role=role):
                lines.append(f"step {n} {role}")
            case StepCommitted(step=n, role=role):
                lines.append(f"committed {n} {role}")
            case ThreadSuspended(step=n, kind=kind):
                lines.append(f"suspended at {n}: {kind}")
            case ThreadResumed():
                lines.append("resumed")
            case ThreadCompleted():
                lines.append("completed")
            case other:
                lines.append(type(other).__name__)
    return lines


def assert_log_intact(store_dir: Path, thread_id: str, case: Case) -> None:
    """Read the log back from disk, in a fresh connection, as a later process would."""
    store = SqliteStore(store_dir)
    try:
        events = store.events(thread_id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert describe(store, thread_id) == expected_log(case)
        commits = [e.event for e in events if isinstance(e.event, StepCommitted)]
        assert [(c.step, c.role, c.reply) for c in commits] == [
            (n, role, GOOD[role]) for n, role in enumerate(ROLES, 1)
        ]
        assert all(c.actor == "anthropic" for c in commits)
        # A step started twice (before and after the resume) was asked the same thing.
        prompts: dict[int, set[str]] = {}
        for e in events:
            if isinstance(e.event, StepStarted):
                prompts.setdefault(e.event.step, set()).add(e.event.prompt)
        assert all(len(p) == 1 for p in prompts.values()), prompts
        row = store.thread(thread_id)
        assert (row.state, row.steps, row.seq) == ("completed", len(ROLES), len(events))
    finally:
        store.close()


def assert_completed(result: ThreadResult) -> None:
    assert (result.state, result.final, result.kind) == ("completed", FINAL, None)
    assert result.path == [*ROLES, "$END"]
    assert result.steps == len(ROLES)


# --------------------------------------------------------------------------- the matrix


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fault_matrix(case: Case, server: FakeAnthropic, graph: Graph, tmp_path: Path) -> None:
    faults = case.faults()
    model = Model({case.at: faults})
    server.handler = model
    store_dir = tmp_path / "store"
    store = SqliteStore(store_dir)
    options = RunOptions(max_retries=case.max_retries, timeout=case.timeout)
    actor_for = actor_for_case(case)

    result = run_thread(
        graph,
        {"issue": "parse() crashes on empty input"},
        store=store,
        workspace=tmp_path,
        actor_for=actor_for,
        options=options,
    )
    assert model.pending == 0, "every scripted fault was served"

    if case.suspends:
        assert result.state == "suspended", result
        assert result.kind == case.kind
        assert result.reason is not None
        assert result.reason.startswith(f"step {case.step} ({case.at}): "), result.reason
        for fragment in case.says:
            assert fragment in result.reason, result.reason
        assert "Traceback" not in result.reason and "sk-test" not in result.reason
        # The steps before the fault are committed and stay so.
        assert result.steps == case.step - 1
        assert result.path == list(ROLES[: case.step - 1])
        last = store.events(result.thread_id)[-1].event
        assert isinstance(last, ThreadSuspended) and last.reason == result.reason

        model.heal()
        result = asyncio.run(
            advance(
                graph,
                store,
                result.thread_id,
                actor_for=actor_for,
                options=options,
                first=ResumeRequested(),
            )
        )

    assert_completed(result)
    store.close()
    assert_log_intact(store_dir, result.thread_id, case)
    # Nothing committed was asked again: only the faulty role saw more than one request.
    expected_calls = {role: 1 for role in ROLES}
    expected_calls[case.at] += len(faults)
    assert model.calls == expected_calls
