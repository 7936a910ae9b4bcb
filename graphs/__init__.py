"""The graphs that ship with orchestrator (installed as the data package `orchestrator._graphs`).

`orchestrator run NAME` looks here after `./graphs/`. This file only makes the folder a package,
so that it installs with the wheel; the graphs are the YAML files beside it.
"""
