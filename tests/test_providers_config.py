"""`model: PROVIDER:MODEL`, the models file's `providers:`, `orchestrator models`, and the
`validate` findings `unknown-provider` and `unknown-model` (docs/models.md, docs/problems.md)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.models import models
from orchestrator.definition.model_config import (
    ModelConfigError,
    load_config,
    model_ref,
    price_for,
    price_known,
    resolve_model,
)
from orchestrator.definition.providers import ModelRef
from orchestrator.definition.secret_names import is_provider_key
from orchestrator.linter import lint_graph_file

MODELS = """
providers:
  local:
    kind: openai-compatible
    base_url: http://127.0.0.1:8000/v1/
    api_key_env: LOCAL_LLM_TEST_KEY
  router:
    base_url: https://router.example/api/v1
    tools: false
aliases:
  cheap: local:qwen3-coder-30b
  fast: openai:gpt-5-mini
prices:
  local:qwen3-coder-30b: {input: 0, output: 0}
"""


@pytest.fixture
def models_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(MODELS)
    monkeypatch.setenv("ORCHESTRATOR_MODELS_FILE", str(path))
    monkeypatch.delenv("ORCHESTRATOR_MODEL", raising=False)
    return path


def test_provider_model_references(models_file: Path) -> None:
    assert model_ref("cheap") == ModelRef("local", "qwen3-coder-30b")
    assert resolve_model("cheap") == "local:qwen3-coder-30b"
    assert resolve_model("fast") == "openai:gpt-5-mini"
    assert resolve_model("openai:gpt-5") == "openai:gpt-5"
    # Anthropic's ids keep one spelling, with or without the prefix.
    assert resolve_model("anthropic:claude-opus-5-5") == resolve_model("opus") == "claude-opus-5-5"
    # Bedrock ids keep their own colons: the reference splits at the first one.
    bedrock = model_ref("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert bedrock == ModelRef("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    local = load_config().providers["local"]
    assert (local.kind, local.base_url, local.api_key_env) == (
        "openai-compatible",
        "http://127.0.0.1:8000/v1",
        "LOCAL_LLM_TEST_KEY",
    )
    assert not load_config().providers["router"].tools


def test_an_unknown_provider_is_named(models_file: Path) -> None:
    with pytest.raises(ModelConfigError, match="provider 'lcoal', which is not known"):
        resolve_model("lcoal:qwen3")


def test_prices_of_other_providers(models_file: Path) -> None:
    assert price_known("local:qwen3-coder-30b")
    assert not price_known("openai:gpt-5")
    # Claude on Bedrock and Vertex is priced as the Anthropic model it names.
    assert price_for("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0") == price_for(
        "claude-sonnet-4-5"
    )
    assert price_for("vertex:claude-opus-4-1@20250805") == price_for("claude-opus-4-1")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("openai: {base_url: http://x}", "built-in provider"),
        ("l: {kind: grpc, base_url: http://x}", "kind: expected one of openai-compatible"),
        ("l: {base_url: ftp://x}", "base_url: expected an http"),
        ("l: {base_url: http://x, api_key_env: 'not a name'}", "api_key_env"),
        ("l: {base_url: http://x, colour: red}", "unknown key"),
        ("Bad Name: {base_url: http://x}", "lower-case"),
    ],
)
def test_a_malformed_provider_is_reported_with_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str, message: str
) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(f"providers:\n  {entry}\n")
    monkeypatch.setenv("ORCHESTRATOR_MODELS_FILE", str(path))
    with pytest.raises(ModelConfigError, match=message) as caught:
        load_config()
    assert str(path) in str(caught.value)


def test_a_providers_key_variable_becomes_a_providers_key(models_file: Path) -> None:
    assert not is_provider_key("ANOTHER_LLM_TEST_KEY")
    load_config()
    # Never passed to a child, even when a role names it under env: (docs/security.md).
    assert is_provider_key("LOCAL_LLM_TEST_KEY")


# --------------------------------------------------------------------------- orchestrator models


def test_models_command_shows_what_is_in_effect_and_where_from(models_file: Path) -> None:
    result = CliRunner().invoke(models, ["--format", "json"])
    assert result.exit_code == 0, result.output
    table = json.loads(result.output)
    assert table["models_file"] == str(models_file)
    providers = {p["name"]: p for p in table["providers"]}
    assert providers["openai"]["from"] == "built in"
    assert providers["local"]["from"] == str(models_file)
    assert providers["local"]["credentials"] == "LOCAL_LLM_TEST_KEY"
    aliases = {a["alias"]: a for a in table["aliases"]}
    assert aliases["cheap"] == {
        "alias": "cheap",
        "model": "local:qwen3-coder-30b",
        "from": str(models_file),
    }
    assert aliases["opus"]["from"] == "built in"
    text = CliRunner().invoke(models, []).output
    assert "local        openai-compatible   http://127.0.0.1:8000/v1" in text
    assert "router" in text and "(no tool calls)" in text


def test_models_command_names_a_malformed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("providers: [1, 2]\n")
    monkeypatch.setenv("ORCHESTRATOR_MODELS_FILE", str(path))
    result = CliRunner().invoke(models, [])
    assert result.exit_code == 2
    assert str(path) in result.output


# --------------------------------------------------------------------------- validate

GRAPH = """
name: g
description: test
{head}
roles:
  triage:
    description: triages
    goal: You triage.
    model: {model}
    frontmatter: {{type: object}}
  person:
    description: a person
    goal: You answer.
    actor: human
    model: nowhere:x
    frontmatter: {{type: object}}
graph:
  $START:
    _: {{role: triage, prompt: "Triage"}}
  triage:
    _: {{role: person, prompt: "Answer"}}
  person:
    _: {{role: $END, prompt: "Done"}}
"""


def _problems(tmp_path: Path, model: str, head: str = "") -> list[tuple[str, str, int]]:
    path = tmp_path / "g.yaml"
    path.write_text(textwrap.dedent(GRAPH.format(model=model, head=head)))
    return [
        (p.code, p.message, p.line)
        for p in lint_graph_file(path)
        if p.code in ("unknown-provider", "unknown-model")
    ]


def test_validate_reports_an_unknown_provider_at_the_model_line(
    models_file: Path, tmp_path: Path
) -> None:
    found = _problems(tmp_path, "lcoal:qwen3-coder-30b")
    # The person's model is not checked: no model plays that role.
    assert [(code, line) for code, _, line in found] == [("unknown-provider", 9)]
    assert "role 'triage'" in found[0][1] and "'lcoal'" in found[0][1]
    assert _problems(tmp_path, "local:qwen3-coder-30b") == []  # the control


def test_validate_reports_an_unpriced_model_under_a_cost_limit(
    models_file: Path, tmp_path: Path
) -> None:
    limit = "limits: {max_cost_usd: 5}"
    found = _problems(tmp_path, "openai:gpt-5", limit)
    assert [code for code, _, _ in found] == ["unknown-model"]
    assert "'openai:gpt-5' has no price" in found[0][1]
    assert _problems(tmp_path, "local:qwen3-coder-30b", limit) == []  # priced at 0
    assert _problems(tmp_path, "openai:gpt-5") == []  # no cost limit


def test_validate_reports_tools_on_a_model_without_tool_calls(
    models_file: Path, tmp_path: Path
) -> None:
    path = tmp_path / "g.yaml"
    text = textwrap.dedent(GRAPH.format(model="router:tiny", head=""))
    path.write_text(
        text.replace("    goal: You triage.\n", "    goal: You triage.\n    tools: [read]\n")
    )
    found = [p for p in lint_graph_file(path) if p.code == "no-tool-calls"]
    assert len(found) == 1 and "'router:tiny' takes no tool calls" in found[0].message
    path.write_text(text)  # the control: the same model without tools
    assert [p for p in lint_graph_file(path) if p.code == "no-tool-calls"] == []
