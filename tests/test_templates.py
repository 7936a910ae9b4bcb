"""Strict template rendering (docs/format.md section 6) and the variables a template uses."""

from __future__ import annotations

import pytest

from orchestrator.core.templates import (
    TemplateEmptyError,
    TemplateSyntaxError,
    TemplateVarError,
    VarUse,
    check_syntax,
    render,
    render_prompt,
    variables,
)


def test_triple_braces_insert_text_as_it_is() -> None:
    assert render("Fix: {{{plan}}}", {"plan": "a < b & c"}) == "Fix: a < b & c"


def test_double_braces_html_escape() -> None:
    assert render("{{plan}}", {"plan": "a < b"}) == "a &lt; b"


def test_a_missing_name_raises_and_names_the_variable() -> None:
    with pytest.raises(TemplateVarError) as info:
        render("Fix {{{plna}}}", {"plan": "x"})
    assert info.value.name == "plna"


def test_a_missing_dotted_name_raises() -> None:
    with pytest.raises(TemplateVarError) as info:
        render("{{{$steps.planner.plan}}}", {"$steps": {"planner": {}}})
    assert info.value.name == "$steps.planner.plan"


def test_a_section_over_a_missing_name_raises() -> None:
    with pytest.raises(TemplateVarError):
        render("{{#note}}x{{/note}}", {})


def test_null_renders_empty_and_drives_sections() -> None:
    data = {"note": None}
    assert render("[{{{note}}}]", data) == "[]"
    assert render("{{#note}}Note: {{{note}}}{{/note}}{{^note}}none{{/note}}", data) == "none"
    assert render("{{#note}}Note: {{{note}}}{{/note}}", {"note": "hi"}) == "Note: hi"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (["a", "b"], '["a", "b"]'),
        ({"k": [1, True, None]}, '{"k": [1, true, null]}'),
        ([], "[]"),
        ({"é": "ü"}, '{"é": "ü"}'),
    ],
)
def test_lists_and_mappings_render_as_json(value: object, text: str) -> None:
    assert render("{{{v}}}", {"v": value}) == text


def test_booleans_render_as_json_and_still_drive_sections() -> None:
    assert render("{{{ok}}}/{{{no}}}", {"ok": True, "no": False}) == "true/false"
    assert (
        render("{{#ok}}yes{{/ok}}{{#no}}never{{/no}}{{^no}}not{{/no}}", {"ok": True, "no": False})
        == "yesnot"
    )


def test_sections_iterate_lists_of_mappings() -> None:
    data = {"files": [{"path": "a.py"}, {"path": "b.py"}], "repo": "r"}
    assert render("{{#files}}{{{repo}}}/{{{path}}} {{/files}}", data) == "r/a.py r/b.py "


def test_dotted_names_reach_into_mappings() -> None:
    data = {"$steps": {"planner": {"plan": "P", "$body": "B"}}, "$thread": {"step": 3}}
    text = "{{{$steps.planner.plan}}} {{{$steps.planner.$body}}} {{$thread.step}}"
    assert render(text, data) == "P B 3"


@pytest.mark.parametrize(
    ("template", "line"),
    [
        ("{{#a}}", 1),
        ("ok\nok\n{{{x}}", 3),
        ("{{> partial}}", 1),
        ("a\n{{}}", 2),
        ("{{#a}}{{/b}}", 1),
    ],
)
def test_syntax_errors_raise_with_a_line(template: str, line: int) -> None:
    with pytest.raises(TemplateSyntaxError) as info:
        render(template, {"a": 1, "x": 1})
    assert info.value.line == line
    assert str(info.value).startswith(f"line {line}:")
    with pytest.raises(TemplateSyntaxError):
        check_syntax(template)


def test_render_prompt_rejects_an_empty_result() -> None:
    assert render_prompt("Hi {{{who}}}", {"who": "you"}) == "Hi you"
    with pytest.raises(TemplateEmptyError):
        render_prompt("{{#x}}text{{/x}}  ", {"x": None})


def test_variables_lists_each_tag_with_kind_and_sections() -> None:
    uses = variables("{{a}} {{{b}}} {{&c}} {{#d}}{{^e}}{{f}}{{/e}}{{/d}} {{! note }}")
    assert uses == [
        VarUse("a", "var", 1, ()),
        VarUse("b", "raw", 1, ()),
        VarUse("c", "raw", 1, ()),
        VarUse("d", "section", 1, ()),
        VarUse("e", "inverted", 1, ("d",)),
        VarUse("f", "var", 1, ("d", "e")),
    ]
    assert uses[0].escaped and not uses[1].escaped


def test_variables_follow_changed_delimiters() -> None:
    assert [u.name for u in variables("{{=<% %>=}}<% a %> {{b}}")] == ["a"]
