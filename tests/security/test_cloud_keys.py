"""Attacks on Bedrock's and Vertex's credentials (docs/security.md): a token in a workspace file
that the model reads through a tool reaches no request (the control: the file's other text
does)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.testing.fake_anthropic import FakeResponse
from orchestrator.testing.fake_anthropic.cloud import FakeClaudeCloud
from tests.anthropic_fixtures import READY, make_request, make_role
from tests.test_claude_clouds import (  # noqa: F401  (bedrock, vertex: the fixtures)
    BEDROCK_MODEL,
    BEDROCK_TOKEN,
    EDITOR,
    VERTEX_TOKEN,
    bedrock,
    play,
    vertex,
)


@pytest.mark.parametrize("cloud", ["bedrock", "vertex"])
def test_attack_a_cloud_token_in_a_workspace_file_reaches_no_request(
    request: pytest.FixtureRequest, tmp_path: Path, cloud: str
) -> None:
    server: FakeClaudeCloud = request.getfixturevalue(cloud)
    token = BEDROCK_TOKEN if cloud == "bedrock" else VERTEX_TOKEN
    (tmp_path / "creds.txt").write_text(f"visible-marker-77a\ntoken={token}\n")
    server.reply(FakeResponse.tool_use(EDITOR, {"command": "view", "path": "creds.txt"}))
    server.reply_text(READY)
    model = f"bedrock:{BEDROCK_MODEL}" if cloud == "bedrock" else "vertex:claude-opus-4-1"
    play(make_request(make_role(("read",)), workspace=tmp_path, model=model))
    result = server.requests[-1].body["messages"][-1]["content"][0]["content"]
    assert "visible-marker-77a" in result  # the control: the file's text went back
    assert token not in result and "[redacted]" in result
    assert all(token.encode() not in r.raw for r in server.requests)
