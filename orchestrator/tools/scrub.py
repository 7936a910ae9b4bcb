"""Secrets kept away from the processes roles start and out of everything shown or stored.

One module for the shell tool, command actors, MCP servers, Claude Code's launcher, the
preconditions' commands and the tool results, so they cannot drift apart.

Theory of operation. The orchestrator holds credentials (a provider's API key or token, and
whatever else its user's environment holds: database URLs, tokens, proxies with passwords); its
child processes and whatever they print must not carry them:

- Environment, by allow-list (`safe_environment`): a child gets PATH, HOME, LANG, LC_*, TERM,
  TZ, USER and TMPDIR, plus the names its role lists under `env:`, and nothing else. A provider's
  key (`is_provider_key`: ANTHROPIC_API_KEY, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY, ...) is never
  passed, even when named (the loader refuses such a role). A base variable whose value holds a
  secret is dropped too, and so is a named one whose value holds a provider's key, so
  `TZ=<key>` does not carry the key past the name rule.
- Output, by value: `Secrets.redact` replaces each credential, its reversed form and its base64
  forms (standard and URL-safe, at each of the three byte alignments, so a credential inside a
  larger encoded blob is found too) by `[redacted]`, and so any run of `FRAGMENT` or more
  characters copied from one of those forms: a prefix or a slice of the key (`cut -c1-20`) is
  redacted like the whole. Callers redact *before* cutting text to a length limit, and
  `redact_cut` also removes a trailing partial form that a cut may leave. The credentials
  (`secret_values`) are the providers' keys, the values of other secret-named variables that
  look like tokens (12 characters or more; not a word, a path or a URL), and the
  `user:password` parts of URLs held in variables.
- Output, by shape: `redact_url_credentials` (also part of `Secrets.redact`) turns
  `scheme://user:pass@host` into `scheme://***@host` wherever it appears, so a base URL with a
  password, or an error quoting one, is shown and stored without it.

This is defence in depth, not the barrier: a process that can read the key can always encode it
in a way no filter recognises (upper-casing, a custom cipher). The barrier is that the key is not
there to read: the environment is an allow-list and tool processes run in a sandbox whose PID
namespace hides the orchestrator's `/proc/PID/environ` (`sandbox.py`).
"""

from __future__ import annotations

import base64
import functools
import os
import re
from collections.abc import Iterable, Mapping

from ..definition.secret_names import is_base_name, is_provider_key, is_secret_name

__all__ = [
    "REDACTED",
    "Secrets",
    "is_provider_key",
    "is_secret_name",
    "redact_url_credentials",
    "holder_of_secret",
    "safe_environment",
    "secret_values",
]

MIN_SECRET = 8  # shorter values are not credentials, and scrubbing them would garble output
MIN_TOKEN = 12  # a secret-named variable's value this long (and not a word) is a credential
FRAGMENT = 12  # a copied run this long from a secret form is redacted
REDACTED = "[redacted]"
# scheme://USERINFO@host: the userinfo (a user, a password, a token) is a credential. Greedy up
# to the last `@` before the path, so an unencoded `@` inside a password is covered too.
_URL_CREDENTIALS = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)([^\s/?#@'\"<>]*@)+")


def redact_url_credentials(text: str) -> str:
    """`text` with the credentials of every URL in it hidden: `https://***@host/...`."""
    if "@" not in text or "://" not in text:
        return text
    return _URL_CREDENTIALS.sub(lambda m: m.group(1) + "***@", text)


def url_credentials(value: str) -> list[str]:
    """The `user:password` parts of the URLs in `value`, and each password on its own."""
    found: list[str] = []
    for match in _URL_CREDENTIALS.finditer(value):
        userinfo = match.group(0)[len(match.group(1)) : -1]
        found.append(userinfo)
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
    return found


def _not_a_place(value: str) -> bool:
    # A secret-named variable may hold a path (GOOGLE_APPLICATION_CREDENTIALS=/home/me/c.json)
    # or a URL (ANTHROPIC_BASE_URL): hiding those, and every 12-character piece of them, would
    # garble every output (and drop every PATH) that mentions the home folder or the host. A
    # URL's secret is its credentials, found by `url_credentials`.
    return not value.startswith(("/", "~", ".")) and "://" not in value


def provider_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the providers' keys that are set (not paths or URLs)."""
    env = os.environ if environ is None else environ
    return [value for name, value in env.items() if is_provider_key(name) and _not_a_place(value)]


def _looks_like_token(value: str) -> bool:
    # Nor a plain setting (PIP_KEYRING_PROVIDER=disabled): a token is long and not one word.
    return (
        len(value) >= MIN_TOKEN
        and not value.isalpha()
        and not any(c.isspace() for c in value)
        and _not_a_place(value)
    )


def secret_values(environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> list[str]:
    """The credentials that must never reach a model or be shown: the providers' keys, the
    values of secret-named variables that look like tokens, the credentials in URLs."""
    env = os.environ if environ is None else environ
    values = set(provider_values(env)) | set(extra)
    for name, value in env.items():
        if is_secret_name(name) and _looks_like_token(value):
            values.add(value)
        values.update(url_credentials(value))
    return sorted((v for v in values if len(v) >= MIN_SECRET), key=len, reverse=True)


def holder_of_secret(text: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The variable whose credential `text` holds (a provider's key first), or None."""
    env = os.environ if environ is None else environ
    for name, secrets in _holders(tuple(env.items())):
        if secrets.found_in(text):
            return name
    return None


@functools.lru_cache(maxsize=4)
def _holders(items: tuple[tuple[str, str], ...]) -> tuple[tuple[str, Secrets], ...]:
    """The variables holding credentials, in the order `holder_of_secret` asks them (providers'
    keys first), each with its finder. Made once per environment: every thread's inputs are
    checked against it (`run/preflight.py`), and classifying every variable and making each
    finder cost more than the check itself; a changed environment is a new key."""
    env = dict(items)
    holders: list[tuple[str, Secrets]] = []
    for name in sorted(env, key=lambda n: (not is_provider_key(n), n)):
        value = env[name]
        found = url_credentials(value)
        if (is_provider_key(name) and _not_a_place(value)) or (
            is_secret_name(name) and _looks_like_token(value)
        ):
            found.append(value)
        kept = tuple(v for v in found if len(v) >= MIN_SECRET)
        if kept:
            holders.append((name, Secrets.of(kept)))
    return tuple(holders)


def safe_environment(
    environ: Mapping[str, str] | None = None,
    extra_secrets: Iterable[str] = (),
    passed: Iterable[str] = (),
) -> dict[str, str]:
    """The environment a child process gets: the base names, plus the `passed` names (a role's
    `env:`) that are not providers' keys; none whose value holds a credential it must not see."""
    env = os.environ if environ is None else environ
    extra = tuple(extra_secrets)
    every = Secrets.of(tuple(secret_values(env, extra)))
    keys = Secrets.of(tuple(sorted(set(provider_values(env)) | set(extra))))
    named = {name for name in passed if not is_provider_key(name)}
    return {
        name: value
        for name, value in env.items()
        if (is_base_name(name) and not every.found_in(value))
        or (name in named and not keys.found_in(value))
    }


def encoded_forms(secret: str) -> list[str]:
    """The secret, reversed, and in base64 (standard and URL-safe) at each byte alignment."""
    forms = {secret, secret[::-1]}
    for text in (secret, secret[::-1]):
        raw = text.encode()
        for shift in range(3):
            encoded = base64.b64encode(b"\x00" * shift + raw).decode()
            # Drop the characters that mix in the padding bytes or the unknown bytes after.
            start = (shift * 8 + 5) // 6 if shift else 0
            end = ((shift + len(raw)) * 8) // 6
            core = encoded[start:end]
            if len(core) >= MIN_SECRET:
                forms.add(core)
                forms.add(core.replace("+", "-").replace("/", "_"))
    return sorted(forms, key=len, reverse=True)


class Secrets:
    """Finds and redacts credentials, and the fragments and encodings of them, in text."""

    def __init__(self, values: Iterable[str]):
        self.values = tuple(v for v in values if len(v) >= MIN_SECRET)
        self.forms = tuple(
            sorted({f for v in self.values for f in encoded_forms(v)}, key=len, reverse=True)
        )
        self._windows = frozenset(
            f[i : i + FRAGMENT] for f in self.forms for i in range(len(f) - FRAGMENT + 1)
        )

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()
    ) -> Secrets:
        return cls.of(tuple(secret_values(environ, extra)))

    @staticmethod
    @functools.lru_cache(maxsize=16)
    def of(values: tuple[str, ...]) -> Secrets:
        """The finder for these values, made once: every step's tools and reply use one, and
        making it (every window of every encoded form) costs more than the step's own work."""
        return Secrets(values)

    def __bool__(self) -> bool:
        return bool(self.values)

    def found_in(self, text: str) -> bool:
        return bool(self.values) and self._redact_values(text) != text

    def redact(self, text: str) -> str:
        """`text` with every form of every secret, every long fragment of one, and the
        credentials of every URL in it redacted."""
        return self._redact_values(redact_url_credentials(text))

    def _redact_values(self, text: str) -> str:
        if not self.values or not text:
            return text
        for form in self.forms:
            if form in text:
                text = text.replace(form, REDACTED)
        spans = self._fragment_spans(text)
        if not spans:
            return text
        out: list[str] = []
        at = 0
        for start, end in spans:
            out.append(text[at:start] + REDACTED)
            at = end
        out.append(text[at:])
        return "".join(out)

    def redact_cut(self, text: str) -> str:
        """Like `redact`, for text that was cut at its end: a trailing partial form goes too."""
        text = self.redact(text)
        for form in self.forms:
            for size in range(min(len(form), len(text)) - 1, 3, -1):
                if text.endswith(form[:size]):
                    return text[:-size] + REDACTED
        return text

    def _fragment_spans(self, text: str) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        windows = self._windows
        for i in range(len(text) - FRAGMENT + 1):
            if text[i : i + FRAGMENT] in windows:
                end = i + FRAGMENT
                if spans and i <= spans[-1][1]:
                    spans[-1] = (spans[-1][0], end)
                else:
                    spans.append((i, end))
        return spans
