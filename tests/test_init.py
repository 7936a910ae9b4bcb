"""`orchestrator init`: a project that validates and whose generated tests pass as generated."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.bundled.starters import Starter, plan

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("template", [s.value for s in Starter])
def test_a_new_project_validates_and_its_tests_pass(tmp_path: Path, template: str) -> None:
    made = cli("init", "proj", "--template", template, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    project = tmp_path / "proj"
    assert "next steps are in README.md" in made.stdout
    folders = ["graphs/", "roles/"] if (project / "roles").is_dir() else ["graphs/"]
    checked = cli("validate", *folders, cwd=project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no problems" in checked.stdout
    tested = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "2 passed" in tested.stdout
    # The README's replay command works as written (no model, no key).
    readme = (project / "README.md").read_text()
    replay = next(line for line in readme.splitlines() if "--replay" in line)
    command = shlex.split(replay.split("`")[1])[1:]  # after `orchestrator`
    inputs = [a.replace("@ISSUE.md", "@README.md") for a in command]
    if "--workspace" in inputs:  # the solve-issue starter names a repository to work in
        at = inputs.index("--workspace")
        inputs[at + 1] = str(project)
    played = cli(*inputs, cwd=project)
    assert played.returncode == 0, played.stderr
    assert "a replay: the recorded replies were played back" in played.stderr


def test_a_change_that_breaks_the_route_fails_the_generated_test(tmp_path: Path) -> None:
    assert cli("init", "proj", cwd=tmp_path).returncode == 0
    project = tmp_path / "proj"
    graph = project / "graphs" / "review.yaml"
    # The reviewer's rejection now ends the thread: the recording's route is gone.
    graph.write_text(
        graph.read_text().replace(
            'rejected: { role: writer, prompt: "Revise your draft. The reviewer says:\\n\\n'
            '{{{comments}}}" }',
            'rejected: { role: $END, ending: rejected, prompt: "{{{comments}}}" }',
        )
    )
    tested = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert tested.returncode == 1, tested.stdout
    assert "diverges at step 3" in tested.stdout


def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("mine\n")
    made = cli("init", "--template", "blank", cwd=tmp_path)
    assert made.returncode == 2
    assert "already has README.md: nothing was written" in made.stderr
    assert "Traceback" not in made.stderr
    assert (tmp_path / "README.md").read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md"]


def test_init_does_not_write_through_a_planted_link(tmp_path: Path) -> None:
    """A link where a file would go (a repository can hold one) is refused, not followed."""
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pytest.ini").symlink_to(outside)
    made = cli("init", "proj", cwd=tmp_path)
    assert made.returncode == 2
    assert "pytest.ini" in made.stderr
    assert outside.read_text() == "keep\n"
    # Control: without the link, the same command writes the project.
    (project / "pytest.ini").unlink()
    assert cli("init", "proj", cwd=tmp_path).returncode == 0
    assert (project / "pytest.ini").read_text().startswith("[pytest]")


def test_init_does_not_write_through_a_planted_folder_link(tmp_path: Path) -> None:
    """A link where a folder of the project would go is refused too: `mkdir` and `open` would
    follow it out of the project."""
    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    (project / "tests").symlink_to(outside, target_is_directory=True)
    made = cli("init", "proj", cwd=tmp_path)
    assert made.returncode == 2
    assert "tests/test_review.py" in made.stderr
    assert list(outside.iterdir()) == []
    # Control: the same command writes the project once the link is gone.
    (project / "tests").unlink()
    assert cli("init", "proj", cwd=tmp_path).returncode == 0
    assert (project / "tests" / "test_review.py").is_file()


def test_init_into_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    made = cli("init", "f", cwd=tmp_path)
    assert made.returncode == 2
    assert "is a file, not a folder" in made.stderr


def test_the_starters_recordings_are_current(tmp_path: Path) -> None:
    """The shipped recordings match their graphs as tools/make_starter_recordings.py makes them,
    and the solve-issue starter's is the example's real run."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import make_starter_recordings as maker
    finally:
        sys.path.pop(0)
    for (starter, graph_file, name), (inputs, replies) in maker.SCRIPTS.items():
        folder = maker.STARTERS / starter
        shipped = (folder / "tests" / "recordings" / name).read_text()
        assert maker.record(folder, graph_file, inputs, replies) == shipped, name
    solve = plan(Starter.SOLVE_ISSUE, "x")
    example = (ROOT / "examples" / "solve-issue.recording.yaml").read_text()
    assert solve["tests/recordings/median-even-count.yaml"] == example
