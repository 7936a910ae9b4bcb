"""The pytest plugin, tested with pytest's own `pytester`: a user's project with a graph, test
files and recordings, run by pytest with the plugin loaded through its `pytest11` entry point.

Each failing case checks the message the user reads, not only that something failed.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from orchestrator.actors.recording import recording_from_events
from orchestrator.testing import reply, simulate
from tests.graphs_for_tests import REVIEW_LOOP

pytest_plugins = ["pytester"]

LOOP_REPLIES = [
    reply("drafted", draft="v1"),
    reply("rejected", comments="too short"),
    reply("drafted", draft="v2"),
    reply("approved", comments="good"),
]

# Shared head of the user's test modules: the project layout the tutorial recommends.
HEAD = """
from pathlib import Path

import pytest

from orchestrator.testing import (
    assert_path, assert_prompt, assert_same_route, assert_state, assert_statuses,
    recordings, reply, simulate,
)

HERE = Path(__file__).parent
GRAPH = HERE / "graphs" / "review-loop.yaml"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A user's project: graphs/review-loop.yaml and recordings/{loop,stuck}.yaml."""
    graph = pytester.path / "graphs" / "review-loop.yaml"
    graph.parent.mkdir()
    graph.write_text(REVIEW_LOOP.lstrip())
    folder = pytester.path / "recordings"
    folder.mkdir()
    for name, replies in (("loop", LOOP_REPLIES), ("stuck", [reply("stuck", question="?")])):
        trace = simulate(graph, replies, inputs={"topic": "owls"})
        events = [s.event for s in trace.store.events(trace.thread_id)]
        (folder / f"{name}.yaml").write_text(recording_from_events(events).dump())
    return pytester


def user_tests(pytester: pytest.Pytester, body: str) -> None:
    pytester.makepyfile(test_user=HEAD + textwrap.dedent(body))


def change_graph(pytester: pytest.Pytester, old: str, new: str) -> None:
    path = pytester.path / "graphs" / "review-loop.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_plugin_is_registered_through_the_entry_point(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    plugin = config.pluginmanager.get_plugin("orchestrator")
    assert plugin is not None and plugin.__name__ == "orchestrator.testing.pytest_plugin"
    assert config.getini("orchestrator_recordings") == []


def test_passing_user_tests(project: pytest.Pytester) -> None:
    user_tests(
        project,
        '''
        def test_review_loop():
            trace = simulate(
                GRAPH,
                [
                    reply(status="drafted", draft="v1"),
                    reply(status="rejected", comments="too short"),
                    reply(status="drafted", draft="v2", notes="longer"),
                    reply(status="approved", comments="good"),
                ],
                inputs={"topic": "owls"},
            )
            assert_path(trace, ["writer", "reviewer", "writer", "reviewer", "$END"])
            assert_statuses(trace, ["drafted", "rejected", "drafted", "approved"])
            assert_state(trace, "completed")
            assert_prompt(trace, 2, equals="Review this draft: v1")
            assert_prompt(trace, "reviewer", visit=-1, contains=["v2", "notes: longer"])
            assert_prompt(trace, "$END", matches=r"^Approved: v2 / good")

        def test_role_keyed_replies():
            trace = simulate(
                GRAPH,
                {"writer": [reply("stuck", question="which owls?")]},
                inputs={"topic": "owls"},
            )
            assert_path(trace, ["writer", "$END"])
            assert trace.final == "Stopped: which owls?"

        def test_script_runs_out():
            trace = simulate(GRAPH, [reply("drafted", draft="v1")], inputs={"topic": "owls"})
            assert_state(trace, "suspended", reason_contains="no scripted reply left")
            assert_path(trace, ["writer"])  # the path holds committed steps only

        def test_one_recording():
            report = assert_same_route(GRAPH, HERE / "recordings" / "loop.yaml")
            assert report.trace.prompts[1] == "Review this draft: v1"

        @pytest.mark.parametrize("recording", recordings(HERE / "recordings"))
        def test_every_recording(recording):
            assert_same_route(GRAPH, recording)

        def test_inline_graph(graph_yaml):
            graph = graph_yaml("""
                name: tiny
                description: one role
                roles:
                  a: { description: d, goal: g, frontmatter: { type: object } }
                graph:
                  $START: { _: { role: a, prompt: "Do {{{$inputs.task}}}" } }
                  a: { _: { role: $END, prompt: "done" } }
            """)
            trace = simulate(graph, [reply(body="ok")], inputs={"task": "it"})
            assert_path(trace, ["a", "$END"])
            assert_prompt(trace, 1, equals="Do it")
        ''',
    )
    result = project.runpytest("-v")
    result.assert_outcomes(passed=7)
    # recordings() gives each parameter its file name as the test id
    result.stdout.fnmatch_lines(
        ["*test_every_recording?loop.yaml? PASSED*", "*test_every_recording?stuck.yaml? PASSED*"]
    )


def test_failing_path_message(project: pytest.Pytester) -> None:
    user_tests(
        project,
        """
        def test_path():
            trace = simulate(
                GRAPH,
                [reply("drafted", draft="v1"), reply("approved", comments="fine")],
                inputs={"topic": "owls"},
            )
            assert_path(trace, ["writer", "reviewer", "writer", "reviewer", "$END"])
        """,
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            ">*assert_path(trace, *",  # the failure points at the user's line
            "E*AssertionError: path differs at step 3: expected 'writer', got '$END'",
            "E*expected: writer → reviewer → writer → reviewer → $END",
            "E*actual:   writer → reviewer → $END",
            "E*steps:",
            "E*1  writer    drafted",
            "E*2  reviewer  approved",
            "E*the thread completed; final message: 'Approved: v1 / fine / '",
        ]
    )
    assert "asserts.py" not in result.stdout.str()  # __tracebackhide__ keeps helpers out


def test_failing_path_shows_why_the_thread_stopped(project: pytest.Pytester) -> None:
    user_tests(
        project,
        """
        def test_path():
            trace = simulate(GRAPH, [reply("drafted", draft="v1"), reply("approve", comments="ok"), reply("approve", comments="ok")], inputs={"topic": "owls"})
            assert_path(trace, ["writer", "reviewer", "$END"])
        """,
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*AssertionError: path differs at step 2: expected 'reviewer', got nothing more "
            "(the thread is suspended)",
            "E*2  reviewer  (not committed)   after 2 rejected replies",
            "E*the thread is suspended: step 2 (reviewer): the reply was invalid 2 time(s) "
            "and max_repairs is 1; last errors: *approve*",
        ]
    )


def test_failing_statuses_and_prompt_messages(project: pytest.Pytester) -> None:
    user_tests(
        project,
        """
        REPLIES = [reply("drafted", draft="v1"), reply("rejected", comments="short"),
                   reply("drafted", draft="v2"), reply("approved", comments="ok")]

        def test_statuses():
            trace = simulate(GRAPH, REPLIES, inputs={"topic": "owls"})
            assert_statuses(trace, ["drafted", "approved"])

        def test_prompt():
            trace = simulate(GRAPH, REPLIES, inputs={"topic": "owls"})
            assert_prompt(trace, 3, contains="Your last draft: v2")

        def test_missing_step():
            trace = simulate(GRAPH, REPLIES, inputs={"topic": "owls"})
            assert_prompt(trace, "editor", contains="x")
        """,
    )
    result = project.runpytest()
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "E*AssertionError: statuses differ at step 2 (reviewer): expected 'approved', "
            "got 'rejected'",
            "E*expected: drafted → approved",
            "E*actual:   drafted → rejected → drafted → approved",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "E*AssertionError: the prompt of step 3 (writer) does not contain "
            "'Your last draft: v2'",
            "E*the prompt of step 3 (writer):",
            "E*| Fix: short. Your last draft: v1",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "E*AssertionError: role 'editor' never ran",
            "E*path: writer → reviewer → writer → reviewer → $END",
        ]
    )


def test_failing_same_route_message(project: pytest.Pytester) -> None:
    change_graph(project, "rejected: { role: writer", "rejected: { role: reviewer")
    user_tests(
        project,
        """
        @pytest.mark.parametrize("recording", recordings(HERE / "recordings"))
        def test_routes(recording):
            assert_same_route(GRAPH, recording)
        """,
    )
    result = project.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*AssertionError: the recording no longer takes the same route through graph "
            "'review-loop'",
            "E*  recordings/loop.yaml: diverges at step 3 (route)",
            "E*step 3: the recording holds 'writer', but the graph now routes to "
            "'reviewer' (edge reviewer --rejected--> reviewer)",
            "E*replayed as recorded: writer(drafted) → reviewer(rejected)",
            "E*note: the graph changed since the recording was made (graph_hash differs)",
            "*FAILED test_user.py::test_routes?loop.yaml?*",
        ]
    )


def test_recordings_folder_collected_through_the_ini_option(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\norchestrator_recordings = recordings\n")
    result = project.runpytest("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["recordings/loop.yaml::replay PASSED*", "recordings/stuck.yaml::replay PASSED*"]
    )


def test_collected_recording_fails_with_the_divergence_not_a_traceback(
    project: pytest.Pytester,
) -> None:
    project.makeini("[pytest]\norchestrator_recordings = recordings\n")
    change_graph(
        project, "required: [$status, comments]", "required: [$status, comments, severity]"
    )
    change_graph(
        project,
        "comments: { type: string }\n",
        "comments: { type: string }\n        severity: { type: string }\n",
    )
    result = project.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ replay recordings/loop.yaml _*",
            "the recording no longer takes the same route through graph 'review-loop' "
            "(graphs/review-loop.yaml)",
            "  recordings/loop.yaml: diverges at step 2 (rejected)",
            "    step 2 (reviewer): the recorded reply is now rejected by the role's schema:",
            "      - status 'rejected': *severity*",
            "*FAILED recordings/loop.yaml::replay*",
        ]
    )
    out = result.stdout.str()
    assert "Traceback" not in out and "replay.py" not in out


def test_collected_recording_of_an_unknown_graph(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\norchestrator_recordings = recordings\n")
    path = project.path / "recordings" / "stuck.yaml"
    path.write_text(path.read_text().replace("graph: review-loop", "graph: renamed"))
    result = project.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["recordings/stuck.yaml: the recording is of graph 'renamed', which is not in *"]
    )


def test_orchestrator_graphs_ini_option(project: pytest.Pytester) -> None:
    graphs = project.path / "graphs"
    graphs.rename(project.path / "flows")
    project.makeini("[pytest]\norchestrator_recordings = recordings\norchestrator_graphs = flows\n")
    result = project.runpytest()
    result.assert_outcomes(passed=2)


def test_plugin_can_be_disabled(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\norchestrator_recordings = recordings\n")
    result = project.runpytest("-p", "no:orchestrator")
    # without the plugin, the ini key is unknown and no recording is collected
    result.assert_outcomes()
    assert "replay" not in result.stdout.str().replace("no:orchestrator", "")


def test_recordings_helper_errors(tmp_path: Path) -> None:
    from orchestrator.testing import recordings

    with pytest.raises(FileNotFoundError, match="no folder"):
        recordings(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"no recordings \(\*\.yaml, \*\.yml\) in"):
        recordings(tmp_path / "empty")
