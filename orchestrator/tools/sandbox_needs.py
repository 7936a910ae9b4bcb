"""Before a run: which roles need a sandbox, and whether one can be made for each of them here.

Asked by the session's preflight (run/preflight.py) so that a run is refused before anything is
created, rather than suspending at the first command."""

from __future__ import annotations

from ..definition.models import Graph, Role
from .sandbox import INSTALL_HINT, mechanism, missing_writable, policy_for


def needs_sandbox(role: Role) -> str | None:
    """What of the role runs in a sandbox ("shell commands", "agent process"), or None."""
    if role.sandbox == "off":
        return None
    if role.is_command:
        return "agent process"
    if role.is_claude_code and "shell" not in role.tools:
        return "Claude Code"  # with `shell`, Claude Code's own sandbox runs its commands
    if role.is_model and "shell" in role.tools:
        return "shell commands"
    if role.is_model and role.mcp_servers:
        return "MCP servers"
    return None


def unsandboxed_roles(graph: Graph, prefix: str = "") -> list[str]:
    """The roles that start processes and said `sandbox: off`, a child graph's (of a subgraph
    role, whose thread runs them too) as `role/child-role`."""
    found = [
        prefix + name
        for name, role in graph.roles.items()
        if role.sandbox == "off" and (role.is_command or "shell" in role.tools or role.mcp_servers)
    ]
    for name in graph.roles:
        child = graph.subgraph(name)
        if child is not None:
            found += unsandboxed_roles(child, f"{prefix}{name}/")
    return found


def sandbox_problem(graph: Graph) -> str | None:
    """Why some role's sandbox cannot be made on this machine, or None when all can."""
    needing = {name: what for name, role in graph.roles.items() if (what := needs_sandbox(role))}
    if not needing:
        return None
    problems: list[str] = []
    if mechanism() is None:
        listed = ", ".join(f"{name!r} ({what})" for name, what in needing.items())
        problems.append(
            f"roles {listed} must run in a sandbox, and none can be made on this machine: "
            + INSTALL_HINT
        )
    for name in needing:
        setting = graph.roles[name].sandbox
        policy = policy_for(setting, agent=graph.roles[name].is_command)
        missing = missing_writable(policy) if policy else []
        if missing:
            problems.append(
                f"role {name!r}: sandbox writable paths do not exist: "
                + ", ".join(str(p) for p in missing)
            )
    return "; ".join(problems) or None
