"""Model aliases and prices: which model an alias means and what its tokens cost.

Graphs name models by alias (`opus`, `sonnet`, `haiku`) so that a graph keeps working when a new
model generation ships; this module is the one place that maps aliases to model ids. The price
table turns a step's token usage into dollars for the cost ledger and the `max_cost_usd` guard.

Both tables have built-in defaults and can be overridden by a user file (docs/models.md):

1. the file named by `ORCHESTRATOR_MODELS_FILE`, else
2. `$ORCHESTRATOR_HOME/models.yaml` when `ORCHESTRATOR_HOME` is set, else
3. `./.orchestrator/models.yaml` (next to the default store) when it exists.

```yaml
default: sonnet                 # the model of roles that name none (ORCHESTRATOR_MODEL wins)
aliases:
  sonnet: claude-sonnet-5-5     # redefine an alias ...
  cheap: claude-haiku-5-5       # ... or add one
prices:                         # USD per million tokens
  claude-sonnet-5-5: {input: 2.0, output: 10.0, cache_write: 2.5, cache_read: 0.1}
```

`model:` may also be `PROVIDER:MODEL` (docs/format.md section 19): the file's `providers:`
declares OpenAI-compatible servers (definition/providers.py), an alias may point at any
provider's model, and `model_ref()` says which provider answers. A Bedrock or Vertex id without
a price of its own is priced as the Anthropic model it names.

A model without a price costs 0 and `price_known()` says so, so that the ledger can print
"price unknown" instead of pretending the step was free. Nothing here imports `anthropic`.

Trust (docs/security.md): the files of 1 and 2 are the user's own (they named them). The file of 3 is
*found*: it sits in the folder the command runs in, so it can come with a cloned repository, and
a planted one could remap `sonnet` or price it at 0 so that `max_cost_usd` never trips. So a
found file may not price a known model (or a dated id of one) below its built-in price
(ModelConfigError naming the file), and what it changes (`ModelConfig.changes`) is announced
when a thread starts and recorded in its ThreadStarted event (run/session.py). A found file is
read once per folder by a process (`_pinned`): a thread run in place whose store is elsewhere
leaves `./.orchestrator/` writable to its roles, and a `models.yaml` one of them wrote there (or
changed) mid-thread would otherwise remap the aliases and prices of the thread's later steps,
unannounced. A long-running `serve` or `mcp` sees a found file changed after it started only
once restarted; a named file (1, 2) is read again whenever it changes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from .providers import (
    BUILTIN_PROVIDERS,
    ModelRef,
    ModelRefError,
    Provider,
    anthropic_id,
    parse_providers,
    split_ref,
)

if TYPE_CHECKING:
    from ..actors.base import Usage

DEFAULT_ALIAS = "sonnet"

ALIASES: dict[str, str] = {
    "opus": "claude-opus-5-5",
    "sonnet": "claude-sonnet-5-5",
    "haiku": "claude-haiku-5-5",
}


@dataclass(frozen=True)
class Price:
    """USD per million tokens. `cache_write` is the 5-minute cache write rate."""

    input: float
    output: float
    cache_write: float
    cache_read: float


def _p(input: float, output: float, cache_write: float, cache_read: float) -> Price:
    return Price(input, output, cache_write, cache_read)


# Published list prices (Anthropic pricing page, autumn 2026). Claude Haiku 5.5 is billed in two
# bands; this is the band for prompts up to 100,000 tokens, which covers typical role steps.
PRICES: dict[str, Price] = {
    "claude-fable-5-1": _p(10.0, 50.0, 12.5, 0.25),
    "claude-mythos-5-1": _p(10.0, 50.0, 12.5, 0.25),
    "claude-fable-5": _p(10.0, 50.0, 12.5, 1.0),
    "claude-mythos-5": _p(10.0, 50.0, 12.5, 1.0),
    "claude-opus-5-5": _p(4.0, 20.0, 5.0, 0.2),
    "claude-opus-5": _p(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-8": _p(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-7": _p(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-6": _p(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-5": _p(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-1": _p(15.0, 75.0, 18.75, 1.5),
    "claude-sonnet-5-5": _p(2.0, 10.0, 2.5, 0.1),
    "claude-sonnet-5": _p(2.0, 10.0, 2.5, 0.2),
    "claude-sonnet-4-6": _p(3.0, 15.0, 3.75, 0.3),
    "claude-sonnet-4-5": _p(3.0, 15.0, 3.75, 0.3),
    "claude-haiku-5-5": _p(0.1, 0.5, 0.125, 0.01),
    "claude-haiku-4-5": _p(1.0, 5.0, 1.25, 0.1),
}

_DATE_SUFFIX = re.compile(r"-\d{8}$")


class ModelConfigError(ProviderError):
    """The user's models file is unreadable or malformed."""


@dataclass(frozen=True)
class ModelConfig:
    aliases: dict[str, str]
    prices: dict[str, Price]
    default: str
    source: str | None = None  # the user file merged in, if any
    found: bool = False  # that file was found in the current folder, not named by the user
    changes: tuple[str, ...] = ()  # what it changes: aliases remapped or added, prices, default
    providers: dict[str, Provider] = field(default_factory=lambda: dict(BUILTIN_PROVIDERS))

    def found_changes(self) -> dict[str, Any] | None:
        """What a found models file changes, for the thread's record; None if nothing."""
        if not self.found or not self.changes:
            return None
        return {"path": self.source, "changes": list(self.changes)}


def config_path() -> Path | None:
    """The user models file in effect, or None (see the module docstring for the order)."""
    explicit = os.environ.get("ORCHESTRATOR_MODELS_FILE")
    if explicit:
        return Path(explicit)
    home = os.environ.get("ORCHESTRATOR_HOME")
    candidate = Path(home) / "models.yaml" if home else Path(".orchestrator") / "models.yaml"
    return candidate if candidate.is_file() else None


def models_file_target() -> Path:
    """The models file to write prices into: the one in effect, else where one would be read."""
    found = config_path()
    if found is not None:
        return found
    home = os.environ.get("ORCHESTRATOR_HOME")
    return Path(home) / "models.yaml" if home else Path(".orchestrator") / "models.yaml"


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ModelConfigError(f"{where}: expected a non-negative number, got {value!r}")
    return float(value)


def _found() -> bool:
    """Whether a models file in effect is found in the current folder (case 3 of the module
    docstring) rather than named by the user."""
    return not os.environ.get("ORCHESTRATOR_MODELS_FILE") and not os.environ.get(
        "ORCHESTRATOR_HOME"
    )


def _parse(data: Any, path: str, found: bool = False) -> ModelConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ModelConfigError(f"{path}: expected a mapping with aliases:, prices:, default:")
    unknown = sorted(set(data) - {"aliases", "prices", "default", "providers"})
    if unknown:
        raise ModelConfigError(
            f"{path}: unknown key(s) {', '.join(unknown)}; expected providers, aliases, prices, "
            "default"
        )
    try:
        providers = parse_providers(data.get("providers"), path, found)
    except ModelRefError as exc:
        raise ModelConfigError(str(exc)) from None
    changes: list[str] = [
        f"provider {p.name} ({p.kind}) at {p.base_url}" for p in providers.values() if p.source
    ]
    aliases = dict(ALIASES)
    raw_aliases = data.get("aliases") or {}
    if not isinstance(raw_aliases, dict):
        raise ModelConfigError(f"{path}: aliases: must map alias names to model ids")
    for name, model in raw_aliases.items():
        if not isinstance(model, str) or not model.strip():
            raise ModelConfigError(f"{path}: aliases.{name}: expected a model id string")
        alias, target = str(name).lower(), model.strip()
        if ALIASES.get(alias) != target:
            before = f" (built in: {ALIASES[alias]})" if alias in ALIASES else " (new)"
            changes.append(f"alias {alias} -> {target}{before}")
        aliases[alias] = target
    prices = dict(PRICES)
    raw_prices = data.get("prices") or {}
    if not isinstance(raw_prices, dict):
        raise ModelConfigError(f"{path}: prices: must map model ids to prices")
    for model, row in raw_prices.items():
        where = f"{path}: prices.{model}"
        if not isinstance(row, dict):
            raise ModelConfigError(f"{where}: expected {{input, output, cache_write, cache_read}}")
        extra = sorted(set(row) - {"input", "output", "cache_write", "cache_read"})
        if extra:
            raise ModelConfigError(f"{where}: unknown key(s) {', '.join(map(str, extra))}")
        values = {str(k): _number(v, f"{where}.{k}") for k, v in row.items()}
        base = prices.get(str(model))
        if base is None:
            if not {"input", "output"} <= set(values):
                raise ModelConfigError(f"{where}: a new model needs at least input and output")
            # Anthropic's usual multipliers: 5-minute cache write 1.25x input, cache read 0.1x.
            base = Price(0.0, 0.0, values["input"] * 1.25, values["input"] * 0.1)
        price = Price(
            values.get("input", base.input),
            values.get("output", base.output),
            values.get("cache_write", base.cache_write),
            values.get("cache_read", base.cache_read),
        )
        builtin = PRICES.get(str(model)) or PRICES.get(_DATE_SUFFIX.sub("", str(model)))
        if found and builtin is not None:
            _refuse_lower(price, builtin, where)
        if price != builtin:
            figures = ", ".join(f"{k} {v:g}" for k, v in vars(price).items())
            changes.append(f"price of {model}: {figures}" + ("" if builtin else " (new)"))
        prices[str(model)] = price
    default = data.get("default") or DEFAULT_ALIAS
    if not isinstance(default, str):
        raise ModelConfigError(f"{path}: default: expected an alias or a model id")
    if default != DEFAULT_ALIAS:
        changes.append(f"default model -> {default}")
    return ModelConfig(aliases, prices, default, path, found, tuple(changes), providers)


def _refuse_lower(price: Price, builtin: Price, where: str) -> None:
    """A found models file may not make a known model cheaper: its cost limits would lie."""
    for figure, value in vars(price).items():
        floor = getattr(builtin, figure)
        if value < floor:
            raise ModelConfigError(
                f"{where}.{figure}: {value:g} is below the built-in price {floor:g}; a models "
                "file found in the current folder (it may have come with the repository) cannot "
                "lower a known model's price. Set it in $ORCHESTRATOR_HOME/models.yaml or the "
                "file named by ORCHESTRATOR_MODELS_FILE if you mean it"
            )


MAX_MODELS_FILE_BYTES = 1_000_000  # a models file is a few lines


@lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int, found: bool = False) -> ModelConfig:
    # deferred: most runs have no models file to read. The graph loader's YAML reader, with its
    # limits on aliases and nesting: a found file may be hostile (an alias bomb).
    from .yamlpos import YamlSyntaxError, load_yaml

    try:
        size = Path(path).stat().st_size
        if size > MAX_MODELS_FILE_BYTES:
            raise ModelConfigError(
                f"{path}: the models file has {size:,} bytes, more than the "
                f"{MAX_MODELS_FILE_BYTES:,} it may have"
            )
        data, _ = load_yaml(Path(path).read_text(encoding="utf-8"), path)
    except OSError as exc:
        raise ModelConfigError(f"{path}: cannot read models file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ModelConfigError(f"{path}: the models file is not UTF-8 text") from exc
    except YamlSyntaxError as exc:
        raise ModelConfigError(
            f"{path}: invalid YAML: line {exc.line}, column {exc.column}: {exc.message}"
        ) from None
    return _parse(data, path, found)


_BUILTIN = ModelConfig(dict(ALIASES), dict(PRICES), DEFAULT_ALIAS)
_pinned: dict[str, ModelConfig] = {}  # the found file's tables, by folder, as first read


def load_config() -> ModelConfig:
    """The built-in tables merged with the user's models file, if there is one."""
    if _found():
        # The kernel's current folder has no links in it, so getcwd() is what realpath(".")
        # gives, without a stat per component: this runs several times per model call.
        folder = os.getcwd()
        if folder not in _pinned:
            _pinned[folder] = _read_config()
        return _pinned[folder]
    return _read_config()


def _read_config() -> ModelConfig:
    path = config_path()
    if path is None:
        return _BUILTIN
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as exc:
        raise ModelConfigError(f"{path}: cannot read models file: {exc.strerror or exc}") from exc
    return _load(str(path), mtime, _found())


def default_model() -> str:
    """The model of a role that names none: `ORCHESTRATOR_MODEL`, the file's default, sonnet."""
    return os.environ.get("ORCHESTRATOR_MODEL") or load_config().default


def resolve_model(name: str | None = None) -> str:
    """An alias (case-insensitive) becomes its model id; anything else is taken as an id. The
    result is the model's one spelling: `claude-...` for Anthropic's, `PROVIDER:MODEL` for the
    others' (ModelConfigError for a provider that is not known)."""
    return model_ref(name).ref


def model_ref(name: str | None = None) -> ModelRef:
    """Which provider answers a model setting, and the model's id there."""
    config = load_config()
    # default_model() with the tables already in hand (each lookup reads the folder again).
    chosen = (name or "").strip() or os.environ.get("ORCHESTRATOR_MODEL") or config.default
    resolved = config.aliases.get(chosen.lower(), chosen)
    # A default may itself be an alias.
    resolved = config.aliases.get(resolved.lower(), resolved)
    try:
        return split_ref(resolved, config.providers)
    except ModelRefError as exc:
        raise ModelConfigError(str(exc)) from None


def provider(name: str) -> Provider:
    """A provider by name (built in, or declared in the models file)."""
    return load_config().providers[name]


def price_for(model_id: str | None) -> Price | None:
    """The price row of a model id (a dated snapshot id falls back to its undated id)."""
    if not model_id:
        return None
    config = load_config()
    prices = config.prices
    if model_id in prices:
        return prices[model_id]
    if (found := prices.get(_DATE_SUFFIX.sub("", model_id))) is not None:
        return found
    try:
        claude = anthropic_id(split_ref(model_id, config.providers))
    except ModelRefError:
        return None
    return price_for(claude) if claude else None


def price_known(model_id: str | None) -> bool:
    return price_for(model_id) is not None


def cost_usd(model_id: str | None, usage: Usage) -> float:
    """Dollars for one usage record; 0.0 when the model has no price (see `price_known`)."""
    price = price_for(model_id)
    if price is None:
        return 0.0
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_creation_input_tokens * price.cache_write
        + usage.cache_read_input_tokens * price.cache_read
    )
    return round(total / 1_000_000, 10)
