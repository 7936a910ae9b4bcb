"""docs/api.md's example runs as written: a web service where a person answers a thread.

The page's three files (`graphs/review.yaml`, `graphs/drafting.py`, `service.py`) are written to
a folder as they stand in the page; the service runs as its own process (`python service.py`,
uvicorn on 127.0.0.1) over a real SQLite store; the test is the person, over HTTP: it starts a
thread, sees what it asks, has a wrong answer refused, follows the thread's events while it
answers, and stops the service, which closes its client.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.temporal_helpers import free_port

PAGE = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def example_files() -> dict[str, str]:
    text = PAGE.read_text(encoding="utf-8")
    found = re.findall(r"^File `([^`]+)`:\n\n```\w+\n(.*?)^```", text, flags=re.M | re.S)
    return dict(found)


def call(url: str, data: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    body = json.dumps(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, method="POST" if body else "GET")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_pages_example_has_its_three_files() -> None:
    assert set(example_files()) == {"graphs/review.yaml", "graphs/drafting.py", "service.py"}


def test_the_web_service_of_the_example_lets_a_person_answer(tmp_path: Path) -> None:
    for name, text in example_files().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    port = free_port()
    env = {**os.environ, "PORT": str(port), "REVIEW_STORE": str(tmp_path / "store")}
    log = (tmp_path / "service.log").open("w")
    service = subprocess.Popen(
        [sys.executable, "service.py"], cwd=tmp_path, env=env, stdout=log, stderr=log
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while "Uvicorn running" not in (tmp_path / "service.log").read_text():
            assert service.poll() is None and time.monotonic() < deadline, (
                tmp_path / "service.log"
            ).read_text()
            time.sleep(0.1)

        status, bad = call(f"{base}/threads", {"subject": "x"})
        assert status == 422 and "text" in bad["error"]
        status, thread = call(f"{base}/threads", {"text": "the late invoice"})
        assert status == 201, thread
        assert thread["state"] == "waiting"
        assert thread["question"]["prompt"] == (
            "Approve this reply? Thank you for writing about the late invoice."
        )
        assert thread["question"]["statuses"] == ["approved", "change"]
        tid = thread["thread"]
        assert call(f"{base}/threads/nope")[0] == 404

        status, refused = call(f"{base}/threads/{tid}/answer", {"status": "maybe", "fields": {}})
        assert status == 409 and refused["errors"], refused
        assert call(f"{base}/threads/{tid}")[1]["state"] == "waiting"

        lines: list[dict[str, Any]] = []

        def follow() -> None:  # the events, followed while the person answers
            with urllib.request.urlopen(f"{base}/threads/{tid}/events", timeout=60) as stream:
                for line in stream:
                    lines.append(json.loads(line))

        follower = threading.Thread(target=follow)
        follower.start()
        deadline = time.monotonic() + 60
        while not any(e["event"] == "HumanWaiting" for e in lines):
            assert time.monotonic() < deadline, lines
            time.sleep(0.05)
        status, changed = call(
            f"{base}/threads/{tid}/answer",
            {"status": "change", "fields": {"note": "Payment is due Friday."}},
        )
        assert status == 200 and changed["state"] == "waiting", changed
        assert changed["question"]["prompt"].endswith("Payment is due Friday.")
        status, done = call(
            f"{base}/threads/{tid}/answer", {"status": "approved", "fields": {"note": "send it"}}
        )
        assert status == 200 and done["state"] == "completed", done
        assert done["final"] == "Approved: send it"
        assert done["path"] == ["drafter", "reviewer", "drafter", "reviewer", "$END"]
        follower.join(timeout=60)
        assert not follower.is_alive()
        names = [e["event"] for e in lines]
        assert names[0] == "ThreadStarted" and names[-1] == "ThreadCompleted"
        assert names.count("HumanWaiting") == 2  # seen before each answer
        assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=30)
        log.close()
    # uvicorn shuts down (the lifespan closes the client), then dies of the signal it got.
    said = (tmp_path / "service.log").read_text()
    assert service.returncode in (0, -signal.SIGTERM) and "shutdown complete" in said, said
    assert "Traceback" not in said, said
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "threads",
            "list",
            "--store",
            str(tmp_path / "store"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert tid in shown.stdout and "completed" in shown.stdout
