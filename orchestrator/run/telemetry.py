"""OpenTelemetry traces of threads, following the GenAI semantic conventions (optional extra).

With `pip install '.[otel]'` and the standard variables set (`OTEL_TRACES_EXPORTER=
otlp` or `console`, or `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), each
advance of a thread is traced:

    invoke_workflow GRAPH             the thread's run in this process (gen_ai.workflow.name)
      invoke_agent ROLE               one per step run, repairs included (gen_ai.agent.name)
        chat MODEL                    one per model call: model, tokens, finish reason
        execute_tool TOOL             one per tool call: tool name and call id

Every span carries `gen_ai.conversation.id` = the thread id, and every span of one thread is in
one trace, whichever process ran it: the trace id is the thread id's 128 bits (a ULID), and each
run's `invoke_workflow` span hangs under one parent span id derived from the thread id, which is
never exported itself. A step span counts the step's tokens (rejected replies included: each is
an event `gen_ai.reply.rejected` with its errors) and ends with the status the role answered,
or with an error status when the thread suspended on it.

Spans are made from what the runner already reports: the events it appends (`RunOptions.
on_event`) and the actor's progress (`RunOptions.on_progress`: model and tool calls), so the
runner and the actors know nothing of OpenTelemetry. Without the variables nothing is imported;
with them but without the extra, a note says which extra to install. An application that set a
global SDK `TracerProvider` itself gets its spans there; otherwise one is made from the
variables.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from ..actors.progress import Progress, ProgressKind
from ..core.events import (
    AttemptRejected,
    HumanWaiting,
    StepCommitted,
    StepStarted,
    ThreadCancelled,
    ThreadCompleted,
    ThreadFailed,
    ThreadSuspended,
)
from ..core.ledger import TOKEN_KEYS
from ..core.state import ThreadState
from ..definition.models import Graph
from ..definition.providers import OTEL_NAMES, provider_of
from ..store.base import StoredEvent
from .options import RunOptions

log = logging.getLogger("orchestrator")
MISSING = (
    "OTEL_* variables are set but OpenTelemetry is not installed: "
    "pip install '.[otel]' in orchestrator's folder (no traces are sent)"
)
GRPC_MISSING = (
    "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the gRPC exporter: pip install "
    "opentelemetry-exporter-otlp-proto-grpc (no traces are sent until then)"
)
NAME = "orchestrator"
_provider: Any = None  # set by use_provider(), or made once from the variables
_warned = False
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def wanted() -> bool:
    """True when the standard variables ask for traces (or a provider was given)."""
    if _provider is not None:
        return True
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def use_provider(provider: Any) -> None:
    """Send the spans to this `TracerProvider` (tests, applications); None goes back to the
    variables."""
    global _provider
    _provider = provider


def _tracer() -> Any:
    global _provider, _warned
    try:
        # deferred: OpenTelemetry is an optional extra, loaded only when traces are asked for
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        if not _warned:
            log.warning(MISSING)
            _warned = True
        return None
    if _provider is None:
        current = trace.get_tracer_provider()
        _provider = current if isinstance(current, TracerProvider) else _from_variables()
    return _provider.get_tracer("orchestrator")


def _from_variables() -> Any:
    # deferred: as in _tracer
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over our default name: the SDK merges
    # the attributes given to `Resource.create` last, so ours is given only when they name none.
    named = "service.name" in OTELResourceDetector().detect().attributes
    provider = TracerProvider(resource=Resource.create({} if named else {"service.name": NAME}))
    names = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").lower().split(",")
    for name in (n.strip() for n in names):
        if name == "console":
            # stderr, never stdout: `run --json` writes its lines there for other programs
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        elif name == "otlp":
            exporter = _otlp_exporter()
            if exporter is not None:
                provider.add_span_processor(BatchSpanProcessor(exporter))
        elif name and name != "none":
            log.warning("OTEL_TRACES_EXPORTER=%s is not supported here (otlp, console)", name)
    return provider


def _otlp_exporter() -> Any:
    """The OTLP exporter of the protocol the variables name: HTTP (the extra's), or gRPC when
    its package is installed; None, with a warning, when it is not."""
    protocol = (
        (
            os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or "http/protobuf"
        )
        .strip()
        .lower()
    )
    if protocol == "grpc":
        try:
            # deferred: the gRPC exporter is not part of the extra; used when installed
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
                OTLPSpanExporter as GrpcExporter,
            )
        except ImportError:
            log.warning(GRPC_MISSING)
            return None
        return GrpcExporter()
    if protocol not in ("http/protobuf", "http"):
        log.warning(
            "OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported (http/protobuf, grpc)", protocol
        )
        return None
    # deferred: as in _tracer; the HTTP exporter comes with the otel extra
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def trace_ids(thread_id: str) -> tuple[int, int]:
    """(trace id, parent span id) of a thread: its ULID's 128 bits, else a hash of its id."""
    text = thread_id.upper()
    if len(text) == 26 and all(c in CROCKFORD for c in text):
        trace_id = 0
        for char in text:
            trace_id = trace_id * 32 + CROCKFORD.index(char)
        trace_id &= (1 << 128) - 1
    else:
        trace_id = int.from_bytes(hashlib.sha256(thread_id.encode()).digest()[:16], "big")
    span_id = int.from_bytes(hashlib.sha256(b"span:" + thread_id.encode()).digest()[:8], "big")
    return trace_id or 1, span_id or 1


@contextlib.contextmanager
def traced(graph: Graph, thread_id: str, options: RunOptions | None) -> Iterator[RunOptions]:
    """`options` with the thread's spans made from its events and progress, for one advance;
    the same options, untouched, when no traces are asked for."""
    options = options or RunOptions()
    tracer = _tracer() if wanted() else None
    if tracer is None:
        yield options
        return
    spans = ThreadSpans(tracer, graph, thread_id)
    outer_event, outer_progress = options.on_event, options.on_progress

    def on_event(stored: StoredEvent, state: ThreadState) -> None:
        spans.event(stored, state)
        if outer_event is not None:
            outer_event(stored, state)

    def on_progress(news: Progress) -> None:
        spans.progress(news)
        if outer_progress is not None:
            outer_progress(news)

    try:
        yield replace(options, on_event=on_event, on_progress=on_progress)
    finally:
        spans.close()


class ThreadSpans:
    """The spans of one advance of one thread, opened and closed as its events arrive."""

    def __init__(self, tracer: Any, graph: Graph, thread_id: str):
        # deferred: only made when traces are asked for (see traced)
        from opentelemetry import trace

        self.trace = trace
        self.tracer = tracer
        self.graph = graph
        self.thread_id = thread_id
        trace_id, span_id = trace_ids(thread_id)
        parent = trace.NonRecordingSpan(
            trace.SpanContext(trace_id, span_id, True, trace.TraceFlags(trace.TraceFlags.SAMPLED))
        )
        self.root = tracer.start_span(
            f"invoke_workflow {graph.name}",
            context=trace.set_span_in_context(parent),
            attributes={
                "gen_ai.operation.name": "invoke_workflow",
                "gen_ai.workflow.name": graph.name,
                "gen_ai.conversation.id": thread_id,
            },
        )
        self.step: Any = None  # the invoke_agent span of the step in flight
        self.step_number: int | None = None
        self.usage = dict.fromkeys(TOKEN_KEYS, 0)  # the step's, rejected replies included
        self.repairs = 0
        self.calls: dict[str, Any] = {}  # open chat and execute_tool spans, by key

    def _attrs(self, **more: Any) -> dict[str, Any]:
        return {"gen_ai.conversation.id": self.thread_id, **more}

    # ------------------------------------------------------------------ events

    def event(self, stored: StoredEvent, state: ThreadState) -> None:
        event = stored.event
        match event:
            case StepStarted():
                self._end_step(error="the step ran again before it ended")
                role = self.graph.roles.get(event.role)
                actor = role.kind.value if role is not None else ""
                self.step = self.tracer.start_span(
                    f"invoke_agent {event.role}",
                    context=self.trace.set_span_in_context(self.root),
                    attributes=self._attrs(
                        **{
                            "gen_ai.operation.name": "invoke_agent",
                            "gen_ai.agent.name": event.role,
                            "orchestrator.step": event.step,
                            "orchestrator.actor": actor,
                        },
                        **(
                            {"gen_ai.provider.name": "anthropic"}
                            if role is not None and role.is_model
                            else {}
                        ),
                    ),
                )
                self.step_number = event.step
                self.usage = dict.fromkeys(TOKEN_KEYS, 0)
                self.repairs = 0
            case AttemptRejected() if self.step is not None:
                self._count(event.usage)
                self.step.add_event("gen_ai.reply.rejected", {"errors": list(event.errors)})
                self.repairs += 1
                self.step.set_attribute("orchestrator.repairs", self.repairs)
            case StepCommitted() if self.step is not None:
                self._count(event.usage)
                self.step.set_attribute("orchestrator.status", event.status)
                if event.model:
                    self.step.set_attribute("gen_ai.request.model", event.model)
                    self.step.set_attribute("gen_ai.provider.name", _model_provider(event.model))
                self._end_step()
            case HumanWaiting() if self.step is not None:
                self.step.set_attribute("orchestrator.waiting", True)
                self._end_step()
            case ThreadSuspended():
                self._count(event.usage)
                self._end_step(error=f"suspended ({event.kind}): {event.reason}")
            case ThreadFailed() | ThreadCancelled():
                self._end_step(error=type(event).__name__)
            case ThreadCompleted():
                self.root.set_attribute("orchestrator.ending", event.ending)
        self.root.set_attribute("orchestrator.thread.state", str(state.status))
        self.root.set_attribute("orchestrator.thread.cost_usd", round(state.cost_usd, 6))

    def _count(self, usage: dict[str, int]) -> None:
        for key in TOKEN_KEYS:
            self.usage[key] += int(usage.get(key, 0))

    def _end_step(self, error: str | None = None) -> None:
        if self.step is None:
            return
        for span in self.calls.values():  # a call the failure cut short
            span.set_status(self.trace.Status(self.trace.StatusCode.ERROR, "cut short"))
            span.end()
        self.calls.clear()
        self.step.set_attributes(_usage_attributes(self.usage))
        if error is not None:
            self.step.set_status(self.trace.Status(self.trace.StatusCode.ERROR, error))
        self.step.end()
        self.step = self.step_number = None

    # ------------------------------------------------------------------ progress

    def progress(self, news: Progress) -> None:
        if self.step is None or news.step != self.step_number:
            return
        inside = self.trace.set_span_in_context(self.step)
        match news.kind:
            case ProgressKind.MODEL_CALL:
                self.calls["chat"] = self.tracer.start_span(
                    f"chat {news.model}",
                    context=inside,
                    kind=self.trace.SpanKind.CLIENT,
                    attributes=self._attrs(
                        **{
                            "gen_ai.operation.name": "chat",
                            "gen_ai.provider.name": _model_provider(news.model),
                            "gen_ai.request.model": news.model,
                        },
                        **_request_attributes(news),
                    ),
                )
            case ProgressKind.MODEL_DONE if "chat" in self.calls:
                span = self.calls.pop("chat")
                span.set_attributes(_usage_attributes(news.call or {}))
                span.set_attribute("gen_ai.response.model", news.model)
                span.set_attribute("gen_ai.response.id", news.call_id)
                span.set_attribute("gen_ai.response.finish_reasons", [news.finish])
                span.end()
            case ProgressKind.TOOL:
                self.calls[f"tool:{news.call_id}"] = self.tracer.start_span(
                    f"execute_tool {news.tool}",
                    context=inside,
                    attributes=self._attrs(
                        **{
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": news.tool,
                            "gen_ai.tool.call.id": news.call_id,
                            "gen_ai.tool.type": "function",
                        }
                    ),
                )
            case ProgressKind.TOOL_DONE if f"tool:{news.call_id}" in self.calls:
                span = self.calls.pop(f"tool:{news.call_id}")
                if news.error:
                    span.set_status(self.trace.Status(self.trace.StatusCode.ERROR, "tool error"))
                span.end()

    def close(self) -> None:
        self._end_step(error="the run stopped during the step")
        self.root.end()


def _request_attributes(news: Progress) -> dict[str, Any]:
    """A chat span's server and request settings (host and port only: never credentials)."""
    attributes: dict[str, Any] = {}
    if news.server:
        where = urlsplit(news.server if "//" in news.server else "https://" + news.server)
        if where.hostname:
            attributes["server.address"] = where.hostname
            attributes["server.port"] = where.port or (80 if where.scheme == "http" else 443)
    if news.max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = news.max_tokens
    if news.temperature is not None:
        attributes["gen_ai.request.temperature"] = news.temperature
    return attributes


def _usage_attributes(usage: Any) -> dict[str, int]:
    """The GenAI usage attributes: input tokens count cache reads and writes too."""
    get = usage.get
    cache_read = int(get("cache_read_input_tokens", 0))
    cache_write = int(get("cache_creation_input_tokens", 0))
    return {
        "gen_ai.usage.input_tokens": int(get("input_tokens", 0)) + cache_read + cache_write,
        "gen_ai.usage.output_tokens": int(get("output_tokens", 0)),
        "gen_ai.usage.cache_read.input_tokens": cache_read,
        "gen_ai.usage.cache_creation.input_tokens": cache_write,
    }


def _model_provider(model: str) -> str:
    """`gen_ai.provider.name` of a model (`PROVIDER:MODEL`, or Anthropic's bare ids)."""
    name = provider_of(model) or "anthropic"
    return OTEL_NAMES.get(name, name)
