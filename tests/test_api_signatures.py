"""The Python API's signatures (orchestrator/client/functions.py): explicit keyword-only options that
editors and type checkers can see, and a caller's `RunOptions` left as it was passed."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator import answer_thread, arun_thread, resume_thread, run_thread
from orchestrator.actors.scripted import ScriptedActor
from orchestrator.run.options import RunOptions
from orchestrator.store.memory import MemoryStore
from orchestrator.testing import reply

ONE = """\
name: one
description: One step, then the end.
roles:
  a: { description: d, goal: g, frontmatter: { type: object, properties: { n: { type: integer } }, required: [n] } }
graph:
  $START:
    _: { role: a, prompt: "Do {{{$inputs.task}}}" }
    resume: { role: a, prompt: "Again: {{{$inputs.message}}}" }
  a: { _: { role: $END, prompt: "n={{n}}" } }
"""

RUN_OPTIONS = {
    "workspace",
    "store",
    "model",
    "max_steps",
    "in_place",
    "replay",
    "actor_for",
    "options",
}


@pytest.mark.parametrize("function", [run_thread, arun_thread, resume_thread, answer_thread])
def test_every_option_is_a_typed_keyword_only_parameter(function: Callable[..., Any]) -> None:
    params = inspect.signature(function).parameters.values()
    assert not [p for p in params if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    keywords = [p for p in params if p.kind == p.KEYWORD_ONLY]
    assert keywords and all(p.annotation is not p.empty for p in params)
    assert all(p.default is not p.empty for p in keywords)
    for p in keywords:  # each one is documented in the docstring
        assert f"`{p.name}`" in (function.__doc__ or ""), p.name


def test_run_thread_takes_the_same_options_as_arun_thread() -> None:
    run = inspect.signature(run_thread).parameters
    arun = inspect.signature(arun_thread).parameters
    assert set(run) >= RUN_OPTIONS and list(run) == list(arun)
    assert all(run[n].default == arun[n].default for n in run)


def test_a_passed_run_options_is_not_changed(
    write_graph: Callable[..., Path], tmp_path: Path
) -> None:
    seen: list[str] = []
    options = RunOptions(on_event=lambda stored, state: seen.append(type(stored.event).__name__))
    before = dataclasses.replace(options)
    store = MemoryStore()
    result = run_thread(
        write_graph(ONE),
        {"task": "x"},
        store=store,
        workspace=tmp_path,
        model="haiku",
        max_steps=5,
        actor_for=lambda name, role: ScriptedActor([reply(n=1)]),
        options=options,
    )
    assert result.final == "n=1"
    assert "ThreadCompleted" in seen  # the options were used...
    assert options == before  # ...and not changed: model and max_steps went into a copy
    again = resume_thread(
        result.thread_id,
        store=store,
        message="once more",
        model="sonnet",
        max_steps=4,
        actor_for=lambda name, role: ScriptedActor([reply(n=2)]),
        options=options,
    )
    assert again.state == "completed" and options == before
