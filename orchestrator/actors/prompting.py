"""What a role is shown (docs/format.md section 4): system prompt, each visit's message, repairs.

Every actor that talks to a model builds its text here, so that the Anthropic actor, an external
command and a person at a terminal all see the same words.

Two properties matter more than wording:

- The system prompt depends on the role alone: the same role gives byte-identical text on every
  visit and in every thread, so the provider can serve it from its prompt cache. It therefore
  holds no thread facts, no timestamps, and iterates no sets (a `frozenset` of field names
  iterates in a different order in every process); fields appear in the order the schema
  declares them.
- A visit message is bounded: the history since the role last spoke is cut to a character budget,
  keeping the most recent steps and saying what was left out, so the cost of a step does not grow
  with the length of the thread.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import yaml

from ..definition.contract import STATUS_KEY, Contract, StatusContract
from ..definition.models import SUSPEND, Role
from .base import ActRequest, HistoryItem

HISTORY_BUDGET = 12_000  # characters of history in one visit message
VALUE_LIMIT = 2_000  # characters of one frontmatter value in the history

TOOL_NOTES: dict[str, str] = {
    "read": "view files (with line numbers), list directories, and search files",
    "edit": "create files and edit them (exact string replacement, line insertion)",
    "shell": (
        "run shell commands with `bash`; each command starts a fresh shell in the workspace, "
        "so `cd` and `export` do not carry over to the next command"
    ),
}


# --------------------------------------------------------------------------- system prompt


_SYSTEM_PROMPTS: dict[tuple[int, str], tuple[Role, str]] = {}


def system_prompt(role: Role, role_name: str) -> str:
    """The stable part of a role's prompt: who it is, how to work, and how to reply.

    Built once per role object (roles are frozen); the cache keeps the role alive so its id
    cannot be reused by another object.
    """
    key = (id(role), role_name)
    cached = _SYSTEM_PROMPTS.get(key)
    if cached is not None and cached[0] is role:
        return cached[1]
    text = _build_system_prompt(role, role_name)
    _SYSTEM_PROMPTS[key] = (role, text)
    return text


def _build_system_prompt(role: Role, role_name: str) -> str:
    parts = [f"# Role: {role_name}", role.goal.strip()]
    if role.capabilities:
        parts.append("## Capabilities\n" + "\n".join(f"- {c}" for c in role.capabilities))
    if role.procedure and role.procedure.strip():
        parts.append("## Procedure\n" + role.procedure.strip())
    if role.output and role.output.strip():
        parts.append("## Output\n" + role.output.strip())
    parts.append(_tools_section(role))
    parts.append(deliverable_format(role))
    return "\n\n".join(parts) + "\n"


def _tools_section(role: Role) -> str:
    if not role.tool_sets:
        if role.tools:  # Python or MCP tools only: their definitions say what they do
            return (
                "## Tools\nYou have the tools listed with this request; use them as their "
                "descriptions say, then write your final reply as described below."
            )
        return "## Tools\nYou have no tools in this role: work from the conversation alone."
    lines = [
        "## Tools",
        "You have tools that act inside the thread's workspace only. Give paths relative to the "
        "workspace root; paths that lead outside it (`..`, absolute paths elsewhere, symlinks "
        "pointing out) are refused. With these tools you can:",
    ]
    sets = list(role.tool_sets)
    if "edit" in sets and "read" not in sets:
        sets.insert(0, "read")
    lines += [f"- {TOOL_NOTES[name]}" for name in ("read", "edit", "shell") if name in sets]
    if "edit" not in sets:
        lines.append("You may read files but not change them.")
    lines.append(
        "Use the tools to do the work, then write your final reply as described below; "
        "the reply is the text of your last message, after the last tool call."
    )
    return "\n".join(lines)


def deliverable_format(role: Role) -> str:
    """The reply format generated from the role's contract, one example per status."""
    contract = role.contract
    order = _declared_order(role.frontmatter)
    out = [
        "## Deliverable format",
        "Your reply MUST begin with a YAML frontmatter block: a line `---`, the YAML fields, a "
        "line `---`. Nothing may come before the first `---`. After the block, write a free-form "
        "Markdown body (reasoning, summary, anything useful for people).",
    ]
    if contract.single_exit:
        out.append("This role has a single outcome: no `$status` is needed in the frontmatter.")
        for sc in contract.statuses.values():
            out.append(_status_section(sc, order, None))
    elif contract.statuses:
        names = ", ".join(f"`{s}`" for s in contract.statuses)
        out.append(
            f"The frontmatter's `{STATUS_KEY}` says how the work ended and decides what happens "
            f"next. Choose exactly one of: {names}."
        )
        for status, sc in contract.statuses.items():
            out.append(_status_section(sc, order, status))
    else:
        out.append(
            "The frontmatter must satisfy this JSON Schema:\n\n```json\n"
            + json.dumps(role.frontmatter, indent=2, sort_keys=True)
            + "\n```"
        )
    out.append(_suspend_section())
    return "\n\n".join(out)


def _status_section(sc: StatusContract, order: Sequence[str], status: str | None) -> str:
    required, optional = _ordered(sc.required, order), _ordered(sc.optional, order)
    title = f"### `{STATUS_KEY}: {status}`" if status is not None else "### The reply"
    desc = _status_description(sc, status)
    lines = [title]
    if desc:
        lines.append(desc)
    example = ["---"]
    if status is not None:
        example.append(f"{STATUS_KEY}: {_yaml_scalar(status)}")
    for name in required:
        example += _example_field(name, sc.field_schemas.get(name, {}), optional=False)
    for name in optional:
        example += _example_field(name, sc.field_schemas.get(name, {}), optional=True)
    example += ["---", "<body>"]
    lines.append("```markdown\n" + "\n".join(example) + "\n```")
    if required:
        lines.append("Required fields:")
        lines += [_field_line(n, sc.field_schemas.get(n, {})) for n in required]
    if optional:
        lines.append("Optional fields (leave out the ones that do not apply):")
        lines += [_field_line(n, sc.field_schemas.get(n, {})) for n in optional]
    if not required and not optional:
        lines.append("No other fields are required.")
    return "\n".join(lines)


def _suspend_section() -> str:
    return (
        "### When you cannot proceed\n"
        "If you cannot do the work and need a person (missing access, a decision only a person "
        "can make, contradictory instructions), reply instead:\n"
        "```markdown\n"
        f"---\n{STATUS_KEY}: {SUSPEND}\nreason: <what blocks you and what you need>\n---\n"
        "<body>\n"
        "```\n"
        "The thread then pauses until a person resumes it. Use this only when you truly cannot "
        "proceed, never as a way to skip work."
    )


def _status_description(sc: StatusContract, status: str | None) -> str:
    """A variant's own `description`, if the schema gives one (oneOf variants often do)."""
    schema = sc.schema
    for part in schema.get("allOf", []) if isinstance(schema, dict) else []:
        if isinstance(part, dict):
            props = part.get("properties")
            status_prop = props.get(STATUS_KEY) if isinstance(props, dict) else None
            if isinstance(status_prop, dict) and isinstance(status_prop.get("description"), str):
                return str(status_prop["description"]).strip()
            if status is not None and isinstance(part.get("description"), str):
                return str(part["description"]).strip()
    return ""


def _declared_order(schema: Any) -> list[str]:
    """Field names in the order the schema first mentions them (properties, then required)."""
    seen: dict[str, None] = {}

    def walk(node: Any) -> None:
        if not isinstance(node, dict):
            return
        props = node.get("properties")
        if isinstance(props, dict):
            for key in props:
                seen.setdefault(str(key), None)
        req = node.get("required")
        if isinstance(req, list):
            for key in req:
                seen.setdefault(str(key), None)
        for key in ("oneOf", "anyOf", "allOf"):
            variants = node.get(key)
            if isinstance(variants, list):
                for variant in variants:
                    walk(variant)

    walk(schema)
    return list(seen)


def _ordered(names: Iterable[str], order: Sequence[str]) -> list[str]:
    rank = {name: i for i, name in enumerate(order)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))


def _type_text(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "const" in schema:
        return f"exactly {json.dumps(schema['const'])}"
    if isinstance(schema.get("enum"), list):
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        text = " or ".join(str(k) for k in kind)
    elif isinstance(kind, str):
        text = kind
    elif "oneOf" in schema or "anyOf" in schema:
        variants = schema.get("oneOf") or schema.get("anyOf") or []
        text = " or ".join(_type_text(v) for v in variants) or "any"
    else:
        text = "any"
    if text == "array" and isinstance(schema.get("items"), dict):
        text = f"array of {_type_text(schema['items'])}"
    if isinstance(schema.get("format"), str):
        text += f" ({schema['format']})"
    return text


def _field_line(name: str, schema: Any) -> str:
    line = f"- `{name}` ({_type_text(schema)})"
    if isinstance(schema, dict) and isinstance(schema.get("description"), str):
        line += ": " + " ".join(schema["description"].split())
    return line


def _placeholder(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return "<value>"
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind == "array":
        return [_placeholder(schema.get("items", {}))]
    if kind == "object":
        props = schema.get("properties")
        if isinstance(props, dict) and props:
            return {str(k): _placeholder(v) for k, v in props.items()}
        return {}
    if kind in ("string", "integer", "number", "boolean"):
        return f"<{kind}>"
    return "<value>"


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, str) and value.startswith("<") and value.endswith(">"):
        return value  # a placeholder, shown bare
    if isinstance(value, str):
        dumped = yaml.safe_dump(value, allow_unicode=True, default_flow_style=True, width=10_000)
        return dumped.removesuffix("\n...\n").strip()
    return json.dumps(value, ensure_ascii=False)


def _example_field(name: str, schema: Any, optional: bool) -> list[str]:
    value = _placeholder(schema)
    note = "  # optional" if optional else ""
    if isinstance(value, list):
        item = value[0] if value else "<value>"
        if isinstance(item, dict) and item:
            first, *rest = item.items()
            lines = [f"{name}:{note}", f"  - {first[0]}: {_yaml_scalar(first[1])}"]
            lines += [f"    {k}: {_yaml_scalar(v)}" for k, v in rest]
            return lines
        return [f"{name}:{note}", f"  - {_yaml_scalar(item)}"]
    if isinstance(value, dict):
        if not value:
            return [f"{name}: {{}}{note}"]
        return [f"{name}:{note}"] + [f"  {k}: {_yaml_scalar(v)}" for k, v in value.items()]
    return [f"{name}: {_yaml_scalar(value)}{note}"]


# --------------------------------------------------------------------------- visit message


def visit_message(request: ActRequest, budget: int = HISTORY_BUDGET) -> str:
    """One visit: the thread's task, what happened since the role last spoke, the instruction."""
    parts = ["# Task\n\n" + render_inputs(request.inputs)]
    if request.history:
        parts.append("# Since you last spoke\n\n" + render_history(request.history, budget))
    if request.role.tool_sets:
        parts.append(
            f"# Workspace\n\nYour tools act in `{request.workspace.resolve()}`; "
            "give paths relative to it."
        )
    parts.append("# Your instruction\n\n" + request.prompt.strip())
    return "\n\n".join(parts) + "\n"


def render_inputs(inputs: dict[str, Any]) -> str:
    """The thread's inputs; the implicit `task` input is shown as its bare text."""
    if not inputs:
        return "(no inputs)"
    if set(inputs) == {"task"} and isinstance(inputs["task"], str):
        return inputs["task"].strip()
    sections = []
    for name in sorted(inputs):
        value = inputs[name]
        if isinstance(value, str):
            text = value.strip()
        else:
            text = "```yaml\n" + _dump_yaml(value).rstrip() + "\n```"
        sections.append(f"## {name}\n\n{text}")
    return "\n\n".join(sections)


def render_history(history: Sequence[HistoryItem], budget: int = HISTORY_BUDGET) -> str:
    """The most recent steps that fit the budget, oldest first, and a note on what was left out."""
    blocks: list[str] = []
    used = 0
    kept = 0
    for item in reversed(history):
        block = _history_block(item)
        if blocks and used + len(block) > budget:
            break
        if not blocks and len(block) > budget:
            block = block[: max(budget - 40, 0)].rstrip() + "\n… [step cut to fit]\n```"
        blocks.append(block)
        used += len(block)
        kept += 1
    blocks.reverse()
    omitted = len(history) - kept
    if omitted:
        first, last = history[0].step, history[omitted - 1].step
        span = f"step {first}" if omitted == 1 else f"steps {first}–{last}"
        blocks.insert(0, f"({omitted} earlier step{'s' if omitted != 1 else ''} omitted: {span}.)")
    return "\n\n".join(blocks)


def _history_block(item: HistoryItem) -> str:
    head = f"## Step {item.step}: {item.role} → {item.status}"
    fields = {k: _truncate(v) for k, v in item.frontmatter.items() if k != STATUS_KEY}
    if not fields:
        return head + "\n\n(no fields)"
    return head + "\n\n```yaml\n" + _dump_yaml(fields).rstrip() + "\n```"


def _truncate(value: Any, limit: int = VALUE_LIMIT) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f"… [{len(value) - limit} more characters cut]"
    if isinstance(value, list):
        return [_truncate(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: _truncate(v, limit) for k, v in value.items()}
    return value


def _dump_yaml(value: Any) -> str:
    # The C dumper, when PyYAML has it, is about five times faster on history blocks.
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(
        value,
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )


# --------------------------------------------------------------------------- repairs


def repair_message(errors: Sequence[str], role: Role) -> str:
    """Send a rejected reply back: the concrete errors and what the reply may contain."""
    lines = ["Your reply could not be accepted:"]
    lines += [f"- {e}" for e in errors] or ["- (no details)"]
    lines += ["", allowed_summary(role.contract, _declared_order(role.frontmatter)), ""]
    lines.append(
        "Write the whole reply again. It must begin with the frontmatter block: a line `---`, "
        "the YAML fields, a line `---`; then the body. Do not apologise or explain the change "
        "before the block."
    )
    return "\n".join(lines)


def allowed_summary(contract: Contract, order: Sequence[str] = ()) -> str:
    def describe(sc: StatusContract) -> str:
        req = ", ".join(f"`{n}`" for n in _ordered(sc.required, order)) or "none"
        text = f"required fields: {req}"
        opt = _ordered(sc.optional, order)
        if opt:
            text += "; optional: " + ", ".join(f"`{n}`" for n in opt)
        return text

    if contract.single_exit:
        sc = next(iter(contract.statuses.values()), None)
        body = describe(sc) if sc else "see the deliverable format"
        return f"No `{STATUS_KEY}` is needed ({body}); or `{STATUS_KEY}: {SUSPEND}` with `reason`."
    lines = [f"Allowed `{STATUS_KEY}` values:"]
    lines += [f"- `{s}`: {describe(sc)}" for s, sc in contract.statuses.items()]
    lines.append(f"- `{SUSPEND}`: required field `reason` (only when you cannot proceed)")
    return "\n".join(lines)
