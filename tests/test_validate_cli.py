"""`orchestrator validate` as a user runs it: paths, output formats, summaries, exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from orchestrator.cli import cli

CASES = Path(__file__).parent / "lint_cases"
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "uwf"
LINE = re.compile(
    r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning)\[(?P<code>[a-z-]+)\]: .+$"
)

ROLE_YAML = """\
description: Reviews a change
goal: You review.
frontmatter:
  type: object
  properties:
    $status: { enum: [approved, rejected] }
    comments: { type: string }
  required: [$status, comments]
"""

GRAPH = """\
name: {name}
description: review only
roles:
  reviewer:
    extends: reviewer
graph:
  $START:
    _: {{ role: reviewer, prompt: "Review {{{{{{$inputs.task}}}}}}" }}
  reviewer:
    approved: {{ role: $END, prompt: "Approved: {{{{{{comments}}}}}}" }}
    rejected: {{ role: $END, prompt: "Rejected: {{{{{{comments}}}}}}" }}
"""


def project(root: Path, *, graph: str | None = None, name: str = "review") -> Path:
    """A project folder with graphs/NAME.yaml and roles/reviewer.yaml."""
    (root / "graphs").mkdir(parents=True, exist_ok=True)
    (root / "roles").mkdir(exist_ok=True)
    (root / "roles" / "reviewer.yaml").write_text(ROLE_YAML, encoding="utf-8")
    text = graph if graph is not None else GRAPH.format(name=name)
    (root / "graphs" / f"{name}.yaml").write_text(text, encoding="utf-8")
    return root


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["validate", *args])


def test_defaults_to_graphs_and_roles_and_says_ok(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project(tmp_path))
    result = run()
    assert result.exit_code == 0, result.output
    assert result.output == "ok: 2 files, no problems\n"


def test_errors_read_like_a_compiler_and_exit_1(tmp_path: Path) -> None:
    bad = GRAPH.format(name="review").replace("{{{comments}}}", "{{{coments}}}", 1)
    project(tmp_path, graph=bad)
    result = run(str(tmp_path / "graphs"))
    assert result.exit_code == 1
    lines = result.output.splitlines()
    match = LINE.match(lines[0])
    assert match, lines[0]
    assert match["file"] == str(tmp_path / "graphs" / "review.yaml")
    assert (match["line"], match["sev"], match["code"]) == ("10", "error", "template-var")
    assert lines[1] == "    hint: did you mean 'comments'?"
    assert lines[-1] == "1 error, 0 warnings in 1 file"


def test_warnings_only_exit_0_with_a_summary(tmp_path: Path) -> None:
    warn = GRAPH.format(name="review").replace("{{{comments}}}", "{{comments}}", 1)
    project(tmp_path, graph=warn)
    result = run(str(tmp_path))
    assert result.exit_code == 0
    assert "warning[html-escape]" in result.output
    assert result.output.splitlines()[-1] == "0 errors, 1 warning in 2 files"


def test_json_format(tmp_path: Path) -> None:
    bad = GRAPH.format(name="other").replace("{{{comments}}}", "{{comments}}", 1)
    project(tmp_path, graph=bad, name="review")
    result = run(str(tmp_path), "--format", "json")
    assert result.exit_code == 1
    problems = json.loads(result.output)["problems"]
    assert [(p["code"], p["severity"]) for p in problems] == [
        ("name-mismatch", "error"),
        ("html-escape", "warning"),
    ]
    assert set(problems[0]) == {"code", "severity", "file", "line", "column", "message", "hint"}


def test_json_format_when_clean(tmp_path: Path) -> None:
    result = run(str(project(tmp_path)), "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.output) == {"problems": []}


def test_a_missing_path_exits_2(tmp_path: Path) -> None:
    result = run(str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2
    assert "error[unreadable]" in result.output
    assert "no such file" in result.output


def test_no_defaults_here_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run()
    assert result.exit_code == 2
    assert "no ./graphs or ./roles" in result.output


def test_a_folder_with_nothing_to_check_exits_2(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    result = run(str(tmp_path))
    assert result.exit_code == 2
    assert "no graph or role files" in result.output


def test_a_non_utf8_file_is_unreadable_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    result = run(str(path))
    assert result.exit_code == 2
    assert "error[unreadable]" in result.output


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_a_file_without_read_permission_exits_2(tmp_path: Path) -> None:
    path = project(tmp_path) / "graphs" / "review.yaml"
    path.chmod(0)
    try:
        result = run(str(path))
    finally:
        path.chmod(0o644)
    assert result.exit_code == 2


def test_role_files_are_checked_on_their_own(tmp_path: Path) -> None:
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "good.yaml").write_text(ROLE_YAML, encoding="utf-8")
    (roles / "bad.md").write_text(
        "---\ndescription: d\ngoal: g\nfrontmatter:\n  properties:\n    $status: { type: string }\n"
        "---\nSteps.\n",
        encoding="utf-8",
    )
    (roles / "typo.yaml").write_text(ROLE_YAML + "toolz: [read]\n", encoding="utf-8")
    result = run(str(roles))
    assert result.exit_code == 1
    out = result.output
    assert f"{roles / 'bad.md'}:6:" in out and "error[bad-status-schema]" in out
    assert f"{roles / 'typo.yaml'}:9:1: error[unknown-key]" in out
    assert "hint: did you mean 'tools'?" in out
    assert out.splitlines()[-1] == "2 errors, 0 warnings in 3 files"


def test_a_single_role_file_by_path(tmp_path: Path) -> None:
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "reviewer.yaml").write_text(ROLE_YAML, encoding="utf-8")
    assert run(str(roles / "reviewer.yaml")).exit_code == 0


def test_other_folders_are_searched_for_graph_files(tmp_path: Path) -> None:
    project(tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "settings.yaml").write_text("colour: blue\n", encoding="utf-8")
    (tmp_path / "b" / "flow.yaml").write_text(
        GRAPH.format(name="flow").replace("extends: reviewer", "extends: nobody"), encoding="utf-8"
    )
    result = run(str(tmp_path))
    assert result.exit_code == 1
    assert "error[unknown-extends]" in result.output
    assert "settings.yaml" not in result.output
    assert result.output.splitlines()[-1] == "1 error, 0 warnings in 3 files"


def test_the_same_file_named_twice_is_checked_once(tmp_path: Path) -> None:
    path = project(tmp_path) / "graphs" / "review.yaml"
    result = run(str(path), str(tmp_path / "graphs"))
    assert result.output == "ok: 1 file, no problems\n"


def test_lint_cases_clean_reference(tmp_path: Path) -> None:
    result = run(str(CASES / "clean-reference.yaml"))
    assert result.exit_code == 0
    assert result.output == "ok: 1 file, no problems\n"


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
def test_the_corpus_folder() -> None:
    result = run(str(CORPUS))
    assert result.exit_code == 1
    assert result.output.count("error[") == 1
    assert result.output.splitlines()[-1] == "1 error, 38 warnings in 6 files"


def test_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    assert run(str(tmp_path), "--format", "xml").exit_code == 2


# --------------------------------------------------------------------------- the real command


def orchestrator(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_real_command_clean_project(tmp_path: Path) -> None:
    done = orchestrator("validate", cwd=project(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok: 2 files, no problems\n", "")


def test_real_command_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(textwrap.dedent("name: broken\ngraph: {$START: [\n"), encoding="utf-8")
    done = orchestrator("validate", str(path), "--format", "json", cwd=tmp_path)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    (problem,) = json.loads(done.stdout)["problems"]
    assert problem["code"] == "yaml-syntax"
