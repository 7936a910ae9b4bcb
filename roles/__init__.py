"""The role library that ships with orchestrator (installed as the data package `orchestrator._roles`).

`extends: NAME` looks here last, after the graph's own `roles/` and `./roles/`. This file only
makes the folder a package, so that it installs with the wheel; the roles are the files beside it.
"""
