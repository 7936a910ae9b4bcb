"""`orchestrator eval`: suites of cases run on Python-actor graphs (deterministic), judged by
every kind of expectation; A/B variants, repeats with pass^k, Ctrl-C and resume, rescoring."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.evals.api import evaluate
from orchestrator.evals.results import read
from orchestrator.evals.runner import EvalError
from orchestrator.evals.suite import SuiteError, load_suite
from orchestrator.store.sqlite import SqliteStore
from tests.eval_project import make_project

ROOT = Path(__file__).parents[1]


def cli(args: list[str], cwd: Path, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "eval", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        **kw,  # type: ignore[arg-type]
    )


def verdicts(record: dict[str, object]) -> dict[str, bool]:
    return {v["name"]: v["passed"] for v in record["verdicts"]}  # type: ignore[index,attr-defined]


def test_a_suite_with_every_kind_of_expectation(tmp_path: Path) -> None:
    suite = make_project(tmp_path / "p", ["hello", "boom"])
    outcome = evaluate(suite, folder=tmp_path / "out")
    by_case = {r["case"]: r for r in outcome.records}
    assert verdicts(by_case["hello"]) == {
        "completed": True,
        "ending": True,
        "path_contains": True,
        "fields:$steps.checker.result": True,
        "max_cost_usd": True,
        "command": True,
        "python": True,
        "judge": True,
    }
    assert by_case["hello"]["passed"] and by_case["hello"]["judge"]["verdict"]["score"] == 0.9
    boom = verdicts(by_case["boom"])  # stuck: failed thread, wrong ending, no checker
    assert not boom["completed"] and not boom["ending"] and not boom["path_contains"]
    assert not boom["fields:$steps.checker.result"] and not boom["command"]
    assert boom["max_cost_usd"]  # a verdict that fails alone is alone
    assert outcome.summaries[0].pass_rate == 0.5
    # Every run is an ordinary thread of the eval's store, exported as a recording beside it.
    store = SqliteStore(tmp_path / "out" / "store")
    assert store.thread(by_case["hello"]["thread"]).state == "completed"
    recording = (tmp_path / "out" / by_case["hello"]["recording"]).read_text()
    assert "graph: a" in recording and "role: checker" in recording
    # The case's folder was copied for the run, never changed.
    assert not (tmp_path / "p" / "repo" / "answer.txt").exists()
    assert (tmp_path / "out" / "runs" / "a" / "hello" / "1" / "workspace" / "answer.txt").exists()


def test_a_git_repository_is_cloned_for_each_run(tmp_path: Path) -> None:
    suite = make_project(tmp_path / "p", ["hello"])
    repo = tmp_path / "p" / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "."], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "base"], check=True)
    (repo / "uncommitted").write_text("not in the clone\n")
    outcome = evaluate(suite, folder=tmp_path / "out")
    assert outcome.all_passed
    ws = tmp_path / "out" / "runs" / "a" / "hello" / "1" / "workspace"
    assert (ws / ".git").is_dir() and (ws / "README").exists()
    assert not (ws / "uncommitted").exists()  # a clone: the committed files only
    status = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True
    )
    assert "answer.txt" not in status.stdout  # the source repository is untouched


def test_an_ab_run_of_two_graph_files_shows_the_case_that_differs(tmp_path: Path) -> None:
    suite = make_project(tmp_path / "p", ["hello", "level"])
    done = cli(
        [str(suite), "--graph", "a.yaml", "--graph", "b.yaml", "--out", "ab"], tmp_path / "p"
    )
    assert done.returncode == 1, done.stderr  # b fails "hello"
    assert "differ between variants: hello" in done.stdout
    lines = done.stdout.splitlines()
    assert any(line.split()[:3] == ["a", "2", "100%"] for line in lines), done.stdout
    assert any(line.split()[:3] == ["b", "2", "50%"] for line in lines), done.stdout
    assert any(line.split() == ["hello", "1/1", "0/1"] for line in lines), done.stdout
    as_json = cli(
        [str(suite), "--graph", "a.yaml", "--graph", "b.yaml", "--out", "ab", "--json"],
        tmp_path / "p",
    )
    summaries = [json.loads(x)["summary"] for x in as_json.stdout.splitlines() if "summary" in x]
    assert [(s["variant"], s["pass_rate"]) for s in summaries] == [("a", 1.0), ("b", 0.5)]
    # Continued, not run again: each word's worker was called once per variant.
    assert (tmp_path / "p" / "count-hello").read_text() == "2"


def test_repeat_three_gives_pass_hat_k(tmp_path: Path) -> None:
    suite = make_project(tmp_path / "p", ["flaky", "level"])
    outcome = evaluate(suite, folder=tmp_path / "out", repeat=3, concurrency=1)
    flaky = [r["passed"] for r in outcome.records if r["case"] == "flaky"]
    assert sorted(flaky) == [False, True, True]  # the second call writes "oops"
    summary = outcome.summaries[0]
    assert (summary.runs, summary.passed) == (6, 5)
    assert summary.pass_k == 0.5  # level passes every repeat, flaky does not


def test_ctrl_c_keeps_the_judged_runs_and_the_same_command_continues(tmp_path: Path) -> None:
    project = tmp_path / "p"
    suite = make_project(project, ["fast", "slow", "two"])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "orchestrator", "eval", str(suite), "--concurrency", "1"]
    proc = subprocess.Popen(
        args, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        for _ in range(600):  # the slow case's worker has started (the fast one is judged)
            if (project / "started-slow").exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert (project / "started-slow").exists(), proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, err
    assert "continue with the same command" in err
    folder = Path(os.environ["ORCHESTRATOR_HOME"]) / "evals" / "p"  # the default
    assert set(read(folder)) == {"a/fast/1"}  # judged before the interruption, kept
    slow_thread = (folder / "runs" / "a" / "slow" / "1" / "thread").read_text().strip()
    store = SqliteStore(folder / "store")
    assert store.thread(slow_thread).state == "suspended"
    store.close()

    (project / "release").write_text("")
    again = cli([str(suite), "--concurrency", "1"], project)
    assert again.returncode == 0, again.stderr
    records = read(folder)
    assert set(records) == {"a/fast/1", "a/slow/1", "a/two/1"}
    assert records["a/slow/1"]["thread"] == slow_thread  # resumed, not started again
    assert (project / "count-fast").read_text() == "1"  # a judged run is not run again


def test_rescore_judges_stored_runs_again_without_calling_any_model(tmp_path: Path) -> None:
    suite = make_project(tmp_path / "p", ["hello", "level"])
    first = evaluate(suite, folder=tmp_path / "out")
    assert first.all_passed
    judged = (tmp_path / "p" / "judge-calls").read_text()
    # The scorer changes its mind: answers of at most 3 characters only.
    scorers = tmp_path / "p" / "scorers.py"
    scorers.write_text(scorers.read_text().replace("LIMIT = 10", "LIMIT = 3"))
    env_key = os.environ.pop("ANTHROPIC_API_KEY", None)
    try:
        done = cli([str(suite), "--rescore", str(tmp_path / "out")], tmp_path / "p")
    finally:
        if env_key is not None:
            os.environ["ANTHROPIC_API_KEY"] = env_key
    assert done.returncode == 1, done.stderr
    records = read(tmp_path / "out")
    assert not verdicts(records["a/hello/1"])["python"]
    assert records["a/hello/1"]["judge"]["verdict"]["score"] == 0.9  # kept, not asked again
    assert (tmp_path / "p" / "judge-calls").read_text() == judged
    assert (tmp_path / "p" / "count-hello").read_text() == "1"  # no role played again
    assert records["a/hello/1"]["thread"] == first.records[0]["thread"]


def test_suite_mistakes_name_their_file_and_line(tmp_path: Path) -> None:
    suite = make_project(tmp_path / "p", ["hello"])
    suite.write_text(suite.read_text().replace("max_cost_usd: 0.5", "max_cost: 0.5"))
    with pytest.raises(SuiteError) as err:
        load_suite(suite)
    assert f"{suite}:13: unknown expectation 'max_cost'" in str(err.value)
    cases = tmp_path / "p" / "cases.jsonl"
    cases.write_text('{"id": "a", "inputs": {"word": "x"}}\nnot json\n{"id": 3}\n')
    suite.write_text("eval: 1\ngraph: a.yaml\ncases: cases.jsonl\n")
    with pytest.raises(SuiteError) as err:
        load_suite(suite)
    assert f"{cases}:2: not JSON" in str(err.value)
    assert f"{cases}:3: every case needs an `id`" in str(err.value)
    done = cli([str(suite)], tmp_path / "p")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{cases}:2: not JSON" in done.stderr


def test_inputs_wrong_for_the_graph_start_nothing(tmp_path: Path) -> None:
    suite = make_project(tmp_path / "p", ["hello"])
    suite.write_text(suite.read_text().replace("inputs: { word: hello }", "inputs: { wurd: 1 }"))
    done = cli([str(suite), "--out", "o"], tmp_path / "p")
    assert done.returncode == 2, done.stderr
    assert f"{suite}:" in done.stderr and "case 'hello' on a" in done.stderr
    assert not (tmp_path / "p" / "o").exists()


LIBRARY_JUDGE = """---
description: Scores a run from the role library
goal: You score runs.
actor: { python: "players:judge" }
frontmatter:
  type: object
  properties:
    score: { type: number }
    reason: { type: string }
  required: [score, reason]
---
Score the run.
"""


def test_a_judge_from_the_role_library_scores_the_run(tmp_path: Path) -> None:
    suite = make_project(tmp_path / "p", ["hello"])
    (tmp_path / "p" / "roles").mkdir()
    (tmp_path / "p" / "roles" / "grader.md").write_text(LIBRARY_JUDGE)
    suite.write_text(
        suite.read_text().replace("judge: judge", "judge: { role: grader, min_score: 0.95 }")
    )
    outcome = evaluate(suite, folder=tmp_path / "out")
    record = outcome.records[0]
    assert record["judge"]["verdict"]["score"] == 0.9
    assert not verdicts(record)["judge"]  # 0.9 is under the case's min_score
    judge_thread = SqliteStore(tmp_path / "out" / "store").thread(record["judge"]["thread"])
    assert judge_thread.graph == "eval-judge"


def test_a_judge_without_the_score_contract_is_refused_before_any_run(tmp_path: Path) -> None:
    suite = make_project(tmp_path / "p", ["hello"])
    suite.write_text(suite.read_text().replace("judge: judge", "judge: checker"))
    done = cli([str(suite), "--out", "o"], tmp_path / "p")
    assert done.returncode == 2, done.stderr
    assert "judge 'checker': a judge role has no statuses" in done.stderr
    assert f"{suite}:" in done.stderr
    assert not (tmp_path / "p" / "count-hello").exists()  # nothing ran


def test_graphs_and_models_cross_into_variants(tmp_path: Path) -> None:
    suite = make_project(tmp_path / "p", ["level"])
    graphs = [str(tmp_path / "p" / "a.yaml"), str(tmp_path / "p" / "b.yaml")]
    outcome = evaluate(suite, folder=tmp_path / "out", graphs=graphs, models=["opus", "sonnet"])
    assert outcome.variants == ["a-opus", "a-sonnet", "b-opus", "b-sonnet"]
    assert [s.pass_rate for s in outcome.summaries] == [1.0] * 4
    # The same folder with other variants is another eval: refused, nothing run.
    with pytest.raises(EvalError, match="holds another eval"):
        evaluate(suite, folder=tmp_path / "out", models=["opus"])


def test_concurrency_bounds_the_runs_at_a_time(tmp_path: Path) -> None:
    words = [f"pair{i}" for i in range(1, 7)]
    suite = make_project(tmp_path / "p", words)
    outcome = evaluate(suite, folder=tmp_path / "out", concurrency=2)
    assert outcome.all_passed
    # Each worker waited for a second one beside it: two ran at once, never three.
    assert (tmp_path / "p" / "peak").read_text() == "2"
