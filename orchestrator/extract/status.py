"""Stage 3: read the reply's status and choose the status contract its fields are checked against.

The rules (package docstring, stage 3): `status` is read as `$status` when the schema does not
declare it, `$SUSPEND` with a reason suspends whatever the schema says, a multi-status role needs
one of its statuses written exactly, and a single-exit role takes no status but `_`.
"""

from __future__ import annotations

from typing import Any

from ..definition.contract import STATUS_KEY, Contract, StatusContract
from ..definition.models import SINGLE_EXIT, SUSPEND
from .output import ExtractError, Output
from .wording import an, clip, code, json_type, show, suggest

REASON_KEY = "reason"


def declares(contract: Contract, name: str) -> bool:
    """Whether any status of the contract declares the field `name`."""
    return any(name in sc.fields for sc in contract.statuses.values())


def _status_text(value: str) -> str:
    """A status as the model wrote it, quoted when spaces at its ends would hide otherwise."""
    return show(value) if not value or value != value.strip() else clip(value)


def allowed(contract: Contract) -> str:
    """The role's statuses, for a sentence."""
    return ", ".join(contract.status_names)


def no_frontmatter(contract: Contract, lead: str) -> str:
    """The error for a reply without a frontmatter block, saying how to write one."""
    if contract.single_exit:
        return (
            f"{lead}: a YAML frontmatter block is required: begin the reply with a line `---`, "
            "then the fields as `key: value` lines, then a line `---`, then the Markdown body"
        )
    return (
        f"{lead}: a YAML frontmatter block is required: begin the reply with a line `---`, then "
        "`$status: <status>` and the fields as `key: value` lines, then a line `---`, then the "
        f"Markdown body; the status is one of: {allowed(contract)}"
    )


def read_status_field(contract: Contract, data: dict[str, Any]) -> dict[str, Any]:
    """`data` with an undeclared `status` key read as `$status` where the rules say so."""
    # A single-exit role has no routing key, so a stray `status` there is just a field.
    routes = not contract.single_exit or data.get("status") == SUSPEND
    if routes and STATUS_KEY not in data and "status" in data and not declares(contract, "status"):
        return {(STATUS_KEY if k == "status" else k): v for k, v in data.items()}
    return data


def suspend(data: dict[str, Any], body: str) -> Output:
    """The output of a `$SUSPEND` reply: only `$status` and a non-empty `reason`."""
    reason = data.get(REASON_KEY)
    if not isinstance(reason, str) or not reason.strip():
        got = "is missing" if reason is None else f"is {show(reason)}"
        raise ExtractError(
            [
                f"`$status: {SUSPEND}` needs a `reason`: a non-empty text saying why the work "
                f"must stop and what would let it continue (`reason` {got})"
            ],
            status=SUSPEND,
        )
    return Output({STATUS_KEY: SUSPEND, REASON_KEY: reason}, body, SUSPEND)


def choose(contract: Contract, data: dict[str, Any]) -> StatusContract:
    """The status contract the reply chose; raises when the status is missing or unknown.

    For a single-exit role this removes `$status: _` from `data`: it is not a field.
    """
    if contract.single_exit:
        if STATUS_KEY in data:
            value = data.pop(STATUS_KEY)
            if value != SINGLE_EXIT:
                raise ExtractError(
                    [
                        "this role has a single exit and takes no `$status`: remove the line "
                        f"{code(f'$status: {show(value, quote=False)}')} (the role's fields "
                        "alone are the reply)"
                    ]
                )
        return contract.statuses[SINGLE_EXIT]
    if not contract.statuses:
        problems = "; ".join(i.message for i in contract.issues) or "it declares no statuses"
        raise ExtractError([f"the role's frontmatter schema cannot be used: {problems}"])
    names = allowed(contract)
    if STATUS_KEY not in data:
        raise ExtractError(
            [f"the frontmatter has no `$status`: add a line `$status: <status>`, one of: {names}"]
        )
    value = data[STATUS_KEY]
    if value is None:
        raise ExtractError([f"`$status` is empty: write one of: {names}"])
    if not isinstance(value, str):
        raise ExtractError(
            [
                f"`$status` must be one of the statuses {names}, written as text; got "
                f"{an(json_type(value))} ({show(value)})"
            ]
        )
    chosen = contract.for_status(value)
    if chosen is None:
        hint = suggest(value, contract.status_names)
        raise ExtractError(
            [
                f"{code(f'$status: {_status_text(value)}')} is not a status of this role"
                + (f" ({hint})" if hint else "")
                + f"; write exactly one of: {names}"
            ]
        )
    return chosen
