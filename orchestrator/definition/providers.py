"""Model providers: who answers a `model: PROVIDER:MODEL` (docs/format.md section 19).

A role's model is an alias, an Anthropic model id, or `PROVIDER:MODEL`. The built-in providers
are `anthropic`, `bedrock` and `vertex` (Claude through the `anthropic` SDK's own clients) and
`openai` (the `openai` package); any number of OpenAI-compatible servers (vLLM, Ollama, a hosted
router) are declared under `providers:` in a models file:

```yaml
providers:
  local:
    kind: openai-compatible
    base_url: http://127.0.0.1:8000/v1
    api_key_env: LOCAL_LLM_KEY     # optional: the variable that holds its key (a secret)
    tools: false                   # optional: its models take no tool calls
```

A model reference splits at its first `:` when what comes before is a provider's name (Bedrock
ids keep their own colons: `bedrock:anthropic.claude-sonnet-4-5-v1:0`); a bare id is
Anthropic's, and `anthropic:ID` is the same as `ID`, so the ledger and the price table see one
spelling. A prefix that names no provider is an error naming the providers there are.

Trust (docs/security.md): a models file *found* in the current folder may have come with a
cloned repository. One that declared a provider with `api_key_env` could send a key of the
user's environment to a server of its choosing, so a found file may declare only providers
without a key (a local server); a provider with a key belongs in a file the user names. The
variable a provider's key is read from becomes a provider's key like `ANTHROPIC_API_KEY`
(`secret_names.declare_provider_key`): never passed to a child, redacted wherever it shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import ProviderError
from .secret_names import ENV_NAME, declare_provider_key

ANTHROPIC = "anthropic"
# The built-in providers and the kind of each (a declared provider's kind is openai-compatible).
BUILTIN_KINDS = {
    "anthropic": "anthropic",
    "bedrock": "bedrock",
    "vertex": "vertex",
    "openai": "openai",
}
DECLARABLE_KINDS = ("openai-compatible",)
CLAUDE_KINDS = frozenset({"anthropic", "bedrock", "vertex"})  # played by the Anthropic actor
# Where each built-in provider's credentials come from, for `orchestrator models` and messages.
BUILTIN_CREDENTIALS = {
    "anthropic": "ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN",
    "bedrock": "AWS_BEARER_TOKEN_BEDROCK, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_REGION",
    "vertex": "ANTHROPIC_VERTEX_ACCESS_TOKEN or Google credentials, CLOUD_ML_REGION, "
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "openai": "OPENAI_API_KEY",
}
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
_PREFIX = re.compile(r"([A-Za-z0-9][A-Za-z0-9_-]*):(.+)")


class ModelRefError(ProviderError, ValueError):
    """A model reference or a `providers:` entry that cannot be used."""


@dataclass(frozen=True)
class Provider:
    name: str
    kind: str  # anthropic | bedrock | vertex | openai | openai-compatible
    base_url: str | None = None
    api_key_env: str | None = None
    tools: bool = True  # whether its models take tool calls
    source: str | None = None  # the models file that declares it; None: built in

    @property
    def claude(self) -> bool:
        """Played by the Anthropic actor (Anthropic's API, Bedrock, Vertex)."""
        return self.kind in CLAUDE_KINDS

    def credentials(self) -> str:
        if self.kind == "openai-compatible":
            return self.api_key_env or "(no key)"
        return BUILTIN_CREDENTIALS[self.kind]


BUILTIN_PROVIDERS = {name: Provider(name, kind) for name, kind in BUILTIN_KINDS.items()}


@dataclass(frozen=True)
class ModelRef:
    """A model as a provider knows it: `ModelRef("openai", "gpt-5")`."""

    provider: str
    model: str

    @property
    def ref(self) -> str:
        """The one spelling the ledger and the price table use (Anthropic's ids stay bare)."""
        return self.model if self.provider == ANTHROPIC else f"{self.provider}:{self.model}"


def split_ref(ref: str, providers: dict[str, Provider]) -> ModelRef:
    """`PROVIDER:MODEL` or a bare (Anthropic) id as a ModelRef; ModelRefError for an unknown
    provider's prefix."""
    match = _PREFIX.fullmatch(ref.strip())
    if match is None:
        return ModelRef(ANTHROPIC, ref.strip())
    prefix, model = match.group(1), match.group(2).strip()
    if prefix.lower() in providers:
        return ModelRef(prefix.lower(), model)
    known = ", ".join(sorted(providers))
    raise ModelRefError(
        f"model '{ref}' names the provider '{prefix}', which is not known (providers: {known}; "
        "declare others under `providers:` in the models file, docs/models.md)"
    )


def provider_of(model: str | None) -> str | None:
    """The provider a recorded step's model names (its `PROVIDER:` prefix, else Anthropic's),
    without the models file: for showing what a thread recorded."""
    if not model:
        return None
    match = _PREFIX.fullmatch(model)
    return match.group(1).lower() if match else ANTHROPIC


# The provider's name in OpenTelemetry's GenAI conventions (`gen_ai.provider.name`).
OTEL_NAMES = {"bedrock": "aws.bedrock", "vertex": "gcp.vertex_ai"}


def anthropic_id(ref: ModelRef) -> str | None:
    """The Anthropic model id a Bedrock or Vertex id stands for (for its price), else None:
    `us.anthropic.claude-sonnet-4-5-20250929-v1:0` and `claude-sonnet-4-5@20250929` are
    `claude-sonnet-4-5`."""
    if ref.provider == "vertex":
        return ref.model.split("@", 1)[0]
    if ref.provider == "bedrock":
        name = ref.model.rsplit("anthropic.", 1)[-1]
        return re.sub(r"-v\d+(:\d+)?$", "", name)
    return None


def parse_providers(raw: Any, path: str, found: bool) -> dict[str, Provider]:
    """The `providers:` section of a models file, merged over the built-in providers."""
    providers = dict(BUILTIN_PROVIDERS)
    if raw is None:
        return providers
    if not isinstance(raw, dict):
        raise ModelRefError(f"{path}: providers: must map provider names to their settings")
    for name, row in raw.items():
        where = f"{path}: providers.{name}"
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ModelRefError(f"{where}: a provider's name is lower-case letters, digits, - or _")
        if name in BUILTIN_PROVIDERS:
            raise ModelRefError(f"{where}: '{name}' is a built-in provider; choose another name")
        providers[name] = _provider(name, row, where, path, found)
    return providers


def _provider(name: str, row: Any, where: str, path: str, found: bool) -> Provider:
    if not isinstance(row, dict):
        raise ModelRefError(f"{where}: expected {{kind, base_url, api_key_env}}")
    extra = sorted(set(map(str, row)) - {"kind", "base_url", "api_key_env", "tools"})
    if extra:
        raise ModelRefError(f"{where}: unknown key(s) {', '.join(extra)}")
    kind = row.get("kind", "openai-compatible")
    if kind not in DECLARABLE_KINDS:
        raise ModelRefError(f"{where}.kind: expected one of {', '.join(DECLARABLE_KINDS)}")
    base_url = row.get("base_url")
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise ModelRefError(f"{where}.base_url: expected an http:// or https:// URL")
    key_env = row.get("api_key_env")
    if key_env is not None:
        if not isinstance(key_env, str) or not ENV_NAME.fullmatch(key_env):
            raise ModelRefError(f"{where}.api_key_env: expected an environment variable's name")
        if found:
            raise ModelRefError(
                f"{where}.api_key_env: a models file found in the current folder (it may have "
                "come with the repository) cannot name a key to send to its server; declare "
                "this provider in $ORCHESTRATOR_HOME/models.yaml or the file named by "
                "ORCHESTRATOR_MODELS_FILE"
            )
        declare_provider_key(key_env)
    tools = row.get("tools", True)
    if not isinstance(tools, bool):
        raise ModelRefError(f"{where}.tools: expected true or false")
    return Provider(name, kind, base_url.rstrip("/"), key_env, tools, path)
