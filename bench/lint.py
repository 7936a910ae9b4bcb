"""How long `validate` takes: 100 graphs of 20 roles each, loaded and linted (goal: under 1 s).

Run: python bench/lint.py [--graphs N] [--roles N]

Every graph is different (its own field names in every role), so nothing is served from a cache
that a real project would not also hit. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from orchestrator.linter import lint, lint_graph_file
from orchestrator.spec.loader import build_graph, parse_yaml_file


def role_yaml(graph: int, index: int) -> str:
    """A role with two statuses and fields named after the graph and the role."""
    field = f"f{graph}x{index}"
    return f"""
  r{index}:
    description: Role {index} of graph {graph}
    goal: You are role {index}.
    capabilities: [work]
    frontmatter:
      oneOf:
        - properties:
            $status: {{ const: next }}
            {field}: {{ type: string }}
            notes{index}: {{ type: array, items: {{ type: string }} }}
          required: [$status, {field}, notes{index}]
        - properties:
            $status: {{ const: stop }}
            reason: {{ type: string }}
            hint: {{ type: string }}
          required: [$status, reason]
"""


def edges_yaml(graph: int, roles: int) -> str:
    """A chain r0 -> r1 -> ... -> $END, each stop going to $END, templates using fields and steps."""
    lines = [
        "graph:",
        "  $START:",
        '    _: { role: r0, prompt: "Begin: {{{$inputs.task}}}" }',
    ]
    for i in range(roles):
        target = f"r{i + 1}" if i + 1 < roles else "$END"
        field = f"f{graph}x{i}"
        lines += [
            f"  r{i}:",
            "    next:",
            f"      role: {target}",
            "      prompt: |",
            f"        Continue from {{{{{{{field}}}}}}} after {{{{{{$steps.r0.f{graph}x0}}}}}}.",
            f"        {{{{#notes{i}}}}}- {{{{{{.}}}}}}",
            f"        {{{{/notes{i}}}}}",
            "    stop:",
            "      role: $END",
            '      prompt: "Stopped: {{{reason}}}{{#hint}} ({{{hint}}}){{/hint}}"',
        ]
    return "\n".join(lines) + "\n"


def graph_yaml(graph: int, roles: int) -> str:
    head = f"name: bench-{graph}\ndescription: Benchmark graph {graph}\nroles:"
    return head + "".join(role_yaml(graph, i) for i in range(roles)) + edges_yaml(graph, roles)


def timed(label: str, work: Callable[[], object], runs: int = 5) -> float:
    """Best wall time of several runs; CPU time too, which a busy machine disturbs less."""
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        work()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    best = min(walls)
    print(
        f"{label:<44} wall best {best:6.3f} s, median {statistics.median(walls):6.3f} s;"
        f" cpu best {min(cpus):6.3f} s"
    )
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--graphs", type=int, default=100)
    parser.add_argument("--roles", type=int, default=20)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for g in range(args.graphs):
            path = Path(tmp) / f"bench-{g}.yaml"
            path.write_text(graph_yaml(g, args.roles), encoding="utf-8")
            paths.append(path)
        problems = [p for path in paths for p in lint_graph_file(path)]
        print(f"{args.graphs} graphs x {args.roles} roles; problems found: {len(problems)}")
        for problem in problems[:5]:
            print("  " + problem.format())

        total = timed(
            "load + lint (what `validate` does)", lambda: [lint_graph_file(p) for p in paths]
        )
        timed("  parse YAML with positions", lambda: [parse_yaml_file(p) for p in paths])
        parsed = [parse_yaml_file(p) for p in paths]
        timed(
            "  parse + build models (fresh contracts)",
            lambda: [build_graph(*parse_yaml_file(p), p) for p in paths],
        )
        graphs = [build_graph(*pair, path) for pair, path in zip(parsed, paths, strict=True)]
        timed("  lint only (contracts already derived)", lambda: [lint(g) for g in graphs])
        texts = [p.read_text(encoding="utf-8") for p in paths]
        composed = timed(
            "  C composition (yaml.compose, CSafeLoader)",
            lambda: [yaml.compose(t, Loader=yaml.CSafeLoader) for t in texts],
        )
        loaded = timed(
            "  C load, no positions (yaml.load, CSafeLoader)",
            lambda: [yaml.load(t, Loader=yaml.CSafeLoader) for t in texts],
        )
        goal = "under" if total < 1.0 else "OVER"
        print(f"per graph: {total / args.graphs * 1000:.2f} ms; {goal} the 1 s goal for all")
        ratio = total / composed
        verdict = "met" if ratio <= 2.0 else "not met"
        print(f"load + lint / C composition: {ratio:.2f}x (goal <= 2x: {verdict})")
        print(f"load + lint / C load without positions: {total / loaded:.2f}x")


if __name__ == "__main__":
    main()
