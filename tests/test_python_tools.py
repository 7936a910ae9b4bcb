"""Python tools of a model-played role, through real threads against the fake Messages API.

The model calls the functions with valid and invalid input; the schema comes from the signature
and the docstring, `workspace` is injected, errors go back to the model, calls are counted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator import run_thread
from orchestrator.run.options import RunOptions
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing.fake_anthropic import FakeAnthropic, FakeResponse
from orchestrator.tools.pytools import load_tool, parse_docstring
from tests.anthropic_fixtures import fake_server, tool_results
from tests.tool_project import graph, make_project, steps


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with fake_server(monkeypatch) as fake:
        yield fake


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def test_a_python_tool_is_called_with_validated_arguments(
    server: FakeAnthropic, project: Path, tmp_path: Path
) -> None:
    server.reply(
        FakeResponse.tool_use("count_words", {"path": "notes.txt", "minimum": "x"}),
        FakeResponse.tool_use("count_words", {"path": "notes.txt", "minimum": 2}),
        FakeResponse.tool_use("shout", {"text": "boom"}),
        FakeResponse.text("---\nwords: 4\n---\nCounted."),
    )
    store = SqliteStore(tmp_path / "store")
    path = graph(project, '[read, {python: "wordtools:count_words"}, {python: "wordtools:shout"}]')
    result = run_thread(
        path,
        {"task": "count"},
        store=store,
        workspace=tmp_path / "ws",
        options=RunOptions(max_retries=0),
    )
    assert (result.state, result.final) == ("completed", "4 words")

    bodies = server.message_requests
    offered = {t["name"]: t for t in bodies[0]["tools"]}
    assert "str_replace_based_edit_tool" in offered
    schema = offered["count_words"]["input_schema"]
    assert set(schema["properties"]) == {"path", "minimum"}  # `workspace` is not shown
    assert schema["required"] == ["path"]
    assert (
        schema["properties"]["minimum"]["description"]
        == "only words at least this long are counted"
    )
    assert offered["count_words"]["description"] == "Count the words of a file in the workspace."
    assert offered["shout"]["input_schema"]["properties"]["text"]["description"] == "what to shout"

    invalid = tool_results(bodies[1])[0]
    assert invalid["is_error"] and "minimum" in invalid["content"]
    assert "valid integer" in invalid["content"]
    valid = tool_results(bodies[2])[0]
    assert not valid["is_error"] and valid["content"] == '{"words": 4}'
    failed = tool_results(bodies[3])[0]
    assert failed["is_error"] and failed["content"] == "ValueError: no shouting boom"
    assert steps(store, result.thread_id)[0].tool_calls == 3


def test_a_python_tool_that_cannot_be_loaded_suspends(
    server: FakeAnthropic, project: Path, tmp_path: Path
) -> None:
    (project / "wordtools.py").write_text("import nothing_like_this\n\ndef count_words(p): pass\n")
    result = run_thread(
        graph(project, '[{python: "wordtools:count_words"}]'),
        {"task": "count"},
        store=tmp_path / "store",
        workspace=tmp_path / "ws",
    )
    assert result.state == "suspended" and result.kind == "config"
    assert "ModuleNotFoundError" in (result.reason or "") and "nothing_like_this" in (
        result.reason or ""
    )
    assert server.message_requests == []


def test_docstrings_give_the_descriptions() -> None:
    summary, params = parse_docstring(
        "Do it.\n\nMore words.\n\nArgs:\n    a (int): first\n    b: second\n        continued\n\nReturns:\n    x\n"
    )
    assert summary == "Do it.\n\nMore words."
    assert params == {"a": "first", "b": "second continued"}


def test_load_tool_refuses_star_arguments(tmp_path: Path) -> None:
    (tmp_path / "stars.py").write_text("def f(*args):\n    '''x'''\n")
    from orchestrator.definition.pyref import PyRefError  # why: only this test needs it

    with pytest.raises(PyRefError, match="ordinary named parameter"):
        load_tool("stars:f", str(tmp_path))
