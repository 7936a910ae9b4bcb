"""One eval from start to end, for the command line and for Python: the suite loaded, the
variants made, the eval's folder opened (or continued), the runs made or rescored."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..definition.loader import load_graph, resolve_graph_path
from ..definition.models import Graph
from ..definition.problems import GraphError
from ..run.options import ActorFor
from ..run.session import Session, open_store
from ..store.base import default_store_dir
from . import results
from .results import VariantSummary, summarize
from .runner import (
    EvalContext,
    EvalError,
    Variant,
    plan,
    recorded,
    rescore,
    run_all,
    variant_name,
)
from .suite import Suite, load_suite


@dataclass(frozen=True)
class EvalOutcome:
    folder: Path
    variants: list[str]
    records: list[dict[str, Any]]
    summaries: list[VariantSummary]

    @property
    def all_passed(self) -> bool:
        return all(r["passed"] for r in self.records)


def default_folder(suite: Suite, *, replay: bool = False) -> Path:
    """`.orchestrator/evals/NAME` (the thread store's folder: `ORCHESTRATOR_HOME` moves it; NAME
    the suite file's, or its folder's for a `suite.yaml`), where `serve` shows it;
    a replay's apart, so that the real run after it does not find the replayed results."""
    name = suite.path.parent.name if suite.path.stem == "suite" else suite.path.stem
    return default_store_dir() / "evals" / (variant_name(name) + ("-replay" if replay else ""))


def _graph(arg: str, cwd: Path | None) -> tuple[Graph, str]:
    try:
        path = resolve_graph_path(arg, cwd)
        return load_graph(path), str(path)
    except GraphError as exc:
        raise EvalError("\n".join(p.format() for p in exc.problems)) from None


def make_variants(suite: Suite, graphs: list[str], models: list[str | None]) -> list[Variant]:
    """Every graph crossed with every model; names say what differs."""
    if graphs:
        loaded = [_graph(g, None) for g in graphs]
    elif suite.graph is not None:
        loaded = [_graph(suite.graph, suite.folder)]
    else:
        raise EvalError(f"{suite.path}: the suite names no `graph:`; pass --graph")
    models = models or [None]
    names = [Path(p).stem for _, p in loaded]
    if len(set(names)) < len(names):
        names = [f"{n}-{i}" for i, n in enumerate(names, 1)]
    out = []
    for (graph, path), gname in zip(loaded, names, strict=True):
        for model in models:
            parts = ([gname] if len(loaded) > 1 or model is None else []) + (
                [model] if model is not None else []
            )
            out.append(Variant(variant_name("-".join(parts)), graph, path, model))
    return out


def open_folder(
    folder: Path, suite: Suite, variants: list[Variant], *, rescoring: bool, replay: Path | None
) -> None:
    """Create the eval's folder, or check that it holds this eval (to continue it)."""
    meta = results.read_meta(folder)
    names = [v.name for v in variants]
    other = meta is not None and (
        meta.get("suite") != str(suite.path)
        or meta.get("variant_names") != names
        or meta.get("replay") != (str(replay) if replay is not None else None)
    )
    if meta is not None and other and not rescoring:
        raise EvalError(
            f"{folder} holds another eval (suite {meta.get('suite')}, variants "
            f"{', '.join(meta.get('variant_names') or [])}); choose another --out, "
            "or delete that folder to start again"
        )
    if rescoring and meta is None:
        raise EvalError(f"{folder} holds no eval (no {results.META})")
    folder.mkdir(parents=True, exist_ok=True)
    if meta is None:
        results.write_meta(
            folder,
            {
                "suite": str(suite.path),
                "variant_names": names,
                "replay": str(replay) if replay is not None else None,
                "variants": [
                    {"name": v.name, "graph": v.graph_arg, "model": v.model} for v in variants
                ],
            },
        )


def stored_variants(folder: Path) -> tuple[list[str], list[str | None]]:
    """The graphs and models the eval in `folder` was run with (for a rescore)."""
    meta = results.read_meta(folder) or {}
    rows = meta.get("variants") or []
    graphs = list(dict.fromkeys(str(r["graph"]) for r in rows))
    models = list(dict.fromkeys(r.get("model") for r in rows))
    return graphs, models


def evaluate(
    suite_path: str | Path,
    *,
    graphs: list[str] | None = None,
    models: list[str | None] | None = None,
    repeat: int = 1,
    concurrency: int = 4,
    folder: str | Path | None = None,
    rescore_only: bool = False,
    actor_for: ActorFor | None = None,
    max_steps: int | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    replay: str | Path | None = None,
    notify: Callable[[str], None] | None = None,
) -> EvalOutcome:
    """Run (or continue, or rescore) an eval; EvalError (or SuiteError) when it cannot."""
    suite = load_suite(suite_path)
    target = Path(folder) if folder is not None else default_folder(suite, replay=bool(replay))
    if rescore_only and not graphs and not models:
        graphs, models = stored_variants(target)
    variants = make_variants(suite, list(graphs or []), list(models or []))
    planned = plan(suite, variants, repeat)
    replay_dir = Path(replay).resolve() if replay is not None else None
    open_folder(target, suite, variants, rescoring=rescore_only, replay=replay_dir)
    session = Session(open_store(target / "store"), notify=notify)
    if replay_dir is not None:
        missing = [c.id for c in suite.cases if not recorded(replay_dir, c.id)[0].is_file()]
        if missing:
            raise EvalError(f"{replay_dir} holds no recording of: {', '.join(missing)}")
    if not rescore_only and actor_for is None:
        for v in variants:  # credentials, prices, a sandbox: before any thread exists
            session.preflight(
                v.graph, workspace=suite.folder, replay=replay_dir is not None, model=v.model
            )
    ctx = EvalContext(suite, target.resolve(), session, actor_for, max_steps, on_record, replay_dir)
    if rescore_only:
        if repeat == 1:  # every stored repeat, however many the eval made
            stored = results.read(target)
            top = max((int(r["repeat"]) for r in stored.values()), default=1)
            planned = plan(suite, variants, top)
        records = asyncio.run(rescore(ctx, planned))
    else:
        asyncio.run(run_all(ctx, planned, concurrency))
        stored = results.read(target)
        records = [stored[p.key] for p in planned if p.key in stored]
    names = [v.name for v in variants]
    return EvalOutcome(target, names, records, summarize(records, names))


def stored_outcome(folder: Path) -> EvalOutcome | None:
    """The eval stored in `folder` as the command last left it (no run, no rescore), or None
    when the folder holds no eval."""
    meta = results.read_meta(folder)
    if meta is None:
        return None
    names = [str(n) for n in meta.get("variant_names") or []]
    records = [r for r in results.read(folder).values() if r.get("variant") in names]
    return EvalOutcome(folder, names, records, summarize(records, names))
