"""The eval's report as one static HTML file: charts and tables, readable offline.

Everything is in the file: the charts are inline SVG drawn here, the style is inline, and there
is no script. Its Content-Security-Policy (`default-src 'none'`) forbids the page any request,
so a report opened from a mail or a CI artifact fetches nothing. Every text in it (case ids,
variant names, verdict details that quote a command's output, hence what the roles wrote) is
escaped: it is data, never markup.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.ledger import money
from .results import differences, per_case

if TYPE_CHECKING:  # the outcome's module imports the runner; a report needs only its shape
    from .api import EvalOutcome

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'"
COLORS = ("#3b6fb6", "#d9822b", "#3a9a5b", "#b33a3a", "#7a5aa6", "#8a8a8a")
STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 2em; }
table { border-collapse: collapse; } td, th { padding: .25em .6em; border-bottom: 1px solid #ddd; }
th { text-align: left; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #2a7a45; } .fail { color: #b33a3a; }
.charts { display: flex; flex-wrap: wrap; gap: 2em; }
figure { margin: 0; } figcaption { font-weight: 600; margin-bottom: .3em; }
pre { white-space: pre-wrap; max-width: 60em; margin: 0; font-size: 12px; }
"""


def bar_chart(title: str, values: list[tuple[str, float]], label: str, top: float | None) -> str:
    """A horizontal bar per variant, its value written beside it."""
    width, bar_h, gap, left = 360, 22, 8, 120
    height = len(values) * (bar_h + gap) + gap
    peak = top if top is not None else max([v for _, v in values] + [0.0]) or 1.0
    rows = []
    for i, (name, value) in enumerate(values):
        y = gap + i * (bar_h + gap)
        w = max(1.0, (width - left - 70) * (value / peak)) if value > 0 else 0.0
        shown = escape(label.format(value))
        rows.append(
            f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{escape(name)}</text>'
            f'<rect class="bar" x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" '
            f'fill="{COLORS[i % len(COLORS)]}"><title>{escape(name)}: {shown}</title></rect>'
            f'<text x="{left + w + 6:.1f}" y="{y + 15}">{shown}</text>'
        )
    return (
        f"<figure><figcaption>{escape(title)}</figcaption>"
        f'<svg role="img" aria-label="{escape(title)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-size="12">{"".join(rows)}</svg></figure>'
    )


def render(outcome: EvalOutcome) -> str:
    s = outcome.summaries
    charts = [
        bar_chart("Pass rate", [(x.variant, x.pass_rate) for x in s], "{:.0%}", 1.0),
        bar_chart("pass^k", [(x.variant, x.pass_k) for x in s], "{:.0%}", 1.0),
        bar_chart(
            "Mean cost per run (USD)", [(x.variant, x.cost_mean) for x in s], "${:.4f}", None
        ),
        bar_chart(
            "Mean time per run (s)", [(x.variant, x.seconds_mean) for x in s], "{:.2f}s", None
        ),
    ]
    summary_rows = "".join(
        f"<tr><td>{escape(x.variant)}</td><td class=n>{x.runs}</td><td class=n>{x.pass_rate:.0%}"
        f"</td><td class=n>{x.pass_k:.0%}</td><td class=n>{money(x.cost_total)}</td>"
        f"<td class=n>{money(x.cost_per_pass) if x.cost_per_pass is not None else '-'}</td>"
        f"<td class=n>{x.seconds_mean:.2f}</td><td class=n>{x.seconds_p95:.2f}</td></tr>"
        for x in s
    )
    names = outcome.variants
    diff = differences(outcome.records, names)
    cases = per_case(outcome.records, names)
    head = "".join(f"<th>{escape(v)}</th>" for v in names)
    case_rows = "".join(
        f"<tr{' class=differs' if case in diff else ''}><td>{escape(case)}"
        f"{' (differs)' if case in diff else ''}</td>"
        + "".join(f"<td class=n>{escape(row[v])}</td>" for v in names)
        + "</tr>"
        for case, row in cases.items()
    )
    run_rows = "".join(_run_row(r) for r in outcome.records)
    differ = (
        f"<p>Cases that differ between variants: {escape(', '.join(diff))}</p>"
        if diff
        else ("<p>No case differs between variants.</p>" if len(names) > 1 else "")
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        f"<title>Eval report</title><style>{STYLE}</style></head><body>"
        f"<h1>Eval report</h1><p>{len(outcome.records)} runs, {len(names)} variants.</p>"
        f'<div class="charts">{"".join(charts)}</div>'
        "<h2>Per variant</h2><table><tr><th>variant</th><th>runs</th><th>pass</th>"
        "<th>pass^k</th><th>cost</th><th>cost/pass</th><th>mean s</th><th>p95 s</th></tr>"
        f"{summary_rows}</table>"
        f"<h2>Per case</h2>{differ}<table><tr><th>case</th>{head}</tr>{case_rows}</table>"
        "<h2>Runs</h2><table><tr><th>run</th><th>result</th><th>ending</th><th>steps</th>"
        f"<th>cost</th><th>failed expectations</th></tr>{run_rows}</table>"
        "</body></html>\n"
    )


def _run_row(r: dict[str, object]) -> str:
    verdicts = r["verdicts"]
    assert isinstance(verdicts, list)
    failed = "".join(
        f"<pre>{escape(str(v['name']))}: {escape(str(v['detail']))}</pre>"
        for v in verdicts
        if not v["passed"]
    )
    mark = '<span class="pass">pass</span>' if r["passed"] else '<span class="fail">fail</span>'
    cost = r["cost_usd"]
    assert isinstance(cost, (int, float))
    return (
        f"<tr><td>{escape(str(r['key']))}</td><td>{mark}</td>"
        f"<td>{escape(str(r.get('ending') or r['state']))}</td><td class=n>{r['steps']}</td>"
        f"<td class=n>{money(float(cost))}</td><td>{failed}</td></tr>"
    )


def write_report(path: Path, outcome: EvalOutcome) -> None:
    path.write_text(render(outcome), encoding="utf-8")
