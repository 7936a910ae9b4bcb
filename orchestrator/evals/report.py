"""The eval's results as text: one line per judged run, then the table per variant, and for an
A/B run the cases whose results differ."""

from __future__ import annotations

from typing import Any

from ..core.ledger import money
from .results import VariantSummary, differences, per_case


def run_line(record: dict[str, Any]) -> str:
    mark = "PASS" if record["passed"] else "FAIL"
    failed = [v for v in record["verdicts"] if not v["passed"]]
    why = f"  ({failed[0]['name']}: {telling(failed[0]['detail'])})" if failed else ""
    return (
        f"{mark} {record['case']} [{record['variant']} #{record['repeat']}] "
        f"{record['state']}, {record['steps']} steps, {money(record['cost_usd'])}{why}"
    )


def telling(detail: str) -> str:
    """The line of a verdict's detail that says most: a test's FAIL or ERROR line, else the
    first line."""
    lines = [line.strip() for line in detail.splitlines() if line.strip()]
    found = next((x for x in lines if x.startswith(("FAIL", "ERROR", "FAILED"))), None)
    text = found or (lines[0] if lines else "")
    return text if len(text) <= 100 else text[:99] + "…"


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def table(summaries: list[VariantSummary], records: list[dict[str, Any]]) -> str:
    variants = [s.variant for s in summaries]
    width = max([len("VARIANT"), *(len(v) for v in variants)])
    lines = [
        f"{'VARIANT':<{width}}  {'RUNS':>4} {'PASS':>5} {'PASS^K':>6} "
        f"{'COST':>9} {'COST/PASS':>9} {'MEAN S':>7} {'P95 S':>7}"
    ]
    for s in summaries:
        per_pass = money(s.cost_per_pass) if s.cost_per_pass is not None else "-"
        lines.append(
            f"{s.variant:<{width}}  {s.runs:>4} {_pct(s.pass_rate):>5} {_pct(s.pass_k):>6} "
            f"{money(s.cost_total):>9} {per_pass:>9} {s.seconds_mean:>7.2f} {s.seconds_p95:>7.2f}"
        )
    cases = per_case(records, variants)
    if cases:
        cw = max(len("CASE"), *(len(c) for c in cases))
        lines += ["", f"{'CASE':<{cw}}  " + "  ".join(f"{v:>{max(5, len(v))}}" for v in variants)]
        for case, row in cases.items():
            cells = "  ".join(f"{row[v]:>{max(5, len(v))}}" for v in variants)
            lines.append(f"{case:<{cw}}  {cells}")
    diff = differences(records, variants)
    if len(variants) > 1:
        lines.append("")
        if diff:
            lines.append(f"differ between variants: {', '.join(diff)}")
        else:
            lines.append("no case differs between variants")
    return "\n".join(lines)
