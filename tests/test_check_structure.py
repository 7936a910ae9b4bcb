"""tools/check_structure.py, on small packages written to a temporary folder."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tools" / "check_structure.py"


def load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_structure", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_structure"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


checker = load_checker()


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


def run(root: Path, *args: str) -> tuple[int, list[str]]:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), "--package", "pkg", *args],
        capture_output=True,
        text=True,
    )
    return result.returncode, result.stdout.splitlines()


CLEAN = {
    "pkg/__init__.py": '"""A package that keeps the rules."""\n',
    "pkg/leaf.py": "VALUE = 1\n",
    "pkg/core.py": """
        from typing import TYPE_CHECKING

        from . import util

        if TYPE_CHECKING:
            from .cli import Command  # types only: never imported at run time


        def run() -> int:
            return util.double(2)
        """,
    "pkg/util.py": """
        def double(x: int) -> int:
            return 2 * x


        def render() -> str:
            import json  # late: json is only needed to render

            return json.dumps({})


        def slow() -> None:
            # anthropic takes half a second to import; only this command needs it
            import os
            import sys

            from pkg import leaf

            print(os.sep, sys.argv, leaf.VALUE)
        """,
    "pkg/cli/__init__.py": """
        from ..core import run


        class Command:
            def main(self) -> int:
                from pkg.util import double  # keeps `--help` fast

                return run() + double(1)
        """,
}


def test_a_clean_package_passes(tmp_path: Path) -> None:
    root = write_package(tmp_path, CLEAN)
    assert checker.check(root, "pkg") == []
    code, out = run(root)
    assert code == 0 and out == ["structure ok: pkg"]


def test_a_cycle_is_found_and_shown_as_a_chain(tmp_path: Path) -> None:
    root = write_package(
        tmp_path,
        {
            **CLEAN,
            # util -> cli (inside a function) -> core -> util, and cli -> util
            "pkg/util.py": """
                def double(x: int) -> int:
                    from .cli import Command  # late, to dodge the cycle (it is still one)

                    return 2 * x
                """,
            "pkg/a.py": "import pkg.b\n",
            "pkg/b.py": "from pkg import a\n",
        },
    )
    code, out = run(root)
    assert code == 1
    assert out == [
        "import cycle: pkg.a -> pkg.b -> pkg.a",
        "import cycle: pkg.cli -> pkg.core -> pkg.util -> pkg.cli",
        "import cycle: pkg.cli -> pkg.util -> pkg.cli",
    ]


def test_type_checking_imports_make_no_cycle_but_runtime_ones_do(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/x.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import y\n",
        "pkg/y.py": "from .x import thing\n",
    }
    assert checker.check(write_package(tmp_path, files), "pkg") == []
    (tmp_path / "pkg" / "x.py").write_text("from . import y\n")
    assert checker.check(tmp_path, "pkg") == ["import cycle: pkg.x -> pkg.y -> pkg.x"]


def test_every_import_on_a_cycle_is_shown(tmp_path: Path) -> None:
    """Two cycles sharing a module: both are reported, each starting at its smallest module."""
    files = {
        "pkg/__init__.py": "",
        "pkg/hub.py": "from . import left, right\n",
        "pkg/left.py": "from . import hub\n",
        "pkg/right.py": "from .hub import thing\n",
    }
    assert checker.check(write_package(tmp_path, files), "pkg") == [
        "import cycle: pkg.hub -> pkg.left -> pkg.hub",
        "import cycle: pkg.hub -> pkg.right -> pkg.hub",
    ]


def test_a_long_module_is_found(tmp_path: Path) -> None:
    root = write_package(tmp_path, {**CLEAN, "pkg/big.py": "x = 1\n" * 501})
    code, out = run(root)
    assert code == 1 and out == ["pkg/big.py: 501 lines (at most 500)"]
    code, out = run(root, "--max-lines", "501")
    assert code == 0


def test_a_late_import_must_say_why(tmp_path: Path) -> None:
    root = write_package(
        tmp_path,
        {
            **CLEAN,
            "pkg/late.py": """
                import os


                def no_reason():
                    import json

                    return json


                def tool_markers_are_no_reason():
                    import json  # noqa: F401

                    # type: ignore
                    import csv

                    return csv


                def code_ends_the_run():
                    # the comment is for this one
                    import json

                    print(json)
                    import csv

                    return json, csv


                def multi_line():
                    from os.path import (  # path helpers only here
                        join,
                    )
                    from os.path import (
                        split,  # a comment inside the statement counts too
                    )

                    return join, split, os
                """,
        },
    )
    code, out = run(root)
    assert code == 1
    assert out == [
        "pkg/late.py:5: import inside a function without a comment saying why: import json",
        "pkg/late.py:11: import inside a function without a comment saying why: "
        "import json # noqa: F401",
        "pkg/late.py:14: import inside a function without a comment saying why: import csv",
        "pkg/late.py:24: import inside a function without a comment saying why: import csv",
    ]


def test_a_missing_package_is_a_usage_error(tmp_path: Path) -> None:
    code, _ = run(tmp_path)
    assert code == 2


def test_it_reads_this_repository(capsys: pytest.CaptureFixture[str]) -> None:
    """On the real tree it exits 0 or 1 (never crashes), and every line is one of the rules'."""
    code = checker.main([])
    out = capsys.readouterr().out.splitlines()
    assert code in (0, 1)
    patterns = (
        r"\S+\.py: \d+ lines \(at most 500\)",
        r"import cycle: (orchestrator[\w.]* -> )+orchestrator[\w.]*",
        r"\S+\.py:\d+: import inside a function without a comment saying why: .+",
        r"structure ok: orchestrator",
    )
    for line in out:
        assert any(re.fullmatch(p, line) for p in patterns), line
