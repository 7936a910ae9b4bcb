"""The `claude-code` actor: Claude Code plays the role, through the Claude Agent SDK.

Each step is one Claude Code session (`claude_agent_sdk.query`) in the step's workspace: Claude
Code's own system prompt with the role's appended (goal, procedure, the reply's format), the
visit message as the prompt (with the rejected reply and its errors when repairing), the role's
tool sets as Claude Code's tools (read: Read, Glob, Grep, LS; edit: Edit, Write, MultiEdit,
NotebookEdit; shell: Bash), allowed without asking and nothing else offered, and the step's
model. Its final text is the reply; its cost and tokens go to the ledger.

Secrets and confinement (docs/models.md): the SDK hands the CLI its parent's whole environment,
so the CLI is started through a small launcher that unsets every variable but a child's
allow-list (PATH, HOME, LANG, LC_*, TERM, TZ, USER, TMPDIR, the role's `env:`), Claude Code's
own (`ANTHROPIC_*`, `CLAUDE_*`: its key or token and its endpoint: the orchestrator hands
Claude Code the provider's key by design, as it is the model's client) and the ones the SDK
sets for it, and runs it in the role's sandbox, as a command actor is run: files
read-only outside the workspace and Claude Code's own folder (`~/.claude`, which is also its
`CLAUDE_CONFIG_DIR` unless one is set), network on. The launcher holds names, never values.
Claude Code's credentials are scrubbed from what it starts (CLAUDE_CODE_SUBPROCESS_ENV_SCRUB),
which makes its own command sandbox required; see `write_launcher` for roles with `shell`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..tools import sandbox as sandboxing
from ..tools.scrub import Secrets, safe_environment
from .base import ActorError, ActReply, ActRequest, Usage
from .prompting import repair_message, system_prompt, visit_message

# Our tool sets as Claude Code's tools.
TOOLS: dict[str, tuple[str, ...]] = {
    "read": ("Read", "Glob", "Grep", "LS"),
    "edit": ("Edit", "Write", "MultiEdit", "NotebookEdit"),
    "shell": ("Bash",),
}
# The variables Claude Code keeps though they look secret: its own settings and credentials
# (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL, CLAUDE_CODE_OAUTH_TOKEN, ...).
CLI_PREFIXES = ("ANTHROPIC_", "CLAUDE_")
INSTALL_HINT = (
    "install it with `pip install '.[claude-code]'` in orchestrator's folder (the Claude "
    "Agent SDK, which brings the `claude` command) or `npm install -g @anthropic-ai/claude-code`"
)


def claude_tools(tool_sets: Any) -> list[str]:
    """Claude Code's tool names for a role's tool sets (other entries have no counterpart)."""
    names: list[str] = []
    for entry in tool_sets:
        if isinstance(entry, str):
            names += [t for t in TOOLS.get(entry, ()) if t not in names]
    return names


def find_cli() -> str | None:
    """The `claude` command: the one on PATH (the user's own), else the one the SDK bundles."""
    on_path = shutil.which("claude")
    if on_path:
        return on_path
    try:
        import claude_agent_sdk  # why: optional extra; only located when a step needs it
    except ImportError:
        return None
    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return str(bundled) if bundled.is_file() and os.access(bundled, os.X_OK) else None


def user_prompt(request: ActRequest) -> str:
    parts = [visit_message(request)]
    for attempt in request.attempts:
        parts.append("Your previous reply was:\n\n" + attempt.reply)
        parts.append(repair_message(attempt.errors, request.role))
    return "\n\n---\n\n".join(parts)


class ClaudeCodeActor:
    kind = "claude-code"

    async def play(self, request: ActRequest) -> ActReply:
        try:
            import claude_agent_sdk as sdk  # why: optional extra, imported when a step needs it
        except ImportError:
            raise ActorError(
                f"role {request.role_name!r} is played by Claude Code, but the Claude Agent SDK "
                f"is not installed: {INSTALL_HINT}",
                "config",
            ) from None
        cli = find_cli()
        if cli is None:
            raise ActorError(
                f"role {request.role_name!r} is played by Claude Code, but there is no `claude` "
                f"command: {INSTALL_HINT}",
                "config",
            )
        secrets = Secrets.from_environment()
        prompt = user_prompt(request)
        errors: list[str] = []
        with tempfile.TemporaryDirectory(prefix="orchestrator-claude-") as folder:
            launcher = write_launcher(Path(folder), cli, request)
            options = sdk.ClaudeAgentOptions(
                cwd=str(request.workspace),
                cli_path=str(launcher),
                model=request.model,
                system_prompt={
                    "type": "preset",
                    "preset": "claude_code",
                    "append": system_prompt(request.role, request.role_name),
                },
                tools=claude_tools(request.role.tools),
                allowed_tools=claude_tools(request.role.tools),
                permission_mode="dontAsk",
                setting_sources=[],
                env=cli_env(request),
                stderr=errors.append,  # kept to say why, when the CLI fails
            )
            text, result, tool_calls = "", None, 0
            try:
                async for message in sdk.query(prompt=prompt, options=options):
                    if isinstance(message, sdk.AssistantMessage):
                        tool_calls += sum(isinstance(b, sdk.ToolUseBlock) for b in message.content)
                        said = "".join(
                            b.text for b in message.content if isinstance(b, sdk.TextBlock)
                        )
                        text = said or text
                    elif isinstance(message, sdk.ResultMessage):
                        result = message
            except sdk.ClaudeSDKError as exc:
                said = "\n".join([str(exc), *errors[-5:]])
                detail = [line for line in secrets.redact(said).splitlines() if line.strip()]
                raise ActorError(
                    "Claude Code failed: " + " / ".join(detail[-5:]), "process"
                ) from None
        return reply_of(result, text, tool_calls, request, secrets)


def reply_of(
    result: Any, text: str, tool_calls: int, request: ActRequest, secrets: Secrets
) -> ActReply:
    """The step's reply from Claude Code's result message, with its cost and tokens."""
    if result is None:
        raise ActorError("Claude Code ended without a result", "process")
    usage = Usage.from_dict(result.usage)
    cost = float(result.total_cost_usd or 0.0)
    if result.is_error:
        said = result.result or "; ".join(result.errors or []) or result.subtype
        raise ActorError(
            f"Claude Code stopped ({result.subtype}): {secrets.redact(str(said))}",
            "provider",
            usage=usage,
            cost_usd=cost,
        )
    final = result.result if isinstance(result.result, str) and result.result else text
    return ActReply(
        text=secrets.redact(final),
        message=secrets.redact(user_prompt(request)),
        usage=usage,
        cost_usd=cost,
        model=request.model,
        tool_calls=tool_calls,
    )


def cli_env(request: ActRequest) -> dict[str, str]:
    """What the SDK adds to the CLI's environment (the launcher removes the secrets)."""
    env = {
        "ORCHESTRATOR_THREAD_ID": request.thread_id,
        "ORCHESTRATOR_ROLE": request.role_name,
        "ORCHESTRATOR_STEP": str(request.step),
        # Claude Code's own commands (its Bash tool, hooks, MCP servers) get its environment
        # without its credentials: the key must not reach what the model can read.
        "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB": "1",
    }
    # A graph's step should not phone home: no telemetry, error reports or update checks.
    env.setdefault("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    if "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC" in os.environ:
        del env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"]
    if "CLAUDE_CONFIG_DIR" not in os.environ:
        env["CLAUDE_CONFIG_DIR"] = str(config_dir())
    return env


def config_dir() -> Path:
    """Claude Code's folder: `CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    given = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(given).expanduser() if given else Path(os.path.expanduser("~")) / ".claude"


def removed_variables(
    environ: dict[str, str] | None = None, passed: Iterable[str] = (), keep: Iterable[str] = ()
) -> list[str]:
    """The variables the launcher drops: all but a child's allow-list (with the role's `env:`
    names, `passed`), Claude Code's own settings and credentials, and `keep` (what the SDK
    sets for this step)."""
    env = dict(os.environ if environ is None else environ)
    kept = set(safe_environment(env, (), passed)) | set(keep)
    return sorted(k for k in env if k not in kept and not k.upper().startswith(CLI_PREFIXES))


def write_launcher(folder: Path, cli: str, request: ActRequest) -> Path:
    """A script that starts `cli` without the secrets, in the role's sandbox.

    A role with `shell` is the exception: Claude Code runs each of its commands in a sandbox
    of its own (bubblewrap, with the environment scrubbed of its credentials, and required:
    a command is refused when that sandbox cannot start), and a sandbox cannot be made inside
    ours, so there the CLI itself runs outside ours and its commands inside its own."""
    argv = [cli]
    policy = sandboxing.policy_for(request.role.sandbox, agent=True)
    if policy is None:
        sandboxing.warn_unsandboxed(request.role_name, "Claude Code")
    elif "shell" not in request.role.tools:
        own = config_dir()
        own.mkdir(parents=True, exist_ok=True)
        policy = replace(policy, writable=(*policy.writable, sandboxing.expand(str(own))))
        try:
            argv = sandboxing.wrap(
                argv, workspace=request.workspace, policy=policy, boundary=request.boundary
            )
        except sandboxing.SandboxUnavailable as exc:
            raise ActorError(
                f"role {request.role_name!r} was not started: {exc}", "sandbox"
            ) from None
    removed = removed_variables(None, request.role.env, cli_env(request))
    unset = " ".join(f"-u {shlex.quote(name)}" for name in removed)
    script = folder / "claude"
    script.write_text(f'#!/bin/sh\nexec env {unset} {shlex.join(argv)} "$@"\n')
    script.chmod(stat.S_IRWXU)
    return script
