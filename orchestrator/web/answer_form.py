"""The form that answers for a waiting person, built from the role's contract, and its reading.

One form per status the role may answer with (the `Question`'s forms, as `threads show` lists
them), each with one input per field: a choice for an `enum` or a boolean, a number input for
`integer` and `number`, a text area for text, and a text area read as YAML for lists, objects
and fields of no declared type (`[a, b]`, `{k: v}`). Required fields are marked; each field's
`description` is its hint. A body text area follows, for the free text under the frontmatter.

A submitted form is turned into a reply exactly as `threads answer --status S --set K=V` turns
its options into one (the same typing of values by the field's schema, the same formatting),
and checked by the moderator before anything is recorded: an answer the contract refuses is
shown again with the errors and what the person typed.

The same forms are the reply editor of "fork from here" (web/fork_page.py): a fork's
replacement reply for a step is validated against the role's contract like a person's answer,
so it is typed in the same inputs; the fork page gives its own `action`, an id `prefix` of its
own, and `extra` inputs (reuse, title) placed before the button.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..definition.models import SINGLE_EXIT
from ..definition.yamlpos import typed_value
from ..extract import format_reply
from ..run.waiting import AnswerForm, Field, Question
from .html import esc

FIELD_PREFIX = "field."


def answer_forms(
    question: Question,
    *,
    errors: tuple[str, ...] = (),
    status: str | None = None,
    typed: Mapping[str, str] | None = None,
    look: FormLook | None = None,
) -> str:
    """The forms for every status; `errors` and `typed` refill the one answered (`status`).
    `look`: where they are sent and what they say (default: a person's answer)."""
    look = look or FormLook()
    out = []
    for form in question.forms:
        mine = form.status == status
        chosen = (errors if mine else (), (typed or {}) if mine else {})
        out.append(_form(question, form, *chosen, look))
    return "".join(out)


@dataclass(frozen=True)
class FormLook:
    """Where the forms are sent and how they are worded: a person's answer by default; the
    fork page's reply editor (its own action, ids, title, button and `extra` inputs)."""

    action: str = ""  # "" : the thread's answer URL
    prefix: str = "answer"  # of every input's id: two editors on one page never share one
    title: str = "Answer"
    button: str = ""  # the button's words, "{status}" standing for the status ("": an answer's)
    extra: str = ""  # more inputs, before the button, HTML ("{status}" as in `button`)


def _form(
    question: Question,
    form: AnswerForm,
    errors: tuple[str, ...],
    typed: Mapping[str, str],
    look: FormLook,
) -> str:
    status = form.status
    single = status == SINGLE_EXIT
    title = look.title if single else f"{look.title} <code>{esc(status)}</code>"
    action = look.action or f"/threads/{question.thread_id}/answer"
    ident = _ider(look.prefix)
    out = [
        f'<form class="answer" method="post" action="{esc(action)}" data-status="{esc(status)}">',
        f'<input type="hidden" name="status" value="{esc(status)}">',
        f'<input type="hidden" name="step" value="{question.step}">',
        f"<strong>{title}</strong>",
    ]
    if errors:
        out.append('<ul class="errors">' + "".join(f"<li>{esc(e)}</li>" for e in errors) + "</ul>")
    for field in form.fields:
        out.append(_input(ident(status, field.name), field, typed.get(field.name)))
    out.append(
        f'<label for="{ident(status, "$body")}">body <span class="hint">(optional: free text '
        "under the frontmatter)</span></label>"
        f'<textarea id="{ident(status, "$body")}" name="body" rows="2">'
        f"{esc(typed.get('$body', ''))}</textarea>"
    )
    out.append(look.extra.replace(_STATUS, esc(status)))
    if look.button:
        label = look.button.replace(_STATUS, "" if single else status).strip()
    else:
        label = "Send answer" if single else f"Send {status}"
    out.append(f'<p><button class="primary" type="submit">{esc(label)}</button></p></form>')
    return "".join(out)


# In `FormLook.extra`, where each form's status goes (its inputs' ids differ per form).
_STATUS = "{status}"


def _ider(prefix: str) -> Callable[[str, str], str]:
    def ident(status: str, name: str) -> str:
        return esc(f"{prefix}-{status}-{name}")

    return ident


def _input(ident: str, field: Field, typed: str | None) -> str:
    schema = field.schema if isinstance(field.schema, dict) else {}
    kind = schema.get("type")
    name = esc(FIELD_PREFIX + field.name)
    hint = field.describe().split(": ", 1)[1] if ": " in field.describe() else ""
    required = " required" if field.required else ""
    label = f'<label for="{ident}">{esc(field.name)} <span class="hint">{esc(hint)}</span></label>'
    value = typed if typed is not None else _default(schema)
    if "enum" in schema or kind == "boolean":
        options = schema.get("enum", [True, False])
        blank = "" if field.required else '<option value="">(none)</option>'
        choices = "".join(
            f'<option value="{esc(_shown(o))}"{" selected" if _shown(o) == value else ""}>'
            f"{esc(_shown(o))}</option>"
            for o in options
        )
        return f'{label}<select id="{ident}" name="{name}"{required}>{blank}{choices}</select>'
    if kind in ("integer", "number"):
        step = "1" if kind == "integer" else "any"
        return (
            f'{label}<input id="{ident}" type="number" step="{step}" name="{name}" '
            f'value="{esc(value)}"{required}>'
        )
    rows = 1 if kind == "string" and not schema.get("maxLength", 0) > 200 else 3
    return (
        f'{label}<textarea id="{ident}" name="{name}" rows="{rows}"{required}>'
        f"{esc(value)}</textarea>"
    )


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _default(schema: Mapping[str, Any]) -> str:
    return _shown(schema["default"]) if "default" in schema else ""


def reply_from_form(question: Question, data: Mapping[str, str]) -> tuple[str, str, dict[str, str]]:
    """(status, reply text, what was typed) from a submitted form. Empty optional fields are
    left out; values are typed by the field's schema as `--set` types them."""
    status = data.get("status") or SINGLE_EXIT
    form = next((f for f in question.forms if f.status == status), None)
    schemas = {f.name: f.schema for f in form.fields} if form is not None else {}
    typed: dict[str, str] = {"$body": data.get("body", "")}
    fields: dict[str, Any] = {}
    for key, text in data.items():
        if not key.startswith(FIELD_PREFIX):
            continue
        name = key[len(FIELD_PREFIX) :]
        typed[name] = text
        if text == "":
            continue
        schema = schemas.get(name, {"type": "any"})
        if isinstance(schema, dict) and schema.get("type") is None and "enum" in schema:
            value = next((o for o in schema["enum"] if _shown(o) == text), text)
        else:
            value = typed_value(text, schema)
        fields[name] = value
    body = data.get("body", "").replace("\r\n", "\n")
    reply = format_reply(None if status == SINGLE_EXIT else status, fields, body)
    return status, reply, typed
