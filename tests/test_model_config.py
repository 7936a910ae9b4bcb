"""Model aliases, the user's models file, and prices."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.actors.base import Usage
from orchestrator.definition.model_config import (
    ModelConfigError,
    config_path,
    cost_usd,
    default_model,
    price_for,
    price_known,
    resolve_model,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("ORCHESTRATOR_HOME", str(folder))
    monkeypatch.delenv("ORCHESTRATOR_MODELS_FILE", raising=False)
    monkeypatch.delenv("ORCHESTRATOR_MODEL", raising=False)
    return folder


def test_aliases_and_ids(home: Path) -> None:
    assert config_path() is None
    assert resolve_model("opus") == "claude-opus-5-5"
    assert resolve_model("Sonnet") == "claude-sonnet-5-5"
    assert resolve_model("haiku") == "claude-haiku-5-5"
    assert resolve_model("claude-opus-4-8") == "claude-opus-4-8"
    assert resolve_model(None) == resolve_model("") == "claude-sonnet-5-5"


def test_orchestrator_model_sets_the_default(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCHESTRATOR_MODEL", "haiku")
    assert default_model() == "haiku"
    assert resolve_model(None) == "claude-haiku-5-5"
    assert resolve_model("opus") == "claude-opus-5-5"


def test_models_file_in_orchestrator_home(home: Path) -> None:
    (home / "models.yaml").write_text(
        "default: cheap\n"
        "aliases:\n  sonnet: claude-sonnet-4-6\n  cheap: claude-haiku-4-5\n"
        "prices:\n"
        "  claude-sonnet-4-6: {input: 2.5}\n"
        "  my-proxy-model: {input: 1.0, output: 2.0}\n"
    )
    assert config_path() == home / "models.yaml"
    assert resolve_model("sonnet") == "claude-sonnet-4-6"
    assert resolve_model(None) == "claude-haiku-4-5"
    sonnet = price_for("claude-sonnet-4-6")
    assert sonnet is not None and (sonnet.input, sonnet.output) == (2.5, 15.0)
    proxy = price_for("my-proxy-model")
    assert proxy is not None
    assert (proxy.cache_write, proxy.cache_read) == pytest.approx((1.25, 0.1))


def test_models_file_from_the_environment(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    explicit = tmp_path / "elsewhere.yaml"
    explicit.write_text("aliases: {opus: claude-opus-4-7}\n")
    monkeypatch.setenv("ORCHESTRATOR_MODELS_FILE", str(explicit))
    assert resolve_model("opus") == "claude-opus-4-7"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("aliases: [a, b]\n", "aliases: must map"),
        ("prices: {m: {input: -1, output: 1}}\n", "non-negative number"),
        ("prices: {new-model: {input: 1}}\n", "needs at least input and output"),
        ("colours: red\n", "unknown key(s) colours"),
        ("aliases: {a: [\n", "invalid YAML"),
    ],
)
def test_bad_models_file_names_the_problem(home: Path, text: str, message: str) -> None:
    (home / "models.yaml").write_text(text)
    with pytest.raises(ModelConfigError) as info:
        resolve_model("opus")
    assert message in str(info.value) and "models.yaml" in str(info.value)


def test_cost(home: Path) -> None:
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=100_000,
        cache_creation_input_tokens=200_000,
        cache_read_input_tokens=2_000_000,
    )
    # sonnet 5.5: 2.0 in, 10.0 out, 2.5 write, 0.1 read (USD per million tokens)
    assert cost_usd("claude-sonnet-5-5", usage) == pytest.approx(2.0 + 1.0 + 0.5 + 0.2)
    assert cost_usd("claude-haiku-4-5-20251001", usage) == pytest.approx(
        cost_usd("claude-haiku-4-5", usage)
    )
    assert price_known("claude-haiku-4-5-20251001")
    assert cost_usd("some-unknown-model", usage) == 0.0
    assert not price_known("some-unknown-model") and not price_known(None)
