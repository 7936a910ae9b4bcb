"""Claude on Amazon Bedrock and Google Vertex AI through the Anthropic actor: the SDK's own
clients against loopback fakes of their endpoints (paths and authentication as the SDK sends
them), one step each, streamed and not; their credentials are providers' keys (docs/models.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from orchestrator.actors.base import ActReply, ActRequest
from orchestrator.actors.routing import ModelActor
from orchestrator.definition.model_config import cost_usd
from orchestrator.definition.secret_names import is_provider_key
from orchestrator.testing.fake_anthropic.cloud import FakeClaudeCloud
from tests.anthropic_fixtures import READY, make_request

BEDROCK_TOKEN = "bedrock-api-key-not-real-3b7e1f"
VERTEX_TOKEN = "ya29.vertex-token-not-real-9d4c"
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
EDITOR = "str_replace_based_edit_tool"


def play(request: ActRequest, **kw: object) -> ActReply:
    actor = ModelActor(max_retries=0, timeout=10.0, **kw)

    async def go() -> ActReply:
        try:
            return await actor.play(request)
        finally:
            await actor.aclose()

    return asyncio.run(go())


@pytest.fixture
def bedrock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClaudeCloud]:
    with FakeClaudeCloud("bedrock") as server:
        monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", server.url)
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", BEDROCK_TOKEN)
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv("ORCHESTRATOR_MODELS_FILE", raising=False)
        yield server


@pytest.fixture
def vertex(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClaudeCloud]:
    with FakeClaudeCloud("vertex") as server:
        monkeypatch.setenv("ANTHROPIC_VERTEX_BASE_URL", server.url)
        monkeypatch.setenv("CLOUD_ML_REGION", "europe-west1")
        monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "my-project")
        monkeypatch.setenv("ANTHROPIC_VERTEX_ACCESS_TOKEN", VERTEX_TOKEN)
        monkeypatch.delenv("ORCHESTRATOR_MODELS_FILE", raising=False)
        yield server


@pytest.mark.parametrize("stream", [True, False])
def test_a_step_on_bedrock(bedrock: FakeClaudeCloud, stream: bool) -> None:
    bedrock.reply_text(READY)
    reply = play(make_request(model=f"bedrock:{BEDROCK_MODEL}"), stream=stream)
    assert reply.text == READY and reply.model == f"bedrock:{BEDROCK_MODEL}"
    # Priced as the Claude model the Bedrock id names.
    assert reply.cost_usd == cost_usd("claude-sonnet-4-5", reply.usage) > 0
    sent = bedrock.requests[0]
    op = "invoke-with-response-stream" if stream else "invoke"
    assert sent.path == f"/model/{BEDROCK_MODEL.replace(':', '%3A')}/{op}" or sent.path == (
        f"/model/{BEDROCK_MODEL}/{op}"
    )
    assert sent.headers["authorization"] == f"Bearer {BEDROCK_TOKEN}"
    assert isinstance(sent.body["anthropic_version"], str) and "model" not in sent.body
    assert sent.body["system"][0]["cache_control"] == {"type": "ephemeral"}  # the same caching


def test_bedrock_with_signed_aws_credentials(
    bedrock: FakeClaudeCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKE1234")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake/secret/access/key/not/real/123456")
    bedrock.reply_text(READY)
    assert play(make_request(model=f"bedrock:{BEDROCK_MODEL}")).text == READY
    auth = bedrock.requests[0].headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIAFAKEFAKEFAKE1234/")
    assert "/us-east-1/bedrock/aws4_request" in auth
    assert "x-amz-date" in bedrock.requests[0].headers


@pytest.mark.parametrize("stream", [True, False])
def test_a_step_on_vertex(vertex: FakeClaudeCloud, stream: bool) -> None:
    vertex.reply_text(READY)
    reply = play(make_request(model="vertex:claude-opus-4-1@20250805"), stream=stream)
    assert reply.text == READY and reply.model == "vertex:claude-opus-4-1@20250805"
    assert reply.cost_usd == cost_usd("claude-opus-4-1", reply.usage) > 0
    sent = vertex.requests[0]
    op = "streamRawPredict" if stream else "rawPredict"
    assert sent.path == (
        "/projects/my-project/locations/europe-west1/publishers/anthropic/models/"
        f"claude-opus-4-1@20250805:{op}"
    )
    assert sent.headers["authorization"] == f"Bearer {VERTEX_TOKEN}"
    assert isinstance(sent.body["anthropic_version"], str) and "model" not in sent.body


def test_a_missing_region_is_a_clear_message(
    bedrock: FakeClaudeCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with pytest.raises(Exception, match="needs a region: set AWS_REGION"):
        play(make_request(model=f"bedrock:{BEDROCK_MODEL}"))


def test_the_clouds_credentials_are_providers_keys() -> None:
    for name in (
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "ANTHROPIC_VERTEX_ACCESS_TOKEN",
    ):
        assert is_provider_key(name), name
    assert not is_provider_key("CLOUD_ML_REGION")  # the control: a setting, not a secret
