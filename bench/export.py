"""`threads export` of a thread with long replies: the YAML dump, C emitter against Python's.

Builds a two-step recording whose replies are N MB each (lines of 70 characters, as a long
model reply or a pasted log), dumps it as `threads export` does, and reads it back with
`load_recording`, checking the strings come back identical. It prints the time of each, with
libyaml's emitter (what `Recording.dump` uses when PyYAML has it) and with the pure-Python one.

    python bench/export.py [--mb 1,5,10]

What to look for: the pure-Python emitter scans each scalar character by character several
times, about 3 s per MB; libyaml's takes a few hundredths of a second per MB.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import yaml

from orchestrator.actors.recording import RecordedStep, Recording, load_recording
from orchestrator.replay import recording as rec


def build(mb: float) -> Recording:
    body = "\n".join(f"line {i}: " + "x" * 60 for i in range(int(mb * 1_000_000) // 70))
    reply = f"---\n$status: done\nnote: big\n---\n{body}\n"
    steps = tuple(RecordedStep(role=r, output=reply, prompt="go") for r in ("first", "second"))
    return Recording("bench-export", steps, inputs={"task": "t"}, state="completed", final="ok")


def timed_dump(recording: Recording, base: type[yaml.SafeDumper]) -> tuple[float, str]:
    class Dumper(base):  # type: ignore[valid-type,misc]
        pass

    Dumper.add_representer(str, rec._str_representer)
    started = time.perf_counter()
    text = yaml.dump(
        recording.to_dict(), Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100
    )
    return time.perf_counter() - started, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", default="1,5")
    args = parser.parse_args()
    print(f"{'MB/reply':>8}  {'C dump s':>9}  {'Python dump s':>13}  {'load s':>7}  same")
    for mb in [float(x) for x in args.mb.split(",")]:
        recording = build(mb)
        c_time, text = timed_dump(recording, getattr(yaml, "CSafeDumper", yaml.SafeDumper))
        py_time, py_text = timed_dump(recording, yaml.SafeDumper)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "rec.yaml"
            path.write_text(text, encoding="utf-8")
            started = time.perf_counter()
            back = load_recording(path)
            load_time = time.perf_counter() - started
        same = back.to_dict() == recording.to_dict() and text == py_text
        print(f"{mb:>8g}  {c_time:>9.3f}  {py_time:>13.3f}  {load_time:>7.3f}  {same}")


if __name__ == "__main__":
    main()
