"""The results of an eval: one record per run, appended as each run is judged, and what they add
up to per variant.

`results.jsonl` in the eval's folder holds one JSON object per judged run; a line is written
whole and flushed to disk before the next run's is, so a Ctrl-C or a crash loses no judged run
and at worst a partial last line, which reading skips. A run judged again (`--rescore`) gets a
new line; the last line of a run wins. `meta.json` says which suite and variants the folder
holds, so a later command continues that eval and not another's.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = "results.jsonl"
META = "meta.json"


def run_key(variant: str, case: str, repeat: int) -> str:
    return f"{variant}/{case}/{repeat}"


@dataclass(frozen=True)
class VariantSummary:
    variant: str
    runs: int
    passed: int
    cases: int
    cases_all_passed: int  # pass^k: every repeat of the case passed
    cost_total: float
    cost_mean: float
    cost_p95: float
    seconds_mean: float
    seconds_p95: float
    tokens: int

    @property
    def pass_rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0

    @property
    def pass_k(self) -> float:
        return self.cases_all_passed / self.cases if self.cases else 0.0

    @property
    def cost_per_pass(self) -> float | None:
        return self.cost_total / self.passed if self.passed else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "runs": self.runs,
            "passed": self.passed,
            "pass_rate": round(self.pass_rate, 4),
            "pass_k": round(self.pass_k, 4),
            "cases": self.cases,
            "cost_usd": round(self.cost_total, 6),
            "cost_mean": round(self.cost_mean, 6),
            "cost_p95": round(self.cost_p95, 6),
            "cost_per_pass": None if self.cost_per_pass is None else round(self.cost_per_pass, 6),
            "seconds_mean": round(self.seconds_mean, 3),
            "seconds_p95": round(self.seconds_p95, 3),
            "tokens": self.tokens,
        }


def append(folder: Path, record: dict[str, Any]) -> None:
    """One judged run, on disk before this returns."""
    line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
    with open(folder / RESULTS, "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def read(folder: Path) -> dict[str, dict[str, Any]]:
    """The judged runs by key, the last line of each winning; a torn last line is skipped."""
    path = folder / RESULTS
    if not path.is_file():
        return {}
    out: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a crash: its run is judged again
        if isinstance(record, dict) and isinstance(record.get("key"), str):
            out[record["key"]] = record
    return out


def rewrite(folder: Path, records: list[dict[str, Any]]) -> None:
    """Replace the results whole (after a rescore): a new file renamed over the old one."""
    fresh = folder / (RESULTS + ".new")
    with open(fresh, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(fresh, folder / RESULTS)


def p95(values: list[float]) -> float:
    """The nearest-rank 95th percentile (the largest value for fewer than 20)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def summarize(records: list[dict[str, Any]], variants: list[str]) -> list[VariantSummary]:
    out = []
    for variant in variants:
        mine = [r for r in records if r["variant"] == variant]
        by_case: dict[str, list[bool]] = {}
        for r in mine:
            by_case.setdefault(r["case"], []).append(bool(r["passed"]))
        costs = [float(r["cost_usd"]) for r in mine]
        seconds = [float(r["seconds"]) for r in mine]
        out.append(
            VariantSummary(
                variant=variant,
                runs=len(mine),
                passed=sum(1 for r in mine if r["passed"]),
                cases=len(by_case),
                cases_all_passed=sum(1 for v in by_case.values() if all(v)),
                cost_total=sum(costs),
                cost_mean=sum(costs) / len(costs) if costs else 0.0,
                cost_p95=p95(costs),
                seconds_mean=sum(seconds) / len(seconds) if seconds else 0.0,
                seconds_p95=p95(seconds),
                tokens=sum(int(r.get("tokens", 0)) for r in mine),
            )
        )
    return out


def per_case(records: list[dict[str, Any]], variants: list[str]) -> dict[str, dict[str, str]]:
    """case -> variant -> "passed/runs"."""
    table: dict[str, dict[str, str]] = {}
    for case in dict.fromkeys(r["case"] for r in records):
        row = {}
        for variant in variants:
            mine = [r for r in records if r["case"] == case and r["variant"] == variant]
            row[variant] = f"{sum(1 for r in mine if r['passed'])}/{len(mine)}"
        table[case] = row
    return table


def differences(records: list[dict[str, Any]], variants: list[str]) -> dict[str, dict[str, str]]:
    """The cases whose results differ between variants (an A/B run's point)."""
    if len(variants) < 2:
        return {}
    return {
        case: row for case, row in per_case(records, variants).items() if len(set(row.values())) > 1
    }


def write_meta(folder: Path, meta: dict[str, Any]) -> None:
    (folder / META).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def read_meta(folder: Path) -> dict[str, Any] | None:
    path = folder / META
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None
