"""The extract corpus: messy model replies (tests/replies/*.txt) and the outcome each must have.

Every case in tests/replies/cases.yaml is either recovered exactly (status, frontmatter, body)
or refused with errors that name what is wrong. The reply files are read as bytes and decoded
without newline translation, so CRLF and BOM cases reach the pipeline as a model sent them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import Graph
from orchestrator.extract import ExtractError, extract_output

REPLIES = Path(__file__).parent / "replies"
CASES: list[dict[str, Any]] = yaml.safe_load((REPLIES / "cases.yaml").read_text("utf-8"))


@pytest.fixture(scope="module")
def graph() -> Graph:
    return load_graph(REPLIES / "graph.yaml")


def _reply(case: dict[str, Any]) -> str:
    return (REPLIES / case["file"]).read_bytes().decode("utf-8")


def test_corpus_is_big_and_covers_both_outcomes() -> None:
    recovered = [c for c in CASES if "status" in c]
    refused = [c for c in CASES if "errors" in c]
    assert len(CASES) >= 40
    assert len(recovered) + len(refused) == len(CASES)
    assert len(recovered) >= 20 and len(refused) >= 20
    assert {c["file"] for c in CASES} == {p.name for p in REPLIES.glob("*.txt")}


def test_corpus_keeps_its_bytes() -> None:
    # Without `* -text` in .gitattributes a checkout could turn the CRLF cases into LF ones.
    assert b"\r\n" in (REPLIES / "ok-crlf.txt").read_bytes()
    assert (REPLIES / "ok-bom.txt").read_bytes().startswith(b"\xef\xbb\xbf")
    assert (REPLIES / ".gitattributes").read_text().split() == ["*", "-text"]


@pytest.mark.parametrize("case", [c for c in CASES if "status" in c], ids=lambda c: c["file"])
def test_recovered(case: dict[str, Any], graph: Graph) -> None:
    out = extract_output(_reply(case), graph.roles[case["role"]])
    assert out.status == case["status"]
    assert out.frontmatter == case["frontmatter"]
    # Types matter as much as values: 1 and True and "1" must not be confused.
    assert {k: type(v) for k, v in out.frontmatter.items()} == {
        k: type(v) for k, v in case["frontmatter"].items()
    }
    if "body" in case:
        assert out.body == case["body"]
    else:
        assert len(out.body) == case["body_length"]
        assert out.body.endswith(case["body_endswith"])


@pytest.mark.parametrize("case", [c for c in CASES if "errors" in c], ids=lambda c: c["file"])
def test_refused(case: dict[str, Any], graph: Graph) -> None:
    with pytest.raises(ExtractError) as info:
        extract_output(_reply(case), graph.roles[case["role"]])
    err = info.value
    text = str(err)
    for expected in case["errors"]:
        assert expected in text, f"{expected!r} not in:\n{text}"
    assert err.status == case.get("error_status")
    # Each error is one self-contained line: the CLI prints them one per line.
    assert err.errors and all(e.strip() and "\n" not in e for e in err.errors)
    assert "not valid under any of the given schemas" not in text
