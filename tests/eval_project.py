"""A project for eval tests: two graph files of Python actors (deterministic), a suite with
every kind of expectation, and switches in files (a slow case waits for `release`)."""

from __future__ import annotations

from pathlib import Path

GRAPH = """
name: {name}
description: A worker writes the answer, a checker looks at it.
inputs:
  type: object
  properties:
    word: {{ type: string }}
  required: [word]
roles:
  worker:
    description: Writes the answer
    goal: You write answers.
    actor: {{ python: "players:{worker}" }}
    frontmatter:
      type: object
      properties:
        $status: {{ enum: [done, stuck] }}
        answer: {{ type: string }}
      required: [$status, answer]
  checker:
    description: Checks the answer
    goal: You check.
    actor: {{ python: "players:checker" }}
    frontmatter:
      type: object
      properties:
        $status: {{ enum: [passed, failed] }}
        result: {{ type: string }}
      required: [$status, result]
  judge:
    description: Scores a run
    goal: You score runs.
    actor: {{ python: "players:judge" }}
    frontmatter:
      type: object
      properties:
        score: {{ type: number }}
        reason: {{ type: string }}
      required: [score, reason]
graph:
  $START:
    _: {{ role: worker, prompt: "Write {{{{{{$inputs.word}}}}}}." }}
  worker:
    done: {{ role: checker, prompt: "Check {{{{{{answer}}}}}}." }}
    stuck: {{ role: $END, ending: stuck, outcome: failure, prompt: "Stuck." }}
  checker:
    passed: {{ role: $END, ending: done, prompt: "Done: {{{{{{result}}}}}}" }}
    failed: {{ role: $END, ending: wrong, prompt: "Wrong: {{{{{{result}}}}}}" }}
"""

PLAYERS = '''
import asyncio, fcntl
from pathlib import Path

HERE = Path(__file__).parent


def _count(word):
    """How many times the worker was called for this word (a lock: runs are concurrent)."""
    with open(HERE / "counts.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        f = HERE / f"count-{word}"
        n = int(f.read_text()) + 1 if f.exists() else 1
        f.write_text(str(n))
        return n


def _shift(name, by, peak=None):
    """Add `by` to the counter `name` (or raise it to `peak`); its new value."""
    with open(HERE / "counts.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        f = HERE / name
        n = int(f.read_text()) if f.exists() else 0
        n = max(n, peak) if peak is not None else n + by
        f.write_text(str(n))
        return n


async def worker(call):
    word = call.inputs["word"]
    n = _count(word)
    if word == "slow":
        (HERE / "started-slow").write_text("")
        while not (HERE / "release").exists():
            await asyncio.sleep(0.05)
    if word.startswith("pair"):  # waits for a second one to run beside it
        active = _shift("active", +1)
        _shift("peak", 0, peak=active)
        for _ in range(600):
            if int((HERE / "active").read_text()) >= 2 or (HERE / "paired").exists():
                break
            await asyncio.sleep(0.05)
        (HERE / "paired").write_text("")
        _shift("active", -1)
    if word == "boom":
        return {"$status": "stuck", "answer": ""}
    answer = word
    if word == "flaky" and n == 2:
        answer = "oops"
    (call.workspace / "answer.txt").write_text(answer + "\\n")
    return {"$status": "done", "answer": answer}


async def worker_b(call):
    """Variant B: writes the word reversed (right for palindromes only)."""
    word = call.inputs["word"]
    _count(word)
    (call.workspace / "answer.txt").write_text(word[::-1] + "\\n")
    return {"$status": "done", "answer": word[::-1]}


def checker(call):
    found = (call.workspace / "answer.txt").exists()
    return {"$status": "passed" if found else "failed", "result": "ok" if found else "none"}


def judge(call):
    with open(HERE / "judge-calls", "a") as f:
        f.write("x")
    good = "Path: worker -> checker" in call.prompt and (call.workspace / "answer.txt").exists()
    return {"score": 0.9 if good else 0.1, "reason": "looks right" if good else "no"}
'''

SCORERS = """
def short_answer(run):
    text = (run.workspace / "answer.txt").read_text().strip()
    return {"score": 1.0 if len(text) <= LIMIT else 0.2, "reason": f"{len(text)} characters"}

LIMIT = 10
"""

SUITE = """
eval: 1
graph: a.yaml
defaults:
  workspace: repo
  expect:
    ending: done
    path_contains: [worker, checker]
    fields: {{ "$steps.checker.result": ok }}
    command: {{ run: "sh check.sh", copy: hidden }}
    python: "scorers:short_answer"
    judge: judge
    max_cost_usd: 0.5
cases:
{cases}
"""


WORDS = ["hello", "level", "flaky", "slow", "fast", "one", "two", "boom"]
WORDS += [f"pair{i}" for i in range(1, 7)]


def case(word: str) -> str:
    return f"  - {{ id: {word}, inputs: {{ word: {word} }} }}"


def make_project(root: Path, words: list[str]) -> Path:
    """The project folder; returns the suite's path."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.yaml").write_text(GRAPH.format(name="a", worker="worker"))
    (root / "b.yaml").write_text(GRAPH.format(name="b", worker="worker_b"))
    (root / "players.py").write_text(PLAYERS)
    (root / "scorers.py").write_text(SCORERS)
    (root / "repo").mkdir(exist_ok=True)
    (root / "repo" / "README").write_text("the case's workspace\n")
    (root / "hidden").mkdir(exist_ok=True)
    # The hidden check: the answer is a word of the list ("olleh" and "oops" are not).
    (root / "hidden" / "check.sh").write_text('grep -qxF "$(cat answer.txt)" words.txt\n')
    (root / "hidden" / "words.txt").write_text("\n".join(WORDS) + "\n")
    suite = root / "suite.yaml"
    suite.write_text(SUITE.format(cases="\n".join(case(w) for w in words)))
    return suite
