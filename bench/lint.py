"""How long `validate` takes: 100 graphs of 20 roles each, loaded and linted (goal: under 1 s);
review chains of 20 to 400 roles (goal: time per role flat within 2x); and `validate` of 100
chains of 20 roles as a whole process against a process that only composes (and one that only
loads) the same files with libyaml (goal: within 2x).

Run: python bench/lint.py [--graphs N] [--roles N] [--sizes 20,100,200,400] [--rounds N]
     python bench/lint.py --only chain|process|graphs [--before OLD_TREE]

A review chain: role i replies `pass` (to role i+1; the last to $END) or `back` (to role i-1; the
first to $END), and its prompts read `$steps` of earlier roles (the first, the one halfway and
the one before). Every graph is different (its own field names in every role), so nothing is
served from a cache that a real project would not also hit. Prints figures (medians of
round-robin rounds, and the load average); asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from orchestrator.definition.loader import build_graph, parse_yaml_file
from orchestrator.linter import lint, lint_graph_file


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


def chain_yaml(graph: int, roles: int) -> str:
    """A review chain of `roles` roles (see the module's docstring); it has no problems."""
    out = [f"name: chain-{graph}", f"description: Review chain {graph}", "roles:"]
    for i in range(roles):
        out += [
            f"  r{i}:",
            f"    description: Reviewer {i} of chain {graph}",
            f"    goal: You review step {i}.",
            "    capabilities: [work]",
            "    frontmatter:",
            "      oneOf:",
            "        - properties:",
            "            $status: { const: pass }",
            f"            out{graph}x{i}: {{ type: string }}",
            f"          required: [$status, out{graph}x{i}]",
            "        - properties:",
            "            $status: { const: back }",
            f"            why{graph}x{i}: {{ type: string }}",
            f"          required: [$status, why{graph}x{i}]",
        ]
    out += ["graph:", "  $START:", '    _: { role: r0, prompt: "Review: {{{$inputs.task}}}" }']
    for i in range(roles):
        ahead = f"r{i + 1}" if i + 1 < roles else "$END"
        behind = f"r{i - 1}" if i > 0 else "$END"
        earlier = sorted({0, i // 2, i - 1}) if i > 0 else []
        reads = " ".join(f"{{{{{{$steps.r{j}.out{graph}x{j}}}}}}}" for j in earlier)
        before = f" after {{{{{{$steps.r{i - 1}.out{graph}x{i - 1}}}}}}}" if i > 0 else ""
        out += [
            f"  r{i}:",
            "    pass:",
            f"      role: {ahead}",
            "      prompt: |",
            f"        Go on from {{{{{{out{graph}x{i}}}}}}}.",
            f"        Earlier: {reads}",
            "    back:",
            f"      role: {behind}",
            f'      prompt: "Redo: {{{{{{why{graph}x{i}}}}}}}{before}"',
        ]
    return "\n".join(out) + "\n"


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text(encoding="ascii").split()[:3])
    except OSError:
        return "unknown"


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


def graphs_section(graphs: int, roles: int) -> None:
    """The 2026-11-23 figures: load + lint of many small straight graphs, in this process."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for g in range(graphs):
            path = Path(tmp) / f"bench-{g}.yaml"
            path.write_text(graph_yaml(g, roles), encoding="utf-8")
            paths.append(path)
        problems = [p for path in paths for p in lint_graph_file(path)]
        print(f"{graphs} graphs x {roles} roles; problems found: {len(problems)}")
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
        built = [build_graph(*pair, path) for pair, path in zip(parsed, paths, strict=True)]
        timed("  lint only (contracts already derived)", lambda: [lint(g) for g in built])
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
        print(f"per graph: {total / graphs * 1000:.2f} ms; {goal} the 1 s goal for all")
        ratio = total / composed
        verdict = "met" if ratio <= 2.0 else "not met"
        print(f"load + lint / C composition: {ratio:.2f}x (goal <= 2x: {verdict})")
        print(f"load + lint / C load without positions: {total / loaded:.2f}x")


def chain_section(sizes: list[int], rounds: int) -> None:
    """Load + lint of one review chain per size, round-robin; time per role, medians."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for n in sizes:
            paths[n] = Path(tmp) / f"chain-{n}.yaml"
            paths[n].write_text(chain_yaml(n, n), encoding="utf-8")
            found = lint_graph_file(paths[n])
            print(f"chain of {n} roles: {len(found)} problems")
            for problem in found[:3]:
                print("  " + problem.format())
        walls: dict[int, list[float]] = {n: [] for n in sizes}
        cpus: dict[int, list[float]] = {n: [] for n in sizes}
        for _ in range(rounds):
            for n in sizes:
                wall, cpu = time.perf_counter(), time.process_time()
                lint_graph_file(paths[n])
                walls[n].append(time.perf_counter() - wall)
                cpus[n].append(time.process_time() - cpu)
        print(f"{'roles':>6} {'load+lint s':>12} {'ms/role':>8} {'cpu ms/role':>12}")
        per_role = {}
        for n in sizes:
            per_role[n] = statistics.median(walls[n]) / n * 1000
            cpu = statistics.median(cpus[n]) / n * 1000
            print(f"{n:>6} {statistics.median(walls[n]):>12.3f} {per_role[n]:>8.3f} {cpu:>12.3f}")
        first, last = per_role[sizes[0]], per_role[sizes[-1]]
        verdict = "met" if last <= 2 * first else "not met"
        print(
            f"time per role at {sizes[-1]} / at {sizes[0]}: {last / first:.2f}x"
            f" (goal <= 2x: {verdict}); {sizes[-1]} roles in"
            f" {statistics.median(walls[sizes[-1]]):.3f} s (goal < 1 s)"
        )


COMPOSE = (
    "import pathlib, sys, yaml\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).glob('*.yaml')):\n"
    "    yaml.compose(p.read_text(encoding='utf-8'), Loader=yaml.CSafeLoader)\n"
)
LOAD = (
    "import pathlib, sys, yaml\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).glob('*.yaml')):\n"
    "    with open(p, encoding='utf-8') as f:\n"
    "        yaml.load(f, Loader=yaml.CSafeLoader)\n"
)


STAGES = (
    "import time\n"
    "cpu = time.process_time()\n"
    "from orchestrator.cli import cli\n"
    "from orchestrator.definition.loader import build_graph, parse_yaml_file\n"
    "from orchestrator.linter import lint\n"
    "import gc, pathlib, sys\n"
    "stages = {'interpreter start': cpu, 'imports': time.process_time() - cpu}\n"
    "gc.freeze(); gc.set_threshold(20_000, 10, 10)  # as validate does\n"
    "paths = sorted(pathlib.Path(sys.argv[1]).glob('*.yaml'))\n"
    "cpu = time.process_time(); parsed = [parse_yaml_file(p) for p in paths]\n"
    "stages['parse (compose + positions)'] = time.process_time() - cpu\n"
    "cpu = time.process_time()\n"
    "built = [build_graph(*pair, p) for pair, p in zip(parsed, paths)]\n"
    "stages['build (pydantic models)'] = time.process_time() - cpu\n"
    "cpu = time.process_time(); [lint(g) for g in built]\n"
    "stages['lint (contracts, every pass)'] = time.process_time() - cpu\n"
    "for name, took in stages.items(): print(f'{name:<36} {took:7.3f}')\n"
)


def process_section(graphs: int, roles: int, rounds: int, before: str | None) -> None:
    """`orchestrator validate DIR` against a Python process that composes the same files with
    libyaml, each a whole process from start to exit, round-robin; medians of wall and CPU time
    (the children's user + system time, which a busy machine disturbs less). With `before`, also
    `validate` with PYTHONPATH set to that folder (an earlier checkout's tree). The processes run
    in the temporary folder: `python -m` puts its working directory first on sys.path."""
    validate = [sys.executable, "-m", "orchestrator"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "graphs"
        folder.mkdir()
        for g in range(graphs):
            (folder / f"chain-{g}.yaml").write_text(chain_yaml(g, roles), encoding="utf-8")
        # Bytecode caches as an installed package has them (a checkout run with
        # PYTHONDONTWRITEBYTECODE compiles every module of the package at every start: about
        # 60 ms of validate's imports); written by the first, uncounted round.
        here = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        here["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        variants: dict[str, tuple[list[str], dict[str, str]]] = {
            "orchestrator validate graphs/": ([*validate, "validate", str(folder)], here),
            "python: yaml.compose (CSafeLoader)": (
                [sys.executable, "-c", COMPOSE, str(folder)],
                here,
            ),
            "python: yaml.load (CSafeLoader)": ([sys.executable, "-c", LOAD, str(folder)], here),
            "python -c pass": ([sys.executable, "-c", "pass"], here),
        }
        if before:
            env = {**here, "PYTHONPATH": before}
            variants["validate, before (--before)"] = ([*validate, "validate", str(folder)], env)
        walls: dict[str, list[float]] = {label: [] for label in variants}
        cpus: dict[str, list[float]] = {label: [] for label in variants}
        for argv, env in variants.values():  # the warm-up round: bytecode caches written
            subprocess.run(argv, capture_output=True, check=False, env=env, cwd=tmp)
        for _ in range(rounds):
            for label, (argv, env) in variants.items():
                used = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                done = subprocess.run(argv, capture_output=True, check=False, env=env, cwd=tmp)
                walls[label].append(time.perf_counter() - start)
                now = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus[label].append(now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime)
                if done.returncode != 0:
                    print(f"{label}: exit {done.returncode}: {done.stdout[-300:]!r}")
        print(f"{graphs} review chains of {roles} roles, {rounds} rounds")
        print(f"{'process':<36} {'wall s':>7} {'min s':>7} {'cpu s':>7}")
        for label in variants:
            print(
                f"{label:<36} {statistics.median(walls[label]):>7.3f}"
                f" {min(walls[label]):>7.3f} {statistics.median(cpus[label]):>7.3f}"
            )
        print("where validate's CPU goes, in one process (s):")
        stages = [sys.executable, "-c", STAGES, str(folder)]
        print(subprocess.run(stages, capture_output=True, text=True, env=here, cwd=tmp).stdout)
        ours = "orchestrator validate graphs/"
        for name, theirs in (
            ("C composition", "python: yaml.compose (CSafeLoader)"),
            ("C load", "python: yaml.load (CSafeLoader)"),
        ):
            wall = statistics.median(walls[ours]) / statistics.median(walls[theirs])
            cpu = statistics.median(cpus[ours]) / statistics.median(cpus[theirs])
            verdict = "met" if wall <= 2 else "not met"
            print(f"validate / {name}: {wall:.2f}x wall, {cpu:.2f}x cpu (goal <= 2x: {verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--graphs", type=int, default=100)
    parser.add_argument("--roles", type=int, default=20)
    parser.add_argument("--sizes", default="20,100,200,400", help="chain sizes, in roles")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=["graphs", "chain", "process"])
    parser.add_argument("--before", help="process: also validate with this PYTHONPATH")
    args = parser.parse_args()
    print(f"load average: {load_average()}")
    if args.only in (None, "graphs"):
        graphs_section(args.graphs, args.roles)
    if args.only in (None, "chain"):
        chain_section([int(n) for n in args.sizes.split(",")], args.rounds)
    if args.only in (None, "process"):
        process_section(args.graphs, args.roles, args.rounds, args.before)
    print(f"load average: {load_average()}")


if __name__ == "__main__":
    main()
