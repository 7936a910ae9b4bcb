"""Secrets kept away from tool processes and out of everything a model sees or the store keeps.

One module for the shell tool, the command actor and the tool results, so they cannot drift apart.

Theory of operation. The orchestrator holds credentials (the Anthropic API key or auth token);
its child processes (the shell tool's commands, a command actor's agent) and whatever they
print must not carry them:

- Environment, by name: every variable named `ANTHROPIC_*` or containing KEY, TOKEN, SECRET,
  PASSWORD, PASSWD or CREDENTIAL (case-insensitive) is dropped.
- Environment, by value: every variable whose value contains a credential is dropped too, so
  `MY_CONFIG=https://host/?k=<key>` does not carry the key past the name rule.
- Output, by value: `Secrets.redact` replaces each credential, its reversed form and its base64
  forms (standard and URL-safe, at each of the three byte alignments, so a credential inside a
  larger encoded blob is found too) by `[redacted]`, and so any run of `FRAGMENT` or more
  characters copied from one of those forms: a prefix or a slice of the key (`cut -c1-20`) is
  redacted like the whole. Callers redact *before* cutting text to a length limit, and
  `redact_cut` also removes a trailing partial form that a cut may leave.

This is defence in depth, not the barrier: a process that can read the key can always encode it
in a way no filter recognises (upper-casing, a custom cipher). The barrier is that the key is not
there to read: the environment is filtered and tool processes run in a sandbox whose PID
namespace hides the orchestrator's `/proc/PID/environ` (`sandbox.py`).
"""

from __future__ import annotations

import base64
import functools
import os
from collections.abc import Iterable, Mapping

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
CREDENTIAL_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
MIN_SECRET = 8  # shorter values are not credentials, and scrubbing them would garble output
FRAGMENT = 12  # a copied run this long from a secret form is redacted
REDACTED = "[redacted]"


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return upper.startswith("ANTHROPIC_") or any(word in upper for word in SECRET_WORDS)


def secret_values(environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> list[str]:
    """The credentials that must never reach a model: the Anthropic key and token, if set."""
    env = os.environ if environ is None else environ
    values = {env.get(name, "") for name in CREDENTIAL_VARIABLES} | set(extra)
    return sorted((v for v in values if len(v) >= MIN_SECRET), key=len, reverse=True)


def safe_environment(
    environ: Mapping[str, str] | None = None, extra_secrets: Iterable[str] = ()
) -> dict[str, str]:
    """The environment a tool process gets: secrets removed by name, credentials by value."""
    env = dict(os.environ if environ is None else environ)
    secrets = Secrets.of(tuple(secret_values(env, extra_secrets)))
    return {k: v for k, v in env.items() if not is_secret_name(k) and not secrets.found_in(v)}


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
        return bool(self.values) and self.redact(text) != text

    def redact(self, text: str) -> str:
        """`text` with every form of every secret, and every long fragment of one, redacted."""
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
