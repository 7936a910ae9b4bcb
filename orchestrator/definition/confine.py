"""`extends:` stays inside role libraries and agent folders (docs/security.md).

A graph may come from anyone, and its `extends:` names a file to read into a role (its goal, its
tools, its actor). So the name is a name, not a path: no `/` or `\\`, not `.` or `..`, not
hidden, not absolute; and the file found is inside the folder it was found in once symbolic
links are followed (a `roles/x.yaml` linking to `/home/me/.ssh/...` is refused, not read), and
a project's library or agent folder is inside the project (a `roles` that links to another
place is refused). The bundled library and the agent folders in the user's home are theirs to
arrange: only the file's own link is checked there.
The loader (library roles) and agentfiles.py (agent files) report either as `unknown-extends` at
the `extends:` that names it.
"""

from __future__ import annotations

from pathlib import Path


def name_problem(name: str) -> str | None:
    """Why `name` cannot name a file in a role library or agent folder, or None."""
    if not name or "/" in name or "\\" in name or "\0" in name or name.startswith("."):
        return (
            f"'{name}' is not a role name: `extends` names a role in a role library or an agent "
            "folder (no path, no `..`, no leading dot)"
        )
    return None


def leaves(candidate: Path, folder: Path, root: Path | None = None) -> bool:
    """Whether `candidate`, found in `folder`, is really elsewhere: a symbolic link out of the
    folder, or (with `root`, the project folder that holds `folder`) a folder that is itself a
    link out of the project (a repository's `roles -> /home/me/.config/gh`)."""
    try:
        real_folder = folder.resolve(strict=True)
        candidate.resolve(strict=True).relative_to(real_folder)
        if root is not None:
            real_folder.relative_to(root.resolve(strict=True))
    except (ValueError, OSError, RuntimeError):  # outside, gone, or a loop of links
        return True
    return False


def link_problem(candidate: Path) -> str:
    return (
        f"{candidate} leads, through a symbolic link, out of its folder or project; `extends` "
        "reads only files inside role libraries and agent folders"
    )
