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
    "pkg/__main__.py": "from pkg.cli import Command\n\nCommand().main()\n",
    "pkg/lib/__init__.py": "",
    "pkg/lib/leaf.py": "VALUE = 1\n",
    "pkg/lib/core.py": """
        from typing import TYPE_CHECKING

        from . import util

        if TYPE_CHECKING:
            from ..cli import Command  # types only: never imported at run time


        def run() -> int:
            return util.double(2)
        """,
    "pkg/lib/util.py": """
        def double(x: int) -> int:
            return 2 * x


        def render() -> str:
            import json  # late: json is only needed to render

            return json.dumps({})


        def slow() -> None:
            # anthropic takes half a second to import; only this command needs it
            import os
            import sys

            from pkg.lib import leaf

            print(os.sep, sys.argv, leaf.VALUE)
        """,
    "pkg/cli/__init__.py": """
        from ..lib.core import run


        class Command:
            def main(self) -> int:
                from pkg.lib.util import double  # keeps `--help` fast

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
            "pkg/lib/util.py": """
                def double(x: int) -> int:
                    from ..cli import Command  # late, to dodge the cycle (it is still one)

                    return 2 * x
                """,
            "pkg/lib/a.py": "import pkg.lib.b\n",
            "pkg/lib/b.py": "from pkg.lib import a\n",
        },
    )
    code, out = run(root)
    assert code == 1
    assert out == [
        "import cycle: pkg.cli -> pkg.lib.core -> pkg.lib.util -> pkg.cli",
        "import cycle: pkg.cli -> pkg.lib.util -> pkg.cli",
        "import cycle: pkg.lib.a -> pkg.lib.b -> pkg.lib.a",
        # The modules' cycle through two packages is also one between the packages.
        "package cycle: pkg.cli -> pkg.lib -> pkg.cli "
        "(pkg.cli imports pkg.lib.core; pkg.lib.util imports pkg.cli)",
    ]


def test_type_checking_imports_make_no_cycle_but_runtime_ones_do(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/x/__init__.py": "",
        "pkg/x/x.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import y\n",
        "pkg/x/y.py": "from .x import thing\n",
    }
    assert checker.check(write_package(tmp_path, files), "pkg") == []
    (tmp_path / "pkg" / "x" / "x.py").write_text("from . import y\n")
    assert checker.check(tmp_path, "pkg") == ["import cycle: pkg.x.x -> pkg.x.y -> pkg.x.x"]


def test_every_import_on_a_cycle_is_shown(tmp_path: Path) -> None:
    """Two cycles sharing a module: both are reported, each starting at its smallest module."""
    files = {
        "pkg/__init__.py": "",
        "pkg/p/__init__.py": "",
        "pkg/p/hub.py": "from . import left, right\n",
        "pkg/p/left.py": "from . import hub\n",
        "pkg/p/right.py": "from .hub import thing\n",
    }
    assert checker.check(write_package(tmp_path, files), "pkg") == [
        "import cycle: pkg.p.hub -> pkg.p.left -> pkg.p.hub",
        "import cycle: pkg.p.hub -> pkg.p.right -> pkg.p.hub",
    ]


def test_a_long_module_is_found(tmp_path: Path) -> None:
    root = write_package(tmp_path, {**CLEAN, "pkg/lib/big.py": "x = 1\n" * 501})
    code, out = run(root)
    assert code == 1 and out == ["pkg/lib/big.py: 501 lines (at most 500)"]
    code, out = run(root, "--max-lines", "501")
    assert code == 0


def test_a_late_import_must_say_why(tmp_path: Path) -> None:
    root = write_package(
        tmp_path,
        {
            **CLEAN,
            "pkg/lib/late.py": """
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
        "pkg/lib/late.py:5: import inside a function without a comment saying why: import json",
        "pkg/lib/late.py:11: import inside a function without a comment saying why: "
        "import json # noqa: F401",
        "pkg/lib/late.py:14: import inside a function without a comment saying why: import csv",
        "pkg/lib/late.py:24: import inside a function without a comment saying why: import csv",
    ]


def test_a_loose_module_at_the_top_is_found(tmp_path: Path) -> None:
    """Only __init__ and __main__ may sit at the top; the clean package has both (the control)."""
    root = write_package(tmp_path, {**CLEAN, "pkg/helpers.py": "VALUE = 2\n"})
    code, out = run(root)
    assert code == 1
    assert out == [
        "pkg/helpers.py: a module at the top level of pkg "
        "(only __init__ and __main__ belong there: move it into the package of its idea)"
    ]
    (root / "pkg" / "helpers.py").unlink()
    (root / "pkg" / "lib" / "helpers.py").write_text("VALUE = 2\n")
    assert run(root) == (0, ["structure ok: pkg"])


# Two packages that import each other through different modules: no module cycle, yet the
# layers point both ways.
CROSSING = {
    "pkg/__init__.py": "",
    "pkg/a/__init__.py": "",
    "pkg/a/low.py": "VALUE = 1\n",
    "pkg/a/high.py": "from pkg.b.mid import VALUE\n",
    "pkg/b/__init__.py": "",
    "pkg/b/mid.py": "def value() -> int:\n    from ..a import low  # late: still an arrow\n\n"
    "    return low.VALUE\n\n\nVALUE = 2\n",
}


def test_packages_importing_each_other_are_a_cycle(tmp_path: Path) -> None:
    root = write_package(tmp_path, CROSSING)
    assert checker.check(root, "pkg") == [
        "package cycle: pkg.a -> pkg.b -> pkg.a "
        "(pkg.a.high imports pkg.b.mid; pkg.b.mid imports pkg.a.low)"
    ]
    # Control: the same imports under TYPE_CHECKING never run, so they make no arrow.
    (root / "pkg" / "b" / "mid.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from ..a import low\n"
    )
    assert checker.check(root, "pkg") == []


def test_a_cycle_through_three_packages_names_every_arrow(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/a/__init__.py": "",
        "pkg/a/one.py": "from pkg.b import two\n",
        "pkg/b/__init__.py": "",
        "pkg/b/two.py": "import pkg.c.three\n",
        "pkg/c/__init__.py": "",
        "pkg/c/three.py": "",
        "pkg/c/four.py": "from ..a.one import x\n",
    }
    assert checker.check(write_package(tmp_path, files), "pkg") == [
        "package cycle: pkg.a -> pkg.b -> pkg.c -> pkg.a (pkg.a.one imports pkg.b.two; "
        "pkg.b.two imports pkg.c.three; pkg.c.four imports pkg.a.one)"
    ]
    (tmp_path / "pkg" / "c" / "four.py").unlink()
    assert checker.check(tmp_path, "pkg") == []


# replay/__init__ eagerly imports replayer; replayer imports a module of testing, which runs
# testing/__init__ first; that one imports from replay, which is only half initialised.
EAGER_INIT = {
    "pkg/__init__.py": "",
    "pkg/replay/__init__.py": "from .replayer import replay\nfrom .report import Report\n",
    "pkg/replay/replayer.py": "from pkg.testing.asserts import check\n\nreplay = check\n",
    "pkg/replay/report.py": "class Report:\n    pass\n",
    "pkg/testing/__init__.py": "from pkg.replay import Report\n",
    "pkg/testing/asserts.py": "def check() -> None:\n    pass\n",
}


def importing(root: Path, module: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        # -B: no .pyc, which could be stale after a rewrite of the same size in the same second
        [sys.executable, "-B", "-c", f"import {module}"],
        cwd=root,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(root)},
    )


def test_an_eager_package_init_is_seen_on_the_cycle_it_makes(tmp_path: Path) -> None:
    root = write_package(tmp_path, EAGER_INIT)
    # The attack is real: importing the package fails at run time.
    failed = importing(root, "pkg.replay")
    assert failed.returncode == 1 and "partially initialized module" in failed.stderr
    # No import statement names pkg.testing itself: only the edge from importing a
    # submodule to its package's __init__ shows the cycle.
    assert checker.check(root, "pkg") == [
        "import cycle: pkg.replay -> pkg.replay.replayer -> pkg.testing -> pkg.replay",
        "package cycle: pkg.replay -> pkg.testing -> pkg.replay "
        "(pkg.replay.replayer imports pkg.testing.asserts; pkg.testing imports pkg.replay)",
    ]
    # Importing a module of replay from testing/__init__ still runs replay/__init__ first:
    # the cycle remains (it only works or fails depending on which package is imported first).
    (root / "pkg" / "testing" / "__init__.py").write_text("from pkg.replay.report import Report\n")
    assert checker.check(root, "pkg")[0].startswith("import cycle: pkg.replay -> ")
    # Control: testing/__init__ imports nothing eagerly; the import works and the check passes.
    (root / "pkg" / "testing" / "__init__.py").write_text('"""Import testing.asserts."""\n')
    assert importing(root, "pkg.replay").returncode == 0
    assert checker.check(root, "pkg") == []


def test_a_module_importing_its_siblings_makes_no_edge_to_its_own_package(
    tmp_path: Path,
) -> None:
    """A package's own __init__ is already running when its modules run: no false cycle."""
    files = {
        "pkg/__init__.py": "",
        "pkg/p/__init__.py": "from .hub import VALUE\n",
        "pkg/p/hub.py": "from pkg.p.leaf import VALUE\n",
        "pkg/p/leaf.py": "VALUE = 1\n",
    }
    root = write_package(tmp_path, files)
    assert importing(root, "pkg.p.hub").returncode == 0
    assert checker.check(root, "pkg") == []


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
        r"\S+\.py: a module at the top level of orchestrator \(.+\)",
        r"package cycle: (orchestrator\.\w+ -> )+orchestrator\.\w+ \(.+ imports .+\)",
        r"structure ok: orchestrator",
    )
    for line in out:
        assert any(re.fullmatch(p, line) for p in patterns), line
