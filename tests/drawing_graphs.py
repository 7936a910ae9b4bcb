"""Graphs the drawing's tests lay out: guards, a 5-way fan-out with a join, a subgraph role, a
`for_each`, and names that try to break out of DOT and of SVG.

The first role of each is played by the `command` actor of tests/cli_helpers.py (`PYTHON`,
`AGENT` are filled in by `Project.graph`), so that a thread of the graph can be started and
left suspended (its first step fails on purpose): its page then draws the graph.
"""

from __future__ import annotations

import json

COMMAND = "actor: { command: [PYTHON, AGENT], timeout: 60 }"


def role(*statuses: str, first: bool = False, extra: str = "") -> str:
    """A role's YAML (one line) replying these statuses (none: its one exit `_`)."""
    props = f"$status: {{ enum: {json.dumps(list(statuses))} }}, " if statuses else ""
    required = "required: [$status], " if statuses else ""
    actor = f", {COMMAND}" if first else ""
    return (
        f"{{ description: d, goal: g, frontmatter: {{ type: object, properties: {{ {props}"
        f"{extra} }}, {required}}}{actor} }}"
    )


GUARDS = f"""
name: guards
description: a review loop whose rejections are guarded
roles:
  developer: {role("fixed", "stuck", first=True)}
  reviewer: {role("approved", "rejected", extra="severity: { type: string }")}
  requester: {role("retry", "abandon")}
graph:
  $START:
    _: {{ role: developer, prompt: "Fix {{{{{{$inputs.task}}}}}}" }}
    resume: {{ role: developer, prompt: "Try again" }}
  developer:
    fixed: {{ role: reviewer, prompt: "Review" }}
    stuck: {{ role: $END, ending: stuck, outcome: failure, prompt: "Stuck" }}
  reviewer:
    approved: {{ role: $END, prompt: "Done" }}
    rejected:
      - when: "visits.developer >= 3 || output.severity == 'blocker'"
        role: requester
        prompt: "Still rejected"
      - when: "output.severity == 'minor' && visits.reviewer < 2"
        role: developer
        prompt: "Fix again"
      - role: developer
        prompt: "Fix it"
  requester:
    retry: {{ role: developer, prompt: "Once more" }}
    abandon: {{ role: $END, ending: abandoned, prompt: "Abandoned" }}
"""

FAN5 = f"""
name: fan5
description: a 5-way fan-out joined, then a subgraph role for each part
roles:
  planner: {role("split", "again", first=True, extra="parts: { type: array }")}
  a: {role()}
  bb: {role()}
  ccc: {role()}
  dddd: {role()}
  eeeee: {role()}
  merger: {role("done", "redo")}
  review: {{ description: the review loop, graph: child }}
graph:
  $START:
    _: {{ role: planner, prompt: "Plan" }}
  planner:
    split:
      parallel:
        - {{ role: a, prompt: "x" }}
        - {{ role: bb, prompt: "x" }}
        - {{ role: ccc, prompt: "x" }}
        - {{ role: dddd, prompt: "x" }}
        - {{ role: eeeee, prompt: "x" }}
      join: {{ role: merger, prompt: "{{{{#$branches}}}}{{{{{{$body}}}}}}{{{{/$branches}}}}" }}
    again: {{ role: planner, prompt: "again" }}
  merger:
    done:
      for_each: $steps.planner.parts
      as: part
      role: review
      prompt: "Review {{{{{{part}}}}}}"
      join: {{ role: $END, ending: written, prompt: "all reviewed" }}
    redo: {{ role: planner, prompt: "again" }}
"""

CHILD = """
name: child
description: the review loop
roles:
  w: { description: w, goal: g, frontmatter: { type: object } }
graph:
  $START:
    _: { role: w, prompt: "{{{$inputs.task}}}" }
  w:
    _: { role: $END, prompt: "ok" }
"""

# Names that would end a DOT string or attribute list and add a node, end an SVG text and
# start a script, or be read as Graphviz escapes (`\N` is the node's name, `\G` the graph's).
BREAK_DOT = 'a"]; n9 [label="pwned"]; n0 -> n9 [label="x'
BREAK_SVG = "</text><script>alert(1)</script><text>"
ESCAPES = "back\\slash \\N \\G &amp; <b>]"
ESCAPES_YAML = ESCAPES.replace("\\", "\\\\")  # inside a double-quoted YAML string
HOSTILE_STATUSES = ('x"<y>]\\', "line1\nline2", "<img src=x onerror=alert(1)>", "]")

HOSTILE_FIRST = role('x"<y>]\\', "line1\nline2", first=True)
HOSTILE = f"""
name: hostile
description: names that try to break out
roles:
  '{BREAK_DOT}': {HOSTILE_FIRST}
  "{BREAK_SVG}": {role("<img src=x onerror=alert(1)>")}
  "{ESCAPES_YAML}": {role("]")}
graph:
  $START:
    _: {{ role: '{BREAK_DOT}', prompt: p }}
  '{BREAK_DOT}':
    "x\\"<y>]\\\\": {{ role: "{BREAK_SVG}", prompt: p }}
    "line1\\nline2": {{ role: "{ESCAPES_YAML}", prompt: p }}
  "{BREAK_SVG}":
    "<img src=x onerror=alert(1)>": {{ role: $END, prompt: p }}
  "{ESCAPES_YAML}":
    "]": {{ role: $END, prompt: p }}
"""

FIRST_ROLE = {"guards": "developer", "fan5": "planner", "hostile": BREAK_DOT}
