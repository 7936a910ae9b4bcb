"""The official Mustache spec suites through `render(..., strict=False)`, one test per case.

Partials are not part of the edge-prompt language (docs/format.md section 6): a template that uses
one is a syntax error. The two delimiter cases that exercise partials check exactly that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.core.templates import TemplateSyntaxError, render

SPEC = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "mustache-spec"
SUITES = ("interpolation", "sections", "inverted", "comments", "delimiters")


def _cases() -> list[Any]:
    if not SPEC.is_dir():
        return [pytest.param(None, id="spec-missing", marks=pytest.mark.skip(f"no {SPEC}"))]
    cases = []
    for suite in SUITES:
        for case in json.loads((SPEC / f"{suite}.json").read_text(encoding="utf-8"))["tests"]:
            cases.append(pytest.param(case, id=f"{suite}: {case['name']}"))
    return cases


@pytest.mark.parametrize("case", _cases())
def test_spec_case(case: dict[str, Any]) -> None:
    if "partials" in case:
        with pytest.raises(TemplateSyntaxError, match="partials"):
            render(case["template"], case["data"], strict=False)
        return
    assert render(case["template"], case["data"], strict=False) == case["expected"]


def test_every_suite_is_there() -> None:
    if not SPEC.is_dir():
        pytest.skip(f"no {SPEC}")
    assert all((SPEC / f"{suite}.json").is_file() for suite in SUITES)
