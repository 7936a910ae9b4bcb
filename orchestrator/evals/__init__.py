"""Evaluations: a graph run over a suite of cases, each run judged (docs/evals.md).

Theory of operation. A suite (`suite.py`) names the graph under test and its cases: inputs, a
workspace, and what a run of the case must show (`expect.py`). `orchestrator eval` makes one
run per case x variant x repeat (`runner.py`); a variant is a graph file (`--graph`) and a model
(`--model`) crossed, so two of either make an A/B run. Every run is an ordinary thread in the
eval's own store, in a workspace of its own (the case's folder copied, or its repository cloned,
fresh for the run), at most `--concurrency` at a time. A run's record (verdicts, ending, path,
tokens, cost, time) is appended to the eval folder's `results.jsonl` the moment the run is
judged, so an eval stopped by Ctrl-C keeps every finished run, and the same command continues
the others (the interrupted threads resumed where they stopped). `--rescore` judges the stored
runs again with the suite as it is now, without calling any model (`results.py`). The summary
per variant (pass rate, pass^k, cost and time) is printed as a table, as JSON lines, or drawn
in an offline HTML page (`report.py`, `html.py`), which `serve` also shows (web/evals_page.py).
`--replay DIR` plays recorded runs instead of calling models (the solve-issue suite's recorded
run: examples/evals/solve-issue/). The judge is a role in a one-step graph (`judge.py`).
"""
