"""`$steps` left out of an edge's template context when no template of the edge reads it
(core/context.py `reads_steps`, core/templates.py `may_read`).

Differential: every template that `may_read` says does not read `$steps` renders the same (text,
or the same error) with and without it. Control: templates that do read it, even inside a section
or through `{{.}}`, are recognised, and rendering them without `$steps` does differ, so the
comparison would see a wrong answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.core.context import reads_steps
from orchestrator.core.templates import (
    TemplateEmptyError,
    TemplateSyntaxError,
    TemplateVarError,
    may_read,
    render_prompt,
)
from orchestrator.definition.models import Edge

CONTEXT: dict[str, Any] = {
    "title": "T",
    "score": 3,
    "items": [{"name": "a"}, {"name": "b"}],
    "$status": "draft",
    "$body": "body",
    "$inputs": {"topic": "x"},
    "$thread": {"id": "t1", "step": 4, "workspace": "."},
    "$steps": {"writer": {"title": "W", "$status": "draft", "$body": "wb"}},
}

NOT_READING = [
    "Review {{{title}}} ({{score}})",
    "{{$inputs.topic}} at step {{$thread.step}}",
    "{{#items}}{{name}},{{/items}}",
    "{{^missing}}none{{/missing}} {{$status}}",
    "{{missing}}",  # a strict miss: the same error either way
    "{{$stepsx}}",  # a different name that starts the same
]
READING = [
    "{{$steps.writer.title}}",
    "{{{$steps.writer.$body}}}",
    "{{#$steps.writer}}{{title}}{{/$steps.writer}}",
    "{{#items}}{{$steps.writer.title}}{{/items}}",
    "{{.}}",
    "{{#title}}{{.}}{{/title}}",  # any `.` counts as the whole context: unsure, so kept
    "{{#$steps}}x{{/$steps}}",
    "{{unclosed",  # a syntax error: unsure, so the whole context is kept
]


def outcome(template: str, context: dict[str, Any]) -> str:
    try:
        return render_prompt(template, context)
    except (TemplateEmptyError, TemplateSyntaxError, TemplateVarError) as exc:
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("template", NOT_READING)
def test_a_template_that_does_not_read_steps_renders_the_same_without(template: str) -> None:
    assert not may_read(template, "$steps")
    without = {k: v for k, v in CONTEXT.items() if k != "$steps"}
    assert outcome(template, without) == outcome(template, CONTEXT)


@pytest.mark.parametrize("template", READING)
def test_control_a_template_that_reads_steps_is_recognised(template: str) -> None:
    assert may_read(template, "$steps")


@pytest.mark.parametrize("template", READING[:4])
def test_control_leaving_steps_out_would_change_what_it_renders(template: str) -> None:
    without = {k: v for k, v in CONTEXT.items() if k != "$steps"}
    assert outcome(template, without) != outcome(template, CONTEXT)


def test_an_edge_reads_steps_through_any_of_its_templates() -> None:
    assert not reads_steps(Edge(role="reviewer", prompt="Review {{title}}"))
    assert reads_steps(Edge(role="reviewer", prompt="Review {{$steps.writer.title}}"))
    assert reads_steps(Edge(role="w", prompt="go", location="{{$steps.writer.title}}"))
    assert reads_steps(Edge(role="$END", prompt="done", recovery="{{$steps.a.b}}"))
    assert reads_steps(Edge(role="child", inputs={"task": "{{$steps.writer.$body}}"}))
