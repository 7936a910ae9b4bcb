"""Untrusted files cannot hang, bloat, mislead or widen what a role may do (docs/security.md).

Each attack sits beside a control: the same action where it must work, or the attack shown to
work when the defence is off.
"""

from __future__ import annotations

import json
import resource
import subprocess
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from orchestrator import run_thread
from orchestrator.actors.recording import RecordingError, load_recording, parse_recording
from orchestrator.cli import cli
from orchestrator.core.guard_cost import GUARD_BUDGET, estimate, shape
from orchestrator.core.guards import GuardError, evaluate
from orchestrator.definition.catalog import available_roles
from orchestrator.definition.loader import load_graph
from orchestrator.definition.models import Graph
from orchestrator.definition.problems import GraphError, Problem
from orchestrator.run.session import Session
from orchestrator.store.sqlite import SqliteStore
from orchestrator.testing import reply, simulate
from tests.anthropic_fixtures import fake_server
from tests.cli_helpers import LOOP_GRAPH, Project

MakeGraph = Callable[..., Graph]

# --------------------------------------------------------------------------- guards' cost

GUARDED = """
name: costly
description: A counter whose list a guard ranges over.
roles:
  counter:
    description: Counts
    goal: You count.
    frontmatter:
      type: object
      properties:
        $status: { const: done }
        items: { type: array, items: { type: integer } }
      required: [$status, items]
graph:
  $START:
    _: { role: counter, prompt: "Count {{{$inputs.task}}}" }
  counter:
    done:
      - { when: "GUARD", role: $END, ending: matched, prompt: "matched" }
      - { role: $END, prompt: "no match" }
"""

THREE_DEEP = "output.items.exists(a, output.items.exists(b, output.items.exists(c, a + b == c)))"
TWO_DEEP = "output.items.exists(a, output.items.exists(b, a + b == 3))"
ONE_DEEP = "output.items.all(x, x >= 0)"
# Two levels of `map`: the package copies a map's accumulator on every iteration, so over 2,000
# items this takes minutes in the package (measured: 100 s for 1,000 items).
QUADRATIC = "output.items.map(a, output.items.map(b, a + b)).size() > 0"


def _validate(tmp_path: Path, guard: str) -> list[str]:
    project = Project(tmp_path)
    project.graph(GUARDED.replace("GUARD", guard), "costly")
    out = project.run("validate", "graphs/costly.yaml", "--format", "json")
    return [p["code"] for p in json.loads(out.stdout)["problems"]]


def test_attack_three_nested_comprehensions_are_a_guard_cost_problem(tmp_path: Path) -> None:
    assert _validate(tmp_path, THREE_DEEP) == ["guard-cost"]


@pytest.mark.parametrize("guard", [ONE_DEEP, TWO_DEEP])
def test_control_one_or_two_levels_validate_clean(tmp_path: Path, guard: str) -> None:
    assert _validate(tmp_path, guard) == []


def test_attack_a_guard_over_its_budget_suspends_naming_the_edge(make_graph: MakeGraph) -> None:
    graph = make_graph(GUARDED.replace("GUARD", QUADRATIC))
    started = time.monotonic()
    trace = simulate(graph, [reply("done", items=list(range(2000)))])
    assert trace.state == "suspended"
    assert "counter --done--> $END" in (trace.reason or "")
    assert "more than the budget" in (trace.reason or "")
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("guard", [ONE_DEEP, TWO_DEEP, QUADRATIC])
def test_control_the_same_guards_over_small_lists_evaluate(
    make_graph: MakeGraph, guard: str
) -> None:
    graph = make_graph(GUARDED.replace("GUARD", guard))
    trace = simulate(graph, [reply("done", items=[1, 2, 5])])
    assert trace.state == "completed", trace.reason
    assert trace.ending == "matched"


def test_the_estimate_bounds_what_the_package_really_does() -> None:
    """The control for the budget's figure: a guard the estimate lets through runs fast, and the
    refused one is genuinely slow in the package (a small instance, timed)."""
    names = {"output": {"items": list(range(200))}}
    assert estimate(shape(QUADRATIC), names) > GUARD_BUDGET
    with pytest.raises(GuardError, match="budget"):
        evaluate(QUADRATIC, names)
    allowed = {"output": {"items": list(range(100))}}
    assert estimate(shape(TWO_DEEP), allowed) <= GUARD_BUDGET
    started = time.monotonic()
    assert evaluate(TWO_DEEP, allowed) is True
    assert time.monotonic() - started < 5


# --------------------------------------------------------------------------- recordings

CHILD_GRAPH = """\
name: fixer
description: Fixes one task
roles:
  worker:
    description: works
    goal: You work.
    frontmatter:
      properties: { $status: { const: fixed }, summary: { type: string } }
      required: [$status, summary]
graph:
  $START:
    _: { role: worker, prompt: "Fix: {{{$inputs.task}}}" }
  worker:
    fixed: { role: $END, prompt: "Fixed: {{{summary}}}" }
"""

PARENT_GRAPH = """\
name: tasks
description: Fixes a task in a subgraph
roles:
  fix:
    description: Fixes one task
    graph: fixer
graph:
  $START:
    _: { role: fix, prompt: "{{{$inputs.task}}}" }
  fix:
    done: { role: $END, prompt: "Done" }
"""

# Nine levels of ten aliases each: a billion strings once expanded ("billion laughs").
ALIAS_BOMB = (
    "recording: 1\ngraph: tasks\n"
    + "l0: &l0 ["
    + ", ".join(["lol"] * 10)
    + "]\n"
    + "".join(f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 10) + "]\n" for n in range(1, 9))
    + "steps: *l8\n"
)

# A child recording that is its own ancestor (YAML says so with an alias inside its anchor).
SELF_CHILD = """\
recording: 1
graph: tasks
steps:
  - role: fix
    output: ""
    child: &child
      graph: fixer
      steps:
        - role: fix
          output: ""
          child: *child
"""


def _limited(memory_mb: int) -> Callable[[], None]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))

    return limit


def _recorded(tmp_path: Path) -> Project:
    """A project with the subgraph graphs and a proper recording (with a child) of a thread."""
    project = Project(tmp_path)
    project.graph(CHILD_GRAPH, "fixer")
    graph = project.graph(PARENT_GRAPH, "tasks")
    trace = simulate(graph, {"worker": [reply("fixed", summary="A")]}, inputs={"task": "a"})
    assert trace.state == "completed", trace.reason
    (tmp_path / "good.yaml").write_text(Session(trace.store).recording(trace.thread_id).dump())
    return project


def _replay_limited(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        project.cmd(*args),
        cwd=project.root,
        env=project.env(),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limited(1500),
    )


def test_control_a_proper_recording_with_a_child_replays(tmp_path: Path) -> None:
    project = _recorded(tmp_path)
    assert load_recording(tmp_path / "good.yaml").steps[0].child is not None
    out = _replay_limited(project, "replay", "graphs/tasks.yaml", "good.yaml")
    assert out.returncode == 0, out.stderr
    assert "same route" in out.stdout


def test_attack_an_alias_bomb_recording_is_refused_quickly(tmp_path: Path) -> None:
    project = _recorded(tmp_path)
    (tmp_path / "bomb.yaml").write_text(ALIAS_BOMB)
    out = _replay_limited(project, "replay", "graphs/tasks.yaml", "bomb.yaml")
    assert out.returncode == 2, out.stderr
    assert "bomb.yaml: refused (yaml-limit)" in out.stderr
    assert "alias" in out.stderr and "Traceback" not in out.stderr
    # the `--replay` path of `run` loads it the same way
    run = _replay_limited(
        project, "run", "graphs/tasks.yaml", "-i", "task=a", "--replay", "bomb.yaml"
    )
    assert run.returncode == 2, run.stderr
    assert "bomb.yaml: refused (yaml-limit)" in run.stderr and "Traceback" not in run.stderr


def test_attack_a_recording_that_is_its_own_child_is_refused(tmp_path: Path) -> None:
    project = _recorded(tmp_path)
    (tmp_path / "self.yaml").write_text(SELF_CHILD)
    out = _replay_limited(project, "replay", "graphs/tasks.yaml", "self.yaml")
    assert out.returncode == 2, out.stderr
    assert "self.yaml: refused (yaml-limit)" in out.stderr and "Traceback" not in out.stderr
    assert "expand forever" in out.stderr


def test_attack_recording_data_that_holds_itself_is_refused() -> None:
    """Data built in Python (not read from YAML) cannot hold a cycle either."""
    data: dict[str, Any] = {"graph": "tasks", "steps": [{"role": "fix", "output": ""}]}
    data["steps"][0]["child"] = data
    with pytest.raises(RecordingError, match="cannot be its own child"):
        parse_recording(data, "cyclic.yaml")
    data["steps"][0]["child"] = {"graph": "fixer", "steps": [{"role": "worker", "output": "x"}]}
    assert parse_recording(data, "fine.yaml").steps[0].child is not None


# --------------------------------------------------------------------------- models files


class RepoProject(Project):
    """A project run as in a cloned repository: no ORCHESTRATOR_HOME, so the store and the models
    file are the ones in `./.orchestrator`, which the repository may have brought."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.store = root / ".orchestrator"
        self.store.mkdir(exist_ok=True)

    def env(self) -> dict[str, str]:
        env = super().env()
        env.pop("ORCHESTRATOR_HOME", None)
        env.pop("ORCHESTRATOR_MODELS_FILE", None)
        return env


def _run_with_models(
    project: Project, models: str, where: Path
) -> subprocess.CompletedProcess[str]:
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(models)
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[reply("done", note="ok")])
    return project.run("run", "graphs/loop.yaml", "-i", "task=x")


def _started(project: Project) -> dict[str, Any]:
    (row,) = project.threads()
    return project.events(row["id"])[0]


def test_attack_a_planted_alias_remap_is_announced_and_recorded(tmp_path: Path) -> None:
    project = RepoProject(tmp_path)
    planted = tmp_path / ".orchestrator" / "models.yaml"
    out = _run_with_models(project, "aliases: { sonnet: claude-haiku-5-5 }\n", planted)
    assert out.returncode == 0, out.stderr
    assert f"the models file {Path('.orchestrator') / 'models.yaml'} was found" in out.stderr
    assert "alias sonnet -> claude-haiku-5-5 (built in: claude-sonnet-5-5)" in out.stderr
    started = _started(project)
    assert started["type"] == "ThreadStarted"
    assert started["models_file"]["changes"] == [
        "alias sonnet -> claude-haiku-5-5 (built in: claude-sonnet-5-5)"
    ]


@pytest.mark.parametrize("model", ["claude-sonnet-5-5", "claude-sonnet-5-5-20260101"])
def test_attack_a_planted_zero_price_for_a_known_model_is_refused(
    tmp_path: Path, model: str
) -> None:
    project = RepoProject(tmp_path)
    planted = tmp_path / ".orchestrator" / "models.yaml"
    out = _run_with_models(project, f"prices: {{ {model}: {{ input: 0, output: 0 }} }}\n", planted)
    assert out.returncode == 2, out.stderr
    assert f"models.yaml: prices.{model}.input: 0 is below the built-in price 2" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "count-worker").exists()  # nothing ran


@pytest.mark.parametrize(
    ("models", "change"),
    [
        (
            "prices: { claude-sonnet-5-5: { input: 3.0 } }\n",
            "price of claude-sonnet-5-5: input 3, output 10, cache_write 2.5, cache_read 0.1",
        ),
        ("aliases: { local: my-llama }\n", "alias local -> my-llama (new)"),
    ],
)
def test_control_a_found_higher_price_or_new_alias_is_accepted_and_announced(
    tmp_path: Path, models: str, change: str
) -> None:
    project = RepoProject(tmp_path)
    out = _run_with_models(project, models, tmp_path / ".orchestrator" / "models.yaml")
    assert out.returncode == 0, out.stderr
    assert change in out.stderr
    assert _started(project)["models_file"]["changes"] == [change]


def test_attack_an_alias_bomb_in_a_found_models_file_is_refused(tmp_path: Path) -> None:
    project = RepoProject(tmp_path)
    anchors = ALIAS_BOMB.split("\n", 2)[2]  # the recording's anchors, without its header
    planted = tmp_path / ".orchestrator" / "models.yaml"
    planted.write_text(anchors.replace("steps: *l8", "aliases: { sonnet: *l8 }"))
    project.graph(LOOP_GRAPH, "loop")
    project.script(worker=[reply("done", note="ok")])
    out = subprocess.run(
        project.cmd("run", "graphs/loop.yaml", "-i", "task=x"),
        cwd=project.root,
        env=project.env(),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limited(1500),
    )
    assert out.returncode == 2, out.stderr
    assert "models.yaml: invalid YAML" in out.stderr and "alias" in out.stderr
    assert "Traceback" not in out.stderr


def test_control_the_users_own_models_file_is_trusted(tmp_path: Path) -> None:
    """$ORCHESTRATOR_HOME/models.yaml is the user's: a zero price there is their choice."""
    project = Project(tmp_path)
    out = _run_with_models(
        project,
        "prices: { claude-sonnet-5-5: { input: 0, output: 0 } }\n",
        project.store / "models.yaml",
    )
    assert out.returncode == 0, out.stderr
    assert "models file" not in out.stderr
    assert "models_file" not in _started(project)


# --------------------------------------------------------------------------- extends

ROLE_FILE = "description: From {where}\ngoal: You {where}.\n"
STATUS = (
    "{type: object, properties: {$status: {const: done}, notes: {type: string}}, "
    "required: [$status, notes]}"
)


def _extending(extends: str) -> str:
    return textwrap.dedent(
        f"""\
        name: review
        description: one review
        roles:
          reviewer:
            extends: "{extends}"
            frontmatter: {STATUS}
        graph:
          $START:
            _: {{role: reviewer, prompt: "Review"}}
          reviewer:
            done: {{role: $END, prompt: "ok"}}
        """
    )


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository (the working folder) with graphs/ and roles/; files outside it; no home."""
    root = tmp_path / "work" / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "graphs").mkdir()
    (root / "roles").mkdir()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(root)
    (tmp_path / "outside.yaml").write_text(ROLE_FILE.format(where="outside"))
    (tmp_path / "outside.md").write_text("---\ndescription: outside\n---\nYou are outside.\n")
    return root


def _load(repo: Path, extends: str) -> Graph:
    path = repo / "graphs" / "review.yaml"
    path.write_text(_extending(extends))
    return load_graph(path)


def _refusal(repo: Path, extends: str, code: str = "unknown-extends") -> Problem:
    with pytest.raises(GraphError) as err:
        _load(repo, extends)
    (problem,) = [p for p in err.value.problems if p.code == code]
    return problem


@pytest.mark.parametrize(
    "extends", ["../../outside", "../../../outside", "ABS/outside", "claude:../../../../outside"]
)
def test_attack_extends_with_a_path_is_refused_at_its_line(repo: Path, extends: str) -> None:
    extends = extends.replace("ABS", str(repo.parents[1]))
    problem = _refusal(repo, extends)
    assert problem.file.endswith("review.yaml") and problem.line == 5
    assert "is not a role name" in problem.message


def test_attack_a_library_role_linking_out_is_refused(repo: Path) -> None:
    (repo / "roles" / "evil.yaml").symlink_to(repo.parents[1] / "outside.yaml")
    problem = _refusal(repo, "evil")
    assert (
        problem.line == 5
        and "through a symbolic link, out of its folder or project" in problem.message
    )
    listed = {e.name: e for e in available_roles(repo)}
    assert listed["evil"].description == "(refused: a link out of its folder)"


def test_attack_an_agent_file_linking_out_is_refused(repo: Path) -> None:
    (repo / ".claude" / "agents").mkdir(parents=True)
    (repo / ".claude" / "agents" / "evil.md").symlink_to(repo.parents[1] / "outside.md")
    problem = _refusal(repo, "claude:evil")
    assert "through a symbolic link, out of its folder or project" in problem.message


def test_attack_a_library_or_agent_folder_linking_out_of_the_project_is_refused(
    repo: Path,
) -> None:
    elsewhere = repo.parents[1] / "elsewhere"
    (elsewhere / "agents").mkdir(parents=True)
    (elsewhere / "secret.yaml").write_text(ROLE_FILE.format(where="a secret"))
    (elsewhere / "agents" / "secret.md").write_text("---\ndescription: s\n---\nA secret.\n")
    (repo / "roles").rmdir()
    (repo / "roles").symlink_to(elsewhere)
    assert "out of its folder or project" in _refusal(repo, "secret").message
    (repo / ".claude").mkdir()
    (repo / ".claude" / "agents").symlink_to(elsewhere / "agents")
    assert "out of its folder or project" in _refusal(repo, "claude:secret").message


def test_control_the_users_home_agent_folder_may_be_a_link(repo: Path, tmp_path: Path) -> None:
    """Dotfiles managers link ~/.claude/agents: the home is the user's, not the repository's."""
    dotfiles = tmp_path / "dotfiles" / "agents"
    dotfiles.mkdir(parents=True)
    (dotfiles / "mine.md").write_text("---\ndescription: mine\n---\nYou are mine.\n")
    (tmp_path / "home" / ".claude").mkdir()
    (tmp_path / "home" / ".claude" / "agents").symlink_to(dotfiles)
    assert _load(repo, "claude:mine").roles["reviewer"].goal == "You are mine.\n"


def test_attack_a_library_roles_own_extends_is_confined_too(repo: Path) -> None:
    (repo / "roles" / "base.yaml").write_text("description: base\nextends: ../../outside\n")
    problem = _refusal(repo, "base")
    assert problem.file == str(Path("roles") / "base.yaml") and problem.line == 2


def test_control_extends_inside_libraries_and_agent_folders_works(repo: Path) -> None:
    (repo / "roles" / "mine.yaml").write_text(ROLE_FILE.format(where="review"))
    assert _load(repo, "mine").roles["reviewer"].goal == "You review."
    (repo / "roles" / "linked.yaml").symlink_to(repo / "roles" / "mine.yaml")  # inside: fine
    assert _load(repo, "linked").roles["reviewer"].goal == "You review."
    assert "plan" in _load(repo, "planner").roles["reviewer"].goal.lower()  # bundled
    (repo / ".claude" / "agents").mkdir(parents=True)
    (repo / ".claude" / "agents" / "rev.md").write_text("---\ndescription: r\n---\nYou check.\n")
    assert _load(repo, "claude:rev").roles["reviewer"].goal == "You check.\n"
    # The same outside file is a fine role once it is in the library: only the place is refused.
    (repo / "roles" / "outside.yaml").write_text((repo.parents[1] / "outside.yaml").read_text())
    assert _load(repo, "outside").roles["reviewer"].description == "From outside"


# --------------------------------------------------------------------------- agent files' limits


def test_attack_a_huge_agent_file_is_refused_before_it_is_read(repo: Path) -> None:
    (repo / ".claude" / "agents").mkdir(parents=True)
    huge = repo / ".claude" / "agents" / "huge.md"
    with huge.open("wb") as f:  # sparse: 20 MB that take no room
        f.truncate(20_000_000)
    problem = _refusal(repo, "claude:huge", "yaml-limit")
    assert "more than the 10,000,000 an agent file may have" in problem.message


AGENT = """\
---
name: auditor
description: Audits code without changing it.
tools: Read, Grep, Edit, Bash
{extra}---
You audit.
"""


def _agent_role(repo: Path, extra: str) -> list[str]:
    (repo / ".claude" / "agents").mkdir(parents=True, exist_ok=True)
    (repo / ".claude" / "agents" / "auditor.md").write_text(AGENT.format(extra=extra))
    return list(_load(repo, "claude:auditor").roles["reviewer"].tools)


@pytest.mark.parametrize(
    "extra",
    [
        "disallowedTools: [Edit, Bash]\n",
        "disallowedTools: Edit, Bash(rm:*)\n",
        "permissionMode: plan\n",
    ],
)
def test_attack_a_read_only_agent_gets_no_edit_and_no_shell(repo: Path, extra: str) -> None:
    assert _agent_role(repo, extra) == ["read"]


def test_control_the_same_agent_without_those_keys_keeps_its_tools(repo: Path) -> None:
    assert _agent_role(repo, "") == ["read", "edit", "shell"]
    assert _agent_role(repo, "permissionMode: acceptEdits\n") == ["read", "edit", "shell"]


def test_an_unreadable_disallowed_tools_is_an_error_not_nothing(repo: Path) -> None:
    with pytest.raises(GraphError) as err:
        _agent_role(repo, "disallowedTools: 3\n")
    assert [p.code for p in err.value.problems] == ["bad-type"]


def test_the_roles_command_shows_what_was_taken_away(repo: Path) -> None:
    _agent_role(repo, "permissionMode: plan\ndisallowedTools: [Bash]\n")
    runner = CliRunner()
    done = runner.invoke(cli, ["roles", "graphs/review.yaml"])
    assert done.exit_code == 0, done.output
    assert "tools      read\n" in done.output
    assert "limited by disallowedTools: Bash; permissionMode: plan (read-only)" in done.output
    listed = json.loads(runner.invoke(cli, ["roles", "--format", "json"]).output)["roles"]
    (auditor,) = [e for e in listed if e["name"] == "claude:auditor"]
    assert auditor["tools"] == ["read"] and len(auditor["restrictions"]) == 2


@pytest.mark.parametrize("extra", ["permissionMode: plan\n", ""])
def test_a_thread_of_a_plan_mode_agent_is_offered_no_shell(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str
) -> None:
    """Through the real actor and the fake Messages API: in plan mode the model is offered the
    read set only (the editor, which that set lets view and not change, and search); the control
    without the key is offered the shell."""
    _agent_role(repo, extra)
    with fake_server(monkeypatch) as fake:
        fake.reply_text("---\n$status: done\nnotes: fine\n---\nAudited.")
        result = run_thread(
            repo / "graphs" / "review.yaml",
            {"task": "audit"},
            store=SqliteStore(tmp_path / "store"),
            workspace=repo,
            in_place=True,
        )
        (request,) = fake.message_requests
    assert result.state.value == "completed", result.reason
    offered = {t["name"] for t in request.get("tools", [])}
    if extra:
        assert offered == {"str_replace_based_edit_tool", "search_files"}
    else:
        assert offered == {"str_replace_based_edit_tool", "search_files", "bash"}
