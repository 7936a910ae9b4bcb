"""Roles from other tools' agent files: `extends: claude:NAME` and `extends: opencode:NAME`.

A Claude Code subagent (`.claude/agents/NAME.md`) and an OpenCode agent (`.opencode/agent/NAME.md`)
are Markdown files whose YAML frontmatter says `description`, `tools` and `model` and whose body is
the agent's system prompt. They become a layer under the graph's role, as a library role does:
the body is the `goal`, the tools are mapped onto our tool sets, `model: inherit` leaves the
graph's default. What takes tools away is honoured, cautiously (a read-only subagent must not
become a role that edits and runs commands): `disallowedTools` removes the set of each tool it
names (`Bash(git:*)` counts as Bash), and `permissionMode: plan` leaves only `read`. Everything
else in them (`name`, `mode`, `color`, ...) means nothing here and is left alone. The graph's
role still gives `frontmatter` (docs/format.md, "Roles from agent files"), and a `tools:` it
writes itself still overrides the agent file's.

The file is looked for from the graph's folder up to its repository's root, then in the user's
home, where each tool keeps its user-wide agents. A Claude Code agent is found as Claude Code
keys it, by its frontmatter `name:` (often not its file's stem), else by its file's stem. A
`model` that is no alias nor Claude model id is kept, with an `unknown-model` warning.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import confine
from .problems import GraphError, Problem
from .yamlpos import SourceMap, YamlSyntaxError, load_yaml


@dataclass(frozen=True)
class AgentKind:
    """One tool's agent files: where they live in a project and in the user's home."""

    prefix: str
    project: tuple[str, ...]  # folders under a project folder, tried in order
    home: tuple[str, ...]  # folders under the home folder
    # Claude Code keys an agent by its frontmatter `name:`, which often differs from the file's
    # stem; OpenCode by the file's name.
    by_name: bool = False


KINDS: dict[str, AgentKind] = {
    "claude": AgentKind("claude", (".claude/agents",), (".claude/agents",), by_name=True),
    # OpenCode documents `.opencode/agent/`; newer releases also read the plural folder.
    "opencode": AgentKind(
        "opencode",
        (".opencode/agent", ".opencode/agents"),
        (".config/opencode/agent", ".config/opencode/agents", ".opencode/agent"),
    ),
}

# Claude Code's and OpenCode's tool names (compared case-insensitively) onto our tool sets.
TOOL_MAP: dict[str, str] = {
    "read": "read",
    "glob": "read",
    "grep": "read",
    "ls": "read",
    "list": "read",  # OpenCode's name for LS
    "edit": "edit",
    "write": "edit",
    "multiedit": "edit",
    "patch": "edit",  # OpenCode's
    "bash": "shell",
}
ALL_SETS = ("read", "edit", "shell")
MAX_AGENT_FILE_BYTES = (
    10_000_000  # as a graph file (definition/loader.py); agent files are a few KB
)


def agent_ref(extends: str) -> tuple[AgentKind, str] | None:
    """`claude:NAME` or `opencode:NAME` as (kind, NAME); None for a library role's name."""
    prefix, sep, name = extends.partition(":")
    if not sep or prefix not in KINDS:
        return None
    return KINDS[prefix], name


def search_folders(
    kind: AgentKind, graph_path: Path | None, home: Path | None = None
) -> list[Path]:
    """Where an agent file is looked for: the graph's folder and its parents up to the
    repository's root (the folder holding `.git`; only the graph's folder outside a repository),
    then the user's home."""
    start = (graph_path.resolve().parent if graph_path is not None else Path.cwd()).resolve()
    chain = [start, *start.parents]
    root = next((p for p in chain if (p / ".git").exists()), None)
    projects = chain[: chain.index(root) + 1] if root is not None else [start]
    folders = [p / sub for p in projects for sub in kind.project]
    home = home if home is not None else Path(os.path.expanduser("~"))
    folders += [home / sub for sub in kind.home]
    return list(dict.fromkeys(folders))


def find_agent_file(kind: AgentKind, name: str, graph_path: Path | None) -> Path | None:
    """The agent NAME in the nearest folder that has it: for Claude Code, the file whose
    frontmatter says `name: NAME`, else NAME.md (as Claude Code itself finds it). ValueError
    when `name` is no agent name or the file is a link out of its folder (definition/confine.py)."""
    problem = confine.name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    for folder in search_folders(kind, graph_path):
        named = _named_in(folder, name) if kind.by_name else None
        candidate = named or folder / f"{name}.md"
        if candidate.is_file():
            if confine.leaves(candidate, folder, agent_root(kind, folder)):
                raise ValueError(confine.link_problem(candidate))
            return candidate
    return None


def agent_root(kind: AgentKind, folder: Path, home: Path | None = None) -> Path | None:
    """The project folder an agent folder lies in, which the folder may not be a link out of;
    None for the user's home folders, theirs to arrange (dotfiles often link them)."""
    home = home if home is not None else Path(os.path.expanduser("~"))
    if any(folder == home / sub for sub in kind.home):
        return None
    for sub in kind.project:
        if folder.as_posix().endswith("/" + sub):
            return folder.parents[len(Path(sub).parts) - 1]
    return None


_NAME_LINE = re.compile(r"""^name:[ \t]*(["']?)(?P<name>[^"'#\n]*?)\1[ \t]*(?:#.*)?$""", re.M)
_HEAD_BYTES = 8192  # a frontmatter's `name:` is near its top; a long body is not read


def _named_in(folder: Path, name: str) -> Path | None:
    """The agent file in a folder whose frontmatter's top-level `name:` is `name`."""
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".md" and p.is_file())
    except OSError:
        return None
    for path in files:
        try:
            with path.open(encoding="utf-8-sig", errors="replace") as handle:
                head = handle.read(_HEAD_BYTES)
        except OSError:
            continue
        if not head.lstrip().startswith("---"):
            continue
        front = head.lstrip()[3:].split("\n---", 1)[0]
        found = _NAME_LINE.search(front)
        if found is not None and found.group("name").strip() == name:
            return path
    return None


@dataclass
class AgentLayer:
    """An agent file read as role fields, with the positions of those fields in the file."""

    data: dict[str, Any]
    smap: SourceMap
    notes: list[Problem]  # warnings: tools and models with no meaning here
    restrictions: tuple[str, ...] = ()  # what took tools away, as `orchestrator roles` shows it


def read_agent_file(path: Path, role: str) -> AgentLayer:
    """The role fields an agent file gives. Raises GraphError for a file that cannot be read."""
    file = _display(path)
    try:
        size = path.stat().st_size
        if size > MAX_AGENT_FILE_BYTES:  # refused before it is read, as graph files are
            raise GraphError(
                [
                    Problem(
                        file,
                        1,
                        1,
                        "yaml-limit",
                        "error",
                        f"the file has {size:,} bytes, more than the {MAX_AGENT_FILE_BYTES:,} "
                        "an agent file may have",
                    )
                ]
            )
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise GraphError(
            [Problem(file, 1, 1, "unreadable", "error", f"cannot read {file}: {reason}")]
        ) from None
    fm_text, body = "", text
    if text.lstrip().startswith("---"):
        # deferred: python-frontmatter's import costs start-up time a graph file never needs
        from frontmatter.default_handlers import YAMLHandler

        try:
            fm_text, body = YAMLHandler().split(text)
        except ValueError:
            fm_text, body = "", text
    offset = text[: text.find(fm_text)].count("\n") if fm_text else 0
    try:
        fields, smap = load_yaml("\n" * offset + fm_text, file)
    except YamlSyntaxError as exc:
        raise GraphError(
            [Problem(file, exc.line, exc.column, exc.code, "error", exc.message, exc.hint)]
        ) from None
    if fields is None:
        fields = {}
    if not isinstance(fields, dict):
        message = "an agent file's frontmatter must be a mapping (description, tools, model)"
        raise GraphError([Problem(file, 1, 1, "bad-type", "error", message)])
    data: dict[str, Any] = {}
    notes: list[Problem] = []
    if "description" in fields:
        data["description"] = fields["description"]
    if body.strip():
        data["goal"] = body.strip() + "\n"
        body_line = text[: text.find(body.strip())].count("\n") + 1
        smap.values[("goal",)] = (body_line, 1)
    model = _model(fields.get("model"), smap, role, notes)
    if model is not None:
        data["model"] = model
    if "temperature" in fields:
        data["temperature"] = fields["temperature"]
    data["tools"] = _tools(fields.get("tools"), "tools" in fields, smap, role, notes)
    removed, restrictions = _taken_away(fields, smap)
    if removed and isinstance(data["tools"], list):
        data["tools"] = [t for t in data["tools"] if t not in removed]
    return AgentLayer(data, smap, notes, restrictions)


def _taken_away(fields: dict[str, Any], smap: SourceMap) -> tuple[set[str], tuple[str, ...]]:
    """The tool sets `disallowedTools` and `permissionMode: plan` take away, and how to say so.
    Raises GraphError for a `disallowedTools` that is neither a list nor a comma string: an
    unreadable restriction must not read as none."""
    removed: set[str] = set()
    said: list[str] = []
    value = fields.get("disallowedTools")
    if value is not None:
        if isinstance(value, str):
            names = [t.strip() for t in value.split(",") if t.strip()]
        elif isinstance(value, list) and all(isinstance(t, str) for t in value):
            names = [t.strip() for t in value if t.strip()]
        else:
            line, col = smap.at(("disallowedTools",))
            message = "disallowedTools: expected a list of tool names or a comma-separated string"
            raise GraphError([Problem(smap.file, line, col, "bad-type", "error", message)])
        # `Bash(rm:*)` forbids some commands in Claude Code; here it forbids the whole set.
        removed |= {
            TOOL_MAP[m] for t in names if (m := t.split("(")[0].strip().lower()) in TOOL_MAP
        }
        if names:
            said.append("disallowedTools: " + ", ".join(names))
    if fields.get("permissionMode") == "plan":
        removed |= {"edit", "shell"}
        said.append("permissionMode: plan (read-only)")
    return removed, tuple(said)


def _display(path: Path) -> str:
    """The file as problems name it: relative to the working folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _model(value: Any, smap: SourceMap, role: str, notes: list[Problem]) -> Any:
    """`inherit` (or nothing) is the graph's default; `anthropic/ID` (OpenCode) is ID; another
    provider's model cannot be played here: the graph's default, with a warning."""
    if value is None or value == "inherit":
        return None
    if isinstance(value, str) and "/" in value:
        provider, _, model = value.partition("/")
        if provider == "anthropic" and model:
            return model
        line, col = smap.at(("model",))
        notes.append(
            Problem(
                smap.file,
                line,
                col,
                "unmapped-model",
                "warning",
                f"role '{role}': model '{value}' is not an Anthropic model; the graph's default "
                "model plays the role",
                "set `model:` on the graph's role to choose another",
            )
        )
        return None
    if isinstance(value, str) and not known_model(value):
        line, col = smap.at(("model",))
        notes.append(
            Problem(
                smap.file,
                line,
                col,
                "unknown-model",
                "warning",
                f"role '{role}': the agent's model '{value}' is no model alias nor a Claude "
                "model id; it is sent as it is, and the API will refuse it",
                "use opus, sonnet, haiku (or an alias of your models file), inherit, or a model "
                "id such as claude-sonnet-4-5; or set `model:` on the graph's role",
            )
        )
    return value


def known_model(value: str) -> bool:
    """An alias (built in or from the models file), a Claude model id, or a priced model."""
    # deferred: only agent files that name a model need the models file
    from .model_config import ALIASES, ModelConfigError, load_config

    if value.lower().startswith("claude-"):
        return True
    try:
        config = load_config()
        aliases, prices = set(config.aliases), set(config.prices)
    except ModelConfigError:  # a broken models file is reported where models are used
        aliases, prices = set(ALIASES), set()
    return value.lower() in aliases or value in prices


def _tools(value: Any, given: bool, smap: SourceMap, role: str, notes: list[Problem]) -> Any:
    """The tool sets of an agent's `tools`: a list, a comma string or a map of booleans.

    Left out, the agent has every tool (as in both tools), so the role gets every set. In a map,
    `true` adds a tool's set and `false` takes it away from the default of all: a set is kept
    only if none of its tools is turned off. Anything else is returned as is, so that the
    model's validation reports it at its place in the agent file.
    """
    if not given:
        return list(ALL_SETS)
    if value is None:
        return []
    entries: list[tuple[str, bool, tuple[str | int, ...]]]
    if isinstance(value, str):
        entries = [(t.strip(), True, ("tools",)) for t in value.split(",") if t.strip()]
    elif isinstance(value, list) and all(isinstance(t, str) for t in value):
        entries = [(t.strip(), True, ("tools", i)) for i, t in enumerate(value)]
    elif isinstance(value, dict) and all(isinstance(v, bool) for v in value.values()):
        entries = [(str(k), v, ("tools", str(k))) for k, v in value.items()]
    else:
        return value
    on: set[str] = set()
    off: set[str] = set()
    for tool, enabled, where in entries:
        mapped = TOOL_MAP.get(tool.lower())
        if mapped is None:
            if enabled:
                line, col = smap.at(where, key=isinstance(value, dict))
                notes.append(
                    Problem(
                        smap.file,
                        line,
                        col,
                        "unmapped-tool",
                        "warning",
                        f"role '{role}': the agent's tool '{tool}' has no counterpart here "
                        "and is left out",
                        "tools map onto read (Read, Glob, Grep, LS), edit (Edit, Write, "
                        "MultiEdit) and shell (Bash)",
                    )
                )
            continue
        (on if enabled else off).add(mapped)
    if isinstance(value, dict):
        return [s for s in ALL_SETS if s not in off]
    return [s for s in ALL_SETS if s in on]


def agent_layer(
    role: str, agent: tuple[AgentKind, str], graph_smap: SourceMap, graph_path: Path | None
) -> AgentLayer:
    """The layer an agent file gives a graph's role; its warnings join the graph's notes.
    Raises GraphError (at the role's `extends`) when no such agent file is found."""
    kind, name = agent
    line, col = graph_smap.at(("roles", role, "extends"))
    try:
        found = find_agent_file(kind, name, graph_path)
    except ValueError as exc:
        message = f"role '{role}' cannot extend '{kind.prefix}:{name}': {exc}"
        raise GraphError(
            [Problem(graph_smap.file, line, col, "unknown-extends", "error", message)]
        ) from None
    if found is None:
        folders = search_folders(kind, graph_path)
        raise GraphError(
            [
                Problem(
                    graph_smap.file,
                    line,
                    col,
                    "unknown-extends",
                    "error",
                    f"role '{role}' extends '{kind.prefix}:{name}', but no "
                    + (
                        f"agent named '{name}' (by its `name:` or as {name}.md)"
                        if kind.by_name
                        else f"{name}.md"
                    )
                    + f" is in any {kind.prefix} agents folder",
                    "looked in: " + ", ".join(str(f) for f in folders),
                )
            ]
        )
    layer = read_agent_file(found, role)
    graph_smap.notes.extend(layer.notes)
    return layer
