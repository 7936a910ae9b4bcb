"""Hardening of the extract path, met as a user meets it: `extract_output`, the `orchestrator
extract` command and `orchestrator.testing.simulate`.

Each section is one item of the hardening issue: YAML block scalars keep YAML's semantics,
schema patterns cannot freeze the process, schema `$ref`s never leave the schema, and numbers
too large for Python give a clear error instead of a traceback.
"""

from __future__ import annotations

from typing import Any

import frontmatter
import pytest
import yaml

from orchestrator import extract_output
from orchestrator.spec.models import Role

SINGLE = {"type": "object", "properties": {"summary": {"type": "string"}}}


def make_role(schema: dict[str, Any]) -> Role:
    return Role(description="d", goal="g", frontmatter=schema)


# --------------------------------------------------------------------------- block scalars


@pytest.mark.parametrize(
    ("block", "value"),
    [
        ("|\n  line one\n  line two", "line one\nline two\n"),  # clip: one final newline
        ("|-\n  line one\n  line two", "line one\nline two"),  # strip
        ("|+\n  line one\n  line two\n", "line one\nline two\n\n"),  # keep, blank line too
        (">\n  line one\n  line two", "line one line two\n"),
    ],
)
@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_a_block_scalar_at_the_end_keeps_yaml_semantics(
    block: str, value: str, line_end: str
) -> None:
    reply = f"---\nsummary: {block}\n---\nThe body.\n".replace("\n", line_end)
    out = extract_output(reply, make_role(SINGLE))
    assert out.frontmatter == {"summary": value}
    assert out.body == "The body."
    # The same as PyYAML and python-frontmatter read the same text.
    plain = reply.replace("\r\n", "\n")
    assert yaml.safe_load(plain.split("---\n")[1]) == {"summary": value}
    assert frontmatter.loads(plain).metadata == {"summary": value}


def test_a_block_scalar_at_the_end_of_a_fenced_yaml_block() -> None:
    reply = "Here it is.\n\n```yaml\n$status: _\nsummary: |\n  one\n  two\n```\n"
    assert extract_output(reply, make_role(SINGLE)).frontmatter == {"summary": "one\ntwo\n"}


def test_an_error_at_the_end_of_the_frontmatter_still_names_its_last_line() -> None:
    with pytest.raises(Exception) as info:
        extract_output("---\nsummary: [one, two\n---\n", make_role(SINGLE))
    assert "line 1 (`summary: [one, two`)" in str(info.value)
