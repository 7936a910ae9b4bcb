"""Templates of text and names only are rendered without chevron's generic loop
(core/templates.py `_render_flat`): the output must be chevron's, byte for byte, for every kind
of value a context holds, and a miss must name the same variable. Each case is rendered both
ways; the control checks that the fast path is the one taken for flat templates, and not for
templates with sections.
"""

from __future__ import annotations

from typing import Any

import chevron_blue
import pytest

from orchestrator.core import templates
from orchestrator.core.templates import TemplateVarError, render

CONTEXT: dict[str, Any] = {
    "text": 'a <b> & "c" \' d',
    "empty": "",
    "zero": 0,
    "zero_float": 0.0,
    "number": 42,
    "real": 2.5,
    "yes": True,
    "no": False,
    "nothing": None,
    "items": [1, "two", None, True, {"k": "v"}],
    "none_list": [],
    "mapping": {"a": 1, "nested": {"b": "<x>", "flag": False}, "list": [1, 2]},
    "empty_mapping": {},
    "unicode": "naïve – 雪",
    "$steps": {"writer": {"title": "T", "$body": "body\nlines", "$status": "draft"}},
    "$inputs": {"topic": "events", "message": None},
}

FLAT = [
    "plain text, no tags",
    "{{text}}|{{{text}}}|{{&text}}",
    "{{empty}}[{{{empty}}}]",
    "{{zero}} {{zero_float}} {{number}} {{real}}",
    "{{yes}} {{no}} {{{yes}}} {{{no}}}",
    "[{{nothing}}][{{{nothing}}}]",
    "{{items}} {{{items}}} {{none_list}} {{{none_list}}}",
    "{{mapping}} {{{mapping}}} {{{empty_mapping}}}",
    "{{mapping.a}} {{mapping.nested.b}} {{{mapping.nested.b}}} {{mapping.nested.flag}}",
    "{{{mapping.nested}}} {{mapping.list}}",
    "{{unicode}} {{{unicode}}}",
    "{{{$steps.writer.title}}}: {{{$steps.writer.$body}}} ({{$steps.writer.$status}})",
    "{{{$inputs.topic}}}{{$inputs.message}}",
    "line one\n  {{{text}}}\nline three\n",
    "{{ text }} {{{ text }}}",
]


def chevron(template: str, data: dict[str, Any], strict: bool) -> str:
    """What the templates module rendered before the fast path: chevron, whole context."""
    try:
        out: str = chevron_blue.render(
            template, templates._wrap(data), on_missing_key="error" if strict else "ignore"
        )
        return out
    except KeyError as exc:
        text = str(exc.args[0])
        raise TemplateVarError(text.split("'")[1]) from None


@pytest.mark.parametrize("template", FLAT)
def test_a_flat_template_renders_as_chevron_does(template: str) -> None:
    assert templates._flat(template) is not None  # the fast path is taken
    assert render(template, CONTEXT) == chevron(template, CONTEXT, True)
    assert render(template, CONTEXT, strict=False) == chevron(template, CONTEXT, False)


@pytest.mark.parametrize(
    "template",
    ["{{missing}}", "x {{mapping.missing}}", "{{mapping.nested.b.c}}", "{{{$steps.reviewer.x}}}"],
)
def test_a_miss_names_the_same_variable(template: str) -> None:
    with pytest.raises(TemplateVarError) as fast:
        render(template, CONTEXT)
    with pytest.raises(TemplateVarError) as slow:
        chevron(template, CONTEXT, True)
    assert fast.value.name == slow.value.name
    assert render(template, CONTEXT, strict=False) == chevron(template, CONTEXT, False)


@pytest.mark.parametrize(
    "template",
    [
        "{{#items}}<{{.}}>{{/items}}",
        "{{^nothing}}none{{/nothing}}{{#yes}}{{text}}{{/yes}}",
        "{{#mapping}}{{a}}{{/mapping}}",
        "{{! a comment }}{{text}}",
        "{{=<% %>=}}<% text %>",
        "{{items.1}} {{mapping.list.0}} {{text.upper}}",  # chevron's list indexes, attributes
    ],
)
def test_control_other_templates_are_left_to_chevron(template: str) -> None:
    assert render(template, CONTEXT) == chevron(template, CONTEXT, True)


def test_control_sections_and_the_whole_context_are_not_flat() -> None:
    assert templates._flat("{{#items}}{{.}}{{/items}}") is None
    assert templates._flat("{{.}}") is None
    assert templates._flat("{{text}}") is not None
