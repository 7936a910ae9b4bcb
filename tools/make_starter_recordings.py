#!/usr/bin/env python3
"""Write the recordings of `orchestrator init`'s starters (orchestrator/bundled/starters/).

    python tools/make_starter_recordings.py

Each starter ships a recording that its generated test replays. They are made here, by running
the starter's graph with scripted replies (no model), so they match the graph exactly; run this
again after changing a starter's graph or roles. The solve-issue starter takes the recording of
examples/ (a real run), checked by tests/test_init.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from orchestrator.actors.recording import recording_from_events
from orchestrator.actors.scripted import ScriptedActor
from orchestrator.definition.loader import load_graph
from orchestrator.run.options import RunOptions
from orchestrator.run.session import Session
from orchestrator.store.memory import MemoryStore
from orchestrator.testing import reply

STARTERS = Path(__file__).resolve().parents[1] / "orchestrator" / "bundled" / "starters"

SCRIPTS: dict[tuple[str, str, str], tuple[dict[str, str], list[str]]] = {
    ("review-loop", "graphs/review.yaml", "rejected-once.yaml"): (
        {"topic": "owls"},
        [
            reply(
                "drafted",
                draft="Owls are birds that hunt at night. They can turn their heads all the way "
                "around.",
            ),
            reply(
                "rejected",
                comments="Owls cannot turn their heads all the way around: about 270 degrees. "
                "Correct the second sentence.",
            ),
            reply(
                "drafted",
                draft="Owls are birds that hunt at night. They can turn their heads about 270 "
                "degrees, thanks to extra neck vertebrae.",
            ),
            reply("approved"),
        ],
    ),
    ("blank", "graphs/main.yaml", "done.yaml"): (
        {"task": "Name three primary colours."},
        [reply("done", result="Red, yellow and blue.")],
    ),
}


def record(folder: Path, graph_file: str, inputs: dict[str, str], replies: list[str]) -> str:
    graph = load_graph(folder / graph_file)
    session = Session(MemoryStore())
    thread_id = session.start(graph, inputs, folder=folder).thread_id
    actor = ScriptedActor(replies)
    asyncio.run(
        session.advance(graph, thread_id, actor_for=lambda _n, _r: actor, options=RunOptions())
    )
    events = [stored.event for stored in session.store.events(thread_id)]
    return recording_from_events(events).dump()


def main() -> None:
    for (starter, graph_file, name), (inputs, replies) in SCRIPTS.items():
        folder = STARTERS / starter
        out = folder / "tests" / "recordings" / name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(record(folder, graph_file, inputs, replies), encoding="utf-8")
        print(f"wrote {out.relative_to(STARTERS.parents[2])}")


if __name__ == "__main__":
    main()
