"""Which environment variables are secrets, and which every child process may get.

Kept apart from `tools/scrub.py` (which finds and redacts the values) so that the graph models
can refuse a role that names a provider's key under `env:` without importing the tools package.
"""

from __future__ import annotations

import re

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
SECRET_PARTS = frozenset({"PASS", "PAT", "AUTH", "CREDS", "APIKEY"})
CREDENTIAL_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
# What every child gets (docs/security.md); LC_* too. Nothing here may hold a secret.
BASE_ENVIRONMENT = ("PATH", "HOME", "LANG", "TERM", "TZ", "USER", "TMPDIR")
# Providers' keys: never passed to a child, even when a role names them under `env:`.
PROVIDER_KEYS = frozenset(
    {
        *CREDENTIAL_VARIABLES,
        "CLAUDE_CODE_OAUTH_TOKEN",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "ANTHROPIC_VERTEX_ACCESS_TOKEN",
        "OPENAI_API_KEY",
    }
)
# A variable with one of these prefixes and a secret word in its name is a provider's key.
PROVIDER_PREFIXES = (
    "ANTHROPIC_",
    "CLAUDE_",
    "OPENAI_",
    "AZURE_",
    "AWS_",
    "GOOGLE_",
    "GEMINI_",
    "VERTEX_",
    "MISTRAL_",
    "GROQ_",
    "DEEPSEEK_",
    "OPENROUTER_",
    "XAI_",
    "COHERE_",
    "TOGETHER_",
    "FIREWORKS_",
    "HF_",
    "HUGGINGFACE_",
)

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The variables named by a models file's `api_key_env:` (definition/providers.py): an
# OpenAI-compatible server's key is a provider's key like the built-in ones.
_DECLARED: set[str] = set()


def declare_provider_key(name: str) -> None:
    """A models file declares that `name` holds a provider's key."""
    _DECLARED.add(name.upper())


def is_secret_name(name: str) -> bool:
    """A name that says it holds a credential: KEY, TOKEN, SECRET, PASSWORD... anywhere in it,
    or PASS, PAT, AUTH, CREDS as one of its `_`-separated parts (DB_PASS, GITHUB_PAT, NPM_AUTH;
    not PATH, AUTHOR or COMPASS)."""
    upper = name.upper()
    return (
        upper.startswith("ANTHROPIC_")
        or any(word in upper for word in SECRET_WORDS)
        or any(part in SECRET_PARTS for part in upper.split("_"))
    )


def is_provider_key(name: str) -> bool:
    """A model provider's credential: never in a child's environment, whatever the role says."""
    upper = name.upper()
    return (
        upper in PROVIDER_KEYS
        or upper in _DECLARED
        or (upper.startswith(PROVIDER_PREFIXES) and any(word in upper for word in SECRET_WORDS))
    )


def is_base_name(name: str) -> bool:
    """A variable every child gets (docs/security.md)."""
    return name in BASE_ENVIRONMENT or name.startswith("LC_")
