"""Recordings (docs/format.md section 8): a thread's replies, to replay and to test routing against.

A recording lists, per committed step, the role, the rendered prompt, the accepted reply
verbatim, the rejected attempts with their errors, the token usage and the model that answered
(`PROVIDER:MODEL` beyond Anthropic's, so a replay names it too); and, for a thread that
was continued after reaching an ending (`$START.resume`), where: after which step, from which
ending, with which message (`resumed`), so a replay resumes there too. Replaying feeds step N's
replies when the engine asks for step N; when the graph now routes elsewhere, or a recorded reply
no longer satisfies the schema, the replay actor raises `ReplayDivergence` (the thread suspends
with that message) instead of crashing.

A recording is an untrusted file (it comes with a repository, a bug report, a pull request), so
it is read with the graph loader's limits (definition/yamlpos.py: aliases, nesting, values; `yaml-limit`)
and a size cap: an alias bomb is refused in milliseconds instead of taking gigabytes, and a child
that is the recording itself or one of its ancestors is refused, naming the file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..core.events import Event, StepCommitted, ThreadCompleted, ThreadResumed
from ..core.steps import thread_view
from ..definition.yamlpos import YamlSyntaxError, load_yaml
from ..errors import InputError
from ..views.plural import plural
from .base import ActorError, ActReply, ActRequest, Usage

RECORDING_MAX_BYTES = 100_000_000  # a recording holds whole replies: far more than a graph file

RECORDING_VERSION = 1
RECORDING_SUFFIXES = (".yaml", ".yml")


def recordings_under(folder: Path) -> list[Path]:
    """Every `*.yaml`/`*.yml` file under `folder`, sorted; hidden files and folders skipped."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.suffix in RECORDING_SUFFIXES
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


@dataclass(frozen=True)
class RecordedAttempt:
    output: str
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecordedStep:
    role: str
    output: str
    prompt: str = ""
    attempts: tuple[RecordedAttempt, ...] = ()
    usage: dict[str, int] = field(default_factory=dict)
    duration_s: float = 0.0  # how long the accepted reply took (0: not recorded)
    model: str | None = None  # the model that answered, `PROVIDER:MODEL` beyond Anthropic's
    child: Recording | None = None  # a subgraph role's step: its child thread's recording


@dataclass(frozen=True)
class RecordedResume:
    """The recorded thread reached an ending after step `after` and was continued from there,
    through `$START.resume`, with `message`."""

    after: int
    ending: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class Recording:
    graph: str
    steps: tuple[RecordedStep, ...]
    graph_hash: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    state: str | None = None  # the recorded thread's final state
    final: str | None = None
    ending: str | None = None  # the ending the recorded thread reached (section 12)
    recovery: str | None = None  # that ending's rendered `recovery`
    path: str | None = None  # the file it was loaded from
    resumed: tuple[RecordedResume, ...] = ()  # where the thread continued after an ending
    forked_from: dict[str, Any] | None = None  # a fork's origin: {thread, step} (section 20)

    def resume_at(self, steps: int, ending: str | None) -> RecordedResume | None:
        """The recorded resume of a replay that reached an ending after `steps` committed steps
        (the recorded thread ended there too, and its user continued it), or None."""
        if ending is None:
            return None
        return next((r for r in self.resumed if r.after == steps), None)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "recording": RECORDING_VERSION,
            "graph": self.graph,
            "graph_hash": self.graph_hash,
            "inputs": self.inputs,
        }
        if self.state is not None:
            data["state"] = self.state
        if self.final is not None:
            data["final"] = self.final
        if self.ending is not None:
            data["ending"] = self.ending
        if self.recovery is not None:
            data["recovery"] = self.recovery
        if self.resumed:
            data["resumed"] = [_resume_dict(r) for r in self.resumed]
        if self.forked_from is not None:
            data["forked_from"] = dict(self.forked_from)
        data["steps"] = [_step_dict(s) for s in self.steps]
        return data

    def child_of(self, thread_id: str) -> Recording | None:
        """The recording of a thread by its id: this one, or a child's (`ROOT.STEP.STEP…`)."""
        recording: Recording | None = self
        for part in thread_id.split(".")[1:]:
            if recording is None or not part.isdigit() or int(part) > len(recording.steps):
                return None
            recording = recording.steps[int(part) - 1].child
        return recording

    def dump(self) -> str:
        return yaml.dump(
            self.to_dict(), Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100
        )


def _resume_dict(r: RecordedResume) -> dict[str, Any]:
    data: dict[str, Any] = {"after": r.after}
    if r.ending is not None:
        data["ending"] = r.ending
    if r.message is not None:
        data["message"] = r.message
    return data


def resumes_of(events: list[Event]) -> tuple[RecordedResume, ...]:
    """Where a thread's log continues after an ending: a `ThreadResumed` after a
    `ThreadCompleted` (either outcome), with the number of steps committed by then."""
    found: list[RecordedResume] = []
    committed = 0
    ended: ThreadCompleted | None = None
    for event in events:
        if isinstance(event, StepCommitted):
            committed += 1
        elif isinstance(event, ThreadCompleted):
            ended = event
        elif isinstance(event, ThreadResumed) and ended is not None:
            found.append(RecordedResume(committed, ended.ending, event.message))
            ended = None
    return tuple(found)


def _step_dict(s: RecordedStep) -> dict[str, Any]:
    data: dict[str, Any] = {
        "role": s.role,
        "prompt": s.prompt,
        "output": s.output,
        "attempts": [{"output": a.output, "errors": list(a.errors)} for a in s.attempts],
        "usage": dict(s.usage),
        **({"duration_s": s.duration_s} if s.duration_s > 0 else {}),
        **({"model": s.model} if s.model else {}),
    }
    if s.child is not None:
        child = s.child.to_dict()
        del child["recording"]
        data["child"] = child
    return data


class RecordingError(InputError):
    """A recording file cannot be read; the message names the file and what is wrong."""


# libyaml's emitter when PyYAML has it: the pure-Python one scans every character of a scalar
# several times in Python code, which took 30 s for a thread with a 5 MB reply (0.15 s in C).
# Both write the same YAML, which `load_recording` reads back to the same strings.
_SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _BlockDumper(_SafeDumper):  # type: ignore[valid-type,misc]
    """Multi-line strings as `|` blocks, so recorded replies read as they were written."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str_representer)


def recording_from_events(
    events: list[Event], children: Callable[[str], list[Event]] | None = None
) -> Recording:
    """Build a recording from a thread's event log (the `threads export` format); `children`
    gives the log of a subgraph step's child thread, whose steps the recording then holds."""
    view = thread_view(events)
    state = view.state
    steps = tuple(
        RecordedStep(
            role=s.role,
            output=s.reply,
            prompt=s.prompt,
            attempts=tuple(RecordedAttempt(a.reply, a.errors) for a in s.attempts),
            usage=dict(s.usage),
            duration_s=round(s.duration_s, 3),
            model=s.model,
            child=recording_from_events(children(s.child), children)
            if s.child is not None and children is not None
            else None,
        )
        for s in view.committed
    )
    return Recording(
        graph=state.graph,
        steps=steps,
        graph_hash=state.graph_hash,
        inputs=dict(state.inputs),
        state=str(state.status),
        final=state.final,
        ending=state.ending,
        recovery=state.recovery,
        resumed=resumes_of(events),
        forked_from=dict(state.forked_from) if state.forked_from else None,
    )


def load_recording(path: str | Path) -> Recording:
    """Read a recording file. Raises RecordingError with the file and the problem."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > RECORDING_MAX_BYTES:  # refused before it is read
            raise RecordingError(
                f"{p}: refused (yaml-limit): the file has {size:,} bytes, more than the {RECORDING_MAX_BYTES:,} a "
                "recording may have"
            )
        data, _ = load_yaml(p.read_text(encoding="utf-8-sig"), str(p))
    except OSError as exc:
        raise RecordingError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise RecordingError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except YamlSyntaxError as exc:
        what = "refused (yaml-limit)" if exc.code == "yaml-limit" else "not valid YAML"
        raise RecordingError(
            f"{p}: {what}: line {exc.line}, column {exc.column}: {exc.message}"
        ) from None
    return parse_recording(data, str(p))


def parse_recording(
    data: Any, where: str = "<recording>", _within: tuple[int, ...] = ()
) -> Recording:
    """A recording from its data; `_within` holds the ids of the recordings it is a child of,
    so that data whose child is itself (or an ancestor: YAML can say so with an alias, and data
    built in Python can hold a cycle) is refused instead of recursing forever."""
    if id(data) in _within:
        raise RecordingError(
            f"{where}: the child is the recording itself or one that contains it; a recording "
            "cannot be its own child"
        )
    if not isinstance(data, dict):
        raise RecordingError(f"{where}: a recording must be a YAML mapping")
    version = data.get("recording", RECORDING_VERSION)
    if version != RECORDING_VERSION:
        raise RecordingError(
            f"{where}: recording version {version!r} is not supported (expected {RECORDING_VERSION})"
        )
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list):
        raise RecordingError(f"{where}: `steps` must be a list")
    steps = []
    for i, raw in enumerate(raw_steps, 1):
        if not isinstance(raw, dict) or not isinstance(raw.get("role"), str):
            raise RecordingError(f"{where}: step {i} needs a `role`")
        if not isinstance(raw.get("output"), str):
            raise RecordingError(f"{where}: step {i} ({raw['role']}) needs an `output` text")
        recorded_attempts = []
        for j, att in enumerate(raw.get("attempts") or [], 1):
            if not isinstance(att, dict) or not isinstance(att.get("output"), str):
                raise RecordingError(f"{where}: step {i} attempt {j} needs an `output` text")
            recorded_attempts.append(
                RecordedAttempt(att["output"], tuple(str(e) for e in att.get("errors") or []))
            )
        usage: dict[str, Any] = raw["usage"] if isinstance(raw.get("usage"), dict) else {}
        took = raw.get("duration_s", 0)
        if isinstance(took, bool) or not isinstance(took, int | float) or took < 0:
            raise RecordingError(
                f"{where}: step {i} ({raw['role']}): `duration_s` must be a number of seconds"
            )
        steps.append(
            RecordedStep(
                role=raw["role"],
                output=raw["output"],
                prompt=str(raw.get("prompt") or ""),
                attempts=tuple(recorded_attempts),
                usage={k: int(v) for k, v in usage.items() if isinstance(v, int)},
                duration_s=float(took),
                model=raw["model"] if isinstance(raw.get("model"), str) else None,
                child=parse_recording(
                    raw["child"], f"{where}: step {i} (child)", (*_within, id(data))
                )
                if raw.get("child") is not None
                else None,
            )
        )
    inputs: dict[str, Any] = data["inputs"] if isinstance(data.get("inputs"), dict) else {}
    return Recording(
        graph=str(data.get("graph") or ""),
        steps=tuple(steps),
        graph_hash=data.get("graph_hash") if isinstance(data.get("graph_hash"), str) else None,
        inputs=dict(inputs),
        state=data.get("state") if isinstance(data.get("state"), str) else None,
        final=data.get("final") if isinstance(data.get("final"), str) else None,
        ending=data.get("ending") if isinstance(data.get("ending"), str) else None,
        recovery=data.get("recovery") if isinstance(data.get("recovery"), str) else None,
        path=where,
        resumed=_parse_resumed(data.get("resumed"), len(steps), where),
        forked_from=_forked_from(data.get("forked_from")),
    )


def _forked_from(raw: Any) -> dict[str, Any] | None:
    """`forked_from:` as {thread, step}, or None (anything else is not a fork's lineage)."""
    if not isinstance(raw, dict):
        return None
    thread, step = raw.get("thread"), raw.get("step")
    if not isinstance(thread, str) or isinstance(step, bool) or not isinstance(step, int):
        return None
    return {"thread": thread, "step": step}


def _parse_resumed(raw: Any, steps: int, where: str) -> tuple[RecordedResume, ...]:
    """`resumed:` (absent in most recordings): a list of {after, ending, message}, in step
    order, each after a recorded step."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise RecordingError(f"{where}: `resumed` must be a list of {{after, ending, message}}")
    found: list[RecordedResume] = []
    for i, item in enumerate(raw, 1):
        after = item.get("after") if isinstance(item, dict) else None
        if isinstance(after, bool) or not isinstance(after, int) or not 0 <= after <= steps:
            raise RecordingError(
                f"{where}: resumed {i}: `after` must be a step number from 0 to {steps}"
            )
        if found and after < found[-1].after:
            raise RecordingError(f"{where}: resumed {i}: `after` goes back (resumes in order)")
        ending, message = item.get("ending"), item.get("message")
        found.append(
            RecordedResume(
                after,
                ending if isinstance(ending, str) else None,
                message if isinstance(message, str) else None,
            )
        )
    return tuple(found)


class ReplayDivergence(ActorError):
    """The graph now asks for something the recording does not hold."""

    def __init__(
        self,
        message: str,
        *,
        step: int,
        recorded_role: str | None,
        graph_role: str,
        errors: tuple[str, ...] = (),
    ):
        super().__init__(message, "replay-divergence")
        self.step = step
        self.recorded_role = recorded_role
        self.graph_role = graph_role
        self.errors = errors


PACE_TOKENS_PER_S = 60.0  # a recording without durations: output tokens at this rate...
PACE_LIMITS_S = (0.5, 10.0)  # ...within these bounds per step


def paced_seconds(step: RecordedStep) -> float:
    """How long `--pace` takes over a step: its recorded duration, else an estimate from its
    output tokens (recordings made before durations were recorded)."""
    if step.duration_s > 0:
        return step.duration_s
    low, high = PACE_LIMITS_S
    return min(high, max(low, step.usage.get("output_tokens", 0) / PACE_TOKENS_PER_S))


class ReplayActor:
    """Plays a recording: step N's rejected attempts, then its accepted output.

    With `pace` (1.0: as recorded, 2.0: twice as fast), the accepted output of each step comes
    after its recorded duration (`paced_seconds`), so a replay can be watched; the wait is an
    ordinary asyncio sleep, which Ctrl-C interrupts like any step.
    """

    kind = "replay"

    def __init__(
        self,
        recording: Recording,
        *,
        pace: float = 0.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        self.recording = recording
        self.pace = pace
        self.sleep = sleep

    async def play(self, request: ActRequest) -> ActReply:
        n = request.step
        recording = self.recording.child_of(request.thread_id)
        if recording is None:
            raise ReplayDivergence(
                f"thread {request.thread_id}: the recording holds no child thread for this "
                "subgraph step",
                step=n,
                recorded_role=None,
                graph_role=request.role_name,
            )
        steps = recording.steps
        if n > len(steps):
            raise ReplayDivergence(
                f"the recording has {plural(len(steps), 'step')}; the graph now asks for step {n} "
                f"(role '{request.role_name}')",
                step=n,
                recorded_role=None,
                graph_role=request.role_name,
            )
        recorded = steps[n - 1]
        if recorded.role != request.role_name:
            raise ReplayDivergence(
                f"step {n}: the recording holds role '{recorded.role}' but the graph now routes "
                f"to '{request.role_name}'",
                step=n,
                recorded_role=recorded.role,
                graph_role=request.role_name,
            )
        replies = [a.output for a in recorded.attempts] + [recorded.output]
        index = len(request.attempts)
        if index >= len(replies):
            errors = request.attempts[-1].errors if request.attempts else ()
            raise ReplayDivergence(
                f"step {n} ({recorded.role}): the recorded reply is now rejected: "
                + "; ".join(errors),
                step=n,
                recorded_role=recorded.role,
                graph_role=request.role_name,
                errors=tuple(errors),
            )
        usage = Usage.from_dict(recorded.usage) if index == len(replies) - 1 else Usage()
        if self.pace > 0 and index == len(replies) - 1:
            await self.sleep(paced_seconds(recorded) / self.pace)
        return ActReply(
            text=replies[index], message=request.prompt, usage=usage, model=recorded.model
        )
