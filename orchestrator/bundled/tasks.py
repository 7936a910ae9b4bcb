"""The Python actors of the bundled `implement-tasks` graph: pick the next task, record its end.

`tasks.json`, at the root of the thread's workspace, is written by the task planner:

    [{"id": "T1", "title": "...", "description": "...", "depends_on": []}, ...]

`pick_next` reads it and names the first task (in file order) that has not ended and whose
dependencies are all done; `record_outcome` writes a solved task's `status` (`done`, or the
subgraph's other ending, such as `stopped`) and `summary` back into it. The file is the loop's
memory: a person can read it, edit it, and resume the thread.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..actors.python import ActorCall

TASKS_FILE = "tasks.json"


class TasksError(ValueError):
    """tasks.json is missing or not a list of tasks; the message says what is wrong."""


def read_tasks(workspace: Path) -> list[dict[str, Any]]:
    """The tasks of `workspace/tasks.json`, checked. Raises TasksError."""
    path = workspace / TASKS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TasksError(f"{TASKS_FILE} is not in the workspace") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TasksError(f"{TASKS_FILE} cannot be read as JSON: {exc}") from None
    if not isinstance(data, list) or not data:
        raise TasksError(f"{TASKS_FILE} must be a non-empty JSON list of tasks")
    problems: list[str] = []
    seen: set[str] = set()
    for n, task in enumerate(data, 1):
        if not isinstance(task, dict):
            problems.append(f"entry {n} is not an object")
            continue
        tid = task.get("id")
        if not isinstance(tid, str) or not tid:
            problems.append(f"entry {n} has no string `id`")
            continue
        if tid in seen:
            problems.append(f"id '{tid}' is used twice")
        seen.add(tid)
        if not isinstance(task.get("title"), str):
            problems.append(f"task '{tid}' has no string `title`")
        deps = task.get("depends_on", [])
        if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
            problems.append(f"task '{tid}': `depends_on` must be a list of ids")
    for task in data:
        if isinstance(task, dict) and isinstance(task.get("depends_on"), list):
            for dep in task["depends_on"]:
                if isinstance(dep, str) and dep not in seen:
                    problems.append(f"task '{task.get('id')}' depends on '{dep}', which is no task")
    if problems:
        raise TasksError(f"{TASKS_FILE}: " + "; ".join(problems))
    return data


def pick_next(call: ActorCall) -> dict[str, Any]:
    """`next` (the task to solve), `all_done`, `blocked` (what is left waits on tasks that did
    not end `done`, or on each other), or `invalid` (tasks.json is not right: the planner fixes
    it)."""
    try:
        tasks = read_tasks(call.workspace)
    except TasksError as exc:
        return {"$status": "invalid", "errors": str(exc)}
    status = {t["id"]: t.get("status") for t in tasks}
    left = [t for t in tasks if status[t["id"]] is None]
    for task in left:
        if all(status[dep] == "done" for dep in task.get("depends_on", [])):
            return {
                "$status": "next",
                "id": task["id"],
                "title": task["title"],
                "description": str(task.get("description") or task["title"]),
                "$body": f"{len(left)} task(s) left; next: {task['id']} {task['title']}",
            }
    done = [tid for tid, s in status.items() if s == "done"]
    if not left:
        others = [f"{tid} ({s})" for tid, s in status.items() if s != "done"]
        return {"$status": "all_done", "done": done, "not_done": others}
    failed = sorted(
        {d for t in left for d in t.get("depends_on", []) if status[d] not in (None, "done")}
    )
    reason = (
        f"they depend on tasks that did not end done: {', '.join(failed)}"
        if failed
        else "they depend on each other in a cycle"
    )
    return {"$status": "blocked", "blocked": [t["id"] for t in left], "reason": reason}


def record_outcome(call: ActorCall) -> dict[str, Any]:
    """Write the solved task's outcome (the subgraph's ending) and summary into tasks.json."""
    picked = call.latest("picker")
    solved = call.latest("solve")
    if picked is None or solved is None:
        raise RuntimeError("record_outcome runs after the picker and the solve step")
    tid = str(picked.frontmatter["id"])
    tasks = read_tasks(call.workspace)
    for task in tasks:
        if task["id"] == tid:
            task["status"] = solved.status
            task["summary"] = solved.body.strip()[:2000]
    path = call.workspace / TASKS_FILE
    scratch = path.with_suffix(".json.tmp")
    scratch.write_text(json.dumps(tasks, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(scratch, path)  # whole or not at all: a crash never leaves half a file
    return {"$status": "recorded", "id": tid, "outcome": solved.status}
