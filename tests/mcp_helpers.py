"""The `mcp` extra for the tests of MCP tools and `orchestrator mcp`.

Without the extra those tests skip, unless `CI` is set: there they fail (`.ci/run` installs it).
"""

from __future__ import annotations

import os

import pytest


def require_mcp() -> None:
    """Skip the calling test module without the extra; in CI fail. Call it before importing
    anything of `mcp`."""
    try:
        import mcp  # noqa: F401  (only asks whether it is installed)
    except ImportError:
        missing = "the `mcp` extra is not installed (pip install -e '.[mcp]')"
        if os.environ.get("CI"):
            raise RuntimeError(f"{missing}; CI runs the MCP tests, never skips them") from None
        pytest.skip(missing, allow_module_level=True)
