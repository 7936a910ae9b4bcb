"""Shared helpers for the tests that run the real `openai` client against FakeOpenAI."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from orchestrator.testing.fake_openai import FakeOpenAI

LOCAL_KEY = "sk-local-test-key-not-real-41d9"
OPENAI_KEY = "sk-openai-test-key-not-real-8c2e"


@contextmanager
def local_provider(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, key: bool = True, **kw: Any
) -> Iterator[FakeOpenAI]:
    """A started fake declared as the provider `local` in a models file the user names."""
    with FakeOpenAI(api_key=LOCAL_KEY if key else None, **kw) as server:
        models = tmp_path / "models.yaml"
        key_line = "    api_key_env: LOCAL_LLM_KEY\n" if key else ""
        models.write_text(
            "providers:\n  local:\n    kind: openai-compatible\n"
            f"    base_url: {server.url}\n{key_line}"
            "prices:\n  local:qwen3-coder: {input: 1.0, output: 2.0}\n"
        )
        monkeypatch.setenv("ORCHESTRATOR_MODELS_FILE", str(models))
        monkeypatch.setenv("LOCAL_LLM_KEY", LOCAL_KEY)
        monkeypatch.delenv("ORCHESTRATOR_MODEL", raising=False)
        yield server


def role_of(body: dict[str, Any]) -> str:
    """The role a request is for: the first line of its system message."""
    system = body["messages"][0]
    assert system["role"] == "system"
    return str(system["content"]).split("\n", 1)[0].removeprefix("# Role: ")
