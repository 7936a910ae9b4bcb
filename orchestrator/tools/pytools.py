"""Python functions as tools of a model-played role: `tools: [{python: "module:function"}]`.

The tool's name is the function's name; its description the docstring's text before the
argument section; its input schema comes from the signature through pydantic (each parameter's
annotation and default), with each parameter's description taken from the docstring (Google
`Args:` sections and reST `:param name:` lines). A parameter named `workspace` is not shown to
the model: it receives the step's workspace as a `Path`.

A call validates the model's input against that schema first; invalid input, and anything the
function raises, goes back to the model as a tool error (`(text, True)`), never ending the step.
A sync function runs in a worker thread. The result is sent as text: a string as it is, `None`
as "(no output)", anything else as JSON.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ..definition.pyref import PyRefError, load

WORKSPACE = "workspace"
NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Returns|Raises|Yields|Example|Examples):\s*$"
)
_GOOGLE_ARG = re.compile(r"^\s{2,}(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_REST_ARG = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


@dataclass(frozen=True)
class PythonToolDef:
    """One Python tool, ready to offer and to call."""

    ref: str
    name: str
    description: str
    arguments: type[BaseModel]
    function: Any
    wants_workspace: bool

    def definition(self) -> dict[str, Any]:
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        return {"name": self.name, "description": self.description, "input_schema": schema}

    async def call(self, args: Any, workspace: Path) -> tuple[str, bool]:
        try:
            parsed = self.arguments.model_validate(args)
        except ValidationError as exc:
            return "invalid input: " + _errors(exc), True
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self.wants_workspace:
            kwargs[WORKSPACE] = workspace
        try:
            if inspect.iscoroutinefunction(self.function):
                result = await self.function(**kwargs)
            else:
                result = await asyncio.to_thread(self.function, **kwargs)
        except Exception as exc:  # the function's failure is the model's to read, not a crash
            return f"{type(exc).__name__}: {exc}", True
        return _text(result), False


def load_tool(ref: str, folder: str | None) -> PythonToolDef:
    """The tool a reference names; PyRefError when it cannot be loaded or described."""
    function = load(ref, folder)
    name = getattr(function, "__name__", ref.rpartition(":")[2])
    if not NAME.match(name):
        raise PyRefError(f"'{ref}': '{name}' cannot name a tool (letters, digits, _ and -)")
    try:
        hints = typing.get_type_hints(function)
        signature = inspect.signature(function)
    except Exception as exc:  # an annotation that names something undefined, a builtin
        raise PyRefError(f"'{ref}': its signature cannot be read: {exc}") from None
    summary, described = parse_docstring(inspect.getdoc(function) or "")
    fields: dict[str, Any] = {}
    wants_workspace = False
    for param in signature.parameters.values():
        if param.name == WORKSPACE:
            wants_workspace = True
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise PyRefError(
                f"'{ref}': parameter '{param.name}' must be an ordinary named parameter"
            )
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, Field(default, description=described.get(param.name)))
    try:
        arguments = create_model(  # type: ignore[call-overload,unused-ignore]
            f"{name}_input", __config__=ConfigDict(extra="forbid"), **fields
        )
        arguments.model_json_schema()
    except Exception as exc:  # a type pydantic cannot describe
        raise PyRefError(f"'{ref}': its parameters cannot be described: {exc}") from None
    return PythonToolDef(
        ref=ref,
        name=name,
        description=summary or f"The Python function {ref}.",
        arguments=arguments,
        function=function,
        wants_workspace=wants_workspace,
    )


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(the text before the first section, each parameter's description)."""
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in doc.splitlines():
        rest = _REST_ARG.match(line)
        if rest:
            current, section = rest.group(1), "rest"
            params[current] = rest.group(2).strip()
            continue
        heading = _SECTION.match(line)
        if heading:
            section, current = heading.group(1), None
            continue
        if section is None:
            summary.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            arg = _GOOGLE_ARG.match(line) if not line.startswith(" " * 6) else None
            if arg:
                current = arg.group(1).lstrip("*")
                params[current] = arg.group(3).strip()
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
        elif section == "rest" and current and line.startswith(" ") and line.strip():
            params[current] = (params[current] + " " + line.strip()).strip()
    return "\n".join(summary).strip(), params


def _errors(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(input)"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _text(result: object) -> str:
    if result is None:
        return "(no output)"
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)
