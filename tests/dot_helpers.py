"""Reading DOT text in tests: node ids back to the names they label."""

from __future__ import annotations

import re


def named(dot: str) -> str:
    """The DOT text with its node ids replaced by the quoted names they label, so assertions
    read as the graph reads (`"against" -> "for"`)."""
    ids: dict[str, str] = {}
    out: list[str] = []
    node = re.compile(r'^(\s*)(n\d+) \[label=("(?:[^"\\]|\\.)*")(?:, )?(.*)\];$')
    for line in dot.splitlines():
        found = node.match(line)
        if found:
            indent, key, label, rest = found.groups()
            ids[key] = label.replace("&amp;", "&")
            line = f"{indent}{label} [{rest}];" if rest else f"{indent}{label};"
        out.append(line)
    text = "\n".join(out) + "\n"
    text = re.sub(r"cluster_(n\d+)", lambda m: f'"cluster_{ids[m.group(1)].strip(chr(34))}"', text)
    return re.sub(
        r"\b(n\d+) -> (n\d+)\b", lambda m: f"{ids[m.group(1)]} -> {ids[m.group(2)]}", text
    )
