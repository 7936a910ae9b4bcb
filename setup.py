"""Everything about packaging is in pyproject.toml except the package list, computed here.

pyproject.toml can either find packages or list them, not both. The list is every
`orchestrator*` package (found, so a new subpackage ships without touching this file) plus the
two data packages that live at the top of the repository, where users see them: `graphs/`
(the bundled graphs, installed as `orchestrator._graphs`) and `roles/` (the bundled role
library, installed as `orchestrator._roles`). pyproject.toml maps them with `package-dir`, and
`orchestrator.definition.loader` reads them through `importlib.resources`, so an editable install and
a plain `pip install .` find them the same way.
"""

from setuptools import find_packages, setup

DATA_PACKAGES = ["orchestrator._graphs", "orchestrator._roles"]

setup(packages=[*find_packages(include=["orchestrator", "orchestrator.*"]), *DATA_PACKAGES])
