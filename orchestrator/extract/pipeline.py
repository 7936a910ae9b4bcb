"""The pipeline itself: the stages in order, from a reply's text to its `Output` (and back)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import yaml

from ..definition.contract import STATUS_KEY
from ..definition.models import SUSPEND
from .locate import MAX_PREAMBLE_LINES, STATUS_LINE, late_block_line, next_nonblank, normalize
from .output import ExtractError, Output
from .parse import parse_reply
from .status import choose, no_frontmatter, read_status_field, suspend
from .validate import validate
from .wording import code

if TYPE_CHECKING:
    from ..definition.contract import Contract
    from ..definition.models import Role


def format_reply(status: str | None, fields: Mapping[str, Any], body: str = "") -> str:
    """The inverse of `extract_output`: a reply text from a status, fields and a body.

    Used for answers typed by people (`threads answer --status --set`, the terminal interview)
    and for replies built in tests (`orchestrator.testing.reply`). No status: no `$status` line.
    """
    data: dict[str, Any] = {} if status is None else {STATUS_KEY: status}
    data.update(fields)
    front = yaml.safe_dump(data, sort_keys=False, allow_unicode=True) if data else ""
    return f"---\n{front}---\n{body}"


def _no_block_errors(text: str, contract: Contract) -> list[str]:
    """Why a reply without a frontmatter block has none, with the likely slip when one shows."""
    errors = [no_frontmatter(contract, "the reply has no frontmatter")]
    lines = normalize(text)
    first = next_nonblank(lines, 0)
    late = late_block_line(lines)
    if first < len(lines) and STATUS_LINE.match(lines[first]):
        errors.append(
            f"line {first + 1} ({code(lines[first].strip())}) starts the fields without "
            "a `---` line before them; put a `---` line before the first field and after "
            "the last one"
        )
    elif late is not None:
        errors.append(
            f"a `---` block with a status starts on line {late}, but the frontmatter must "
            "come first: only blank lines and a short preamble (at most "
            f"{MAX_PREAMBLE_LINES} lines, no code blocks) may come before it"
        )
    return errors


def extract_output(text: str, role: Role) -> Output:
    """Turn a reply into its validated `Output`, or raise `ExtractError` saying what is wrong."""
    contract = role.contract
    if not text.strip("\ufeff \t\r\n"):
        raise ExtractError([no_frontmatter(contract, "the reply is empty")])
    data, body = parse_reply(text)
    if data is None:
        raise ExtractError(_no_block_errors(text, contract))
    data = read_status_field(contract, data)
    if data.get(STATUS_KEY) == SUSPEND:
        return suspend(data, body)
    chosen = choose(contract, data)  # single-exit: drops `$status: _` from data
    errors = validate(chosen, data, contract.single_exit)
    if errors:
        raise ExtractError(errors, status=chosen.status)
    return Output(data, body, chosen.status)


def extract_status_only(text: str, role: Role) -> str:
    """The routing key of a valid reply (`orchestrator extract --status-only`)."""
    return extract_output(text, role).status
