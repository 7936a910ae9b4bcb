"""`orchestrator eval SUITE`: a graph run over a suite of cases, judged (docs/evals.md).

Exit codes: 0 every run passed, 1 some run failed, 2 the suite or an option is wrong, 3
interrupted (the same command continues it).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from ..evals.api import EvalOutcome, evaluate
from ..evals.report import run_line, table
from ..evals.runner import EvalError
from ..evals.suite import SuiteError
from ..run.session import SessionError
from .common import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_WAITING, fail
from .session import fail_session, note


@click.command("eval")
@click.argument("suite", type=click.Path(dir_okay=False))
@click.option("--graph", "graphs", multiple=True, help="A graph to evaluate (twice: an A/B run).")
@click.option(
    "--model", "models", multiple=True, help="Play every role on this model (twice: A/B)."
)
@click.option(
    "--repeat", type=click.IntRange(1, 1000), default=1, help="Runs per case and variant."
)
@click.option("--concurrency", type=click.IntRange(1, 256), default=4, help="Runs at a time.")
@click.option(
    "--out", type=click.Path(file_okay=False), help="The eval's folder (results, threads)."
)
@click.option("--max-steps", type=click.IntRange(1), help="A tighter step limit for every run.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run, then the summary.")
@click.option("--report", type=click.Path(dir_okay=False), help="Write an offline HTML report.")
@click.option(
    "--replay",
    "replay",
    type=click.Path(file_okay=False, exists=True),
    help="Replay recorded runs (CASE.recording.yaml, CASE/files/) instead of calling models.",
)
@click.option(
    "--rescore",
    "rescore_dir",
    type=click.Path(file_okay=False, exists=True),
    help="Judge the runs stored in this folder again; calls no model.",
)
def eval_command(
    suite: str,
    graphs: tuple[str, ...],
    models: tuple[str, ...],
    repeat: int,
    concurrency: int,
    out: str | None,
    max_steps: int | None,
    as_json: bool,
    report: str | None,
    rescore_dir: str | None,
    replay: str | None,
) -> None:
    """Evaluate a graph on a suite of cases: pass rate, pass^k, cost and time per variant."""

    def on_record(record: dict[str, Any]) -> None:
        if as_json:
            click.echo(json.dumps(record, ensure_ascii=False, sort_keys=True))
        else:
            click.echo(run_line(record), err=True)

    folder = rescore_dir or out
    try:
        outcome = evaluate(
            suite,
            graphs=list(graphs),
            models=list(models),
            repeat=repeat,
            concurrency=concurrency,
            folder=folder,
            rescore_only=rescore_dir is not None,
            max_steps=max_steps,
            on_record=on_record,
            replay=replay,
            notify=note,
        )
    except (SuiteError, EvalError) as exc:
        fail(f"eval not started:\n{exc}", EXIT_USAGE)
    except SessionError as exc:
        fail_session(exc)
    except OSError as exc:  # a workspace that cannot be copied, a full disk
        where = f" ({exc.filename})" if exc.filename else ""
        fail(f"the eval stopped: {exc.strerror or exc}{where}", EXIT_PROBLEMS)
    except KeyboardInterrupt:
        again = " ".join(shlex.quote(a) for a in ["orchestrator", "eval", *sys.argv[2:]])
        click.echo(
            "\ninterrupted: the judged runs are kept, the runs in progress suspended; "
            f"continue with the same command: {again}",
            err=True,
        )
        sys.exit(EXIT_WAITING)
    finish(outcome, as_json, report)


def finish(outcome: EvalOutcome, as_json: bool, report: str | None) -> None:
    if as_json:
        for s in outcome.summaries:
            click.echo(json.dumps({"summary": s.to_dict()}, sort_keys=True))
    else:
        click.echo(table(outcome.summaries, outcome.records))
        click.echo(f"\nruns, threads and recordings in {outcome.folder}", err=True)
    if report is not None:
        from ..evals.html import write_report  # deferred: only a report needs it

        write_report(Path(report), outcome)
        if not as_json:
            click.echo(f"report: {report}", err=True)
    sys.exit(EXIT_OK if outcome.all_passed else EXIT_PROBLEMS)
