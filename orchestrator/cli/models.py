"""`orchestrator models [--format text|json]`: the providers, aliases, default model and prices
in effect, and where each comes from (built in, or the models file that sets it).

The models file is the one `definition/model_config.py` reads (ORCHESTRATOR_MODELS_FILE, then
$ORCHESTRATOR_HOME/models.yaml, then ./.orchestrator/models.yaml); a malformed one is reported
with its path (exit 2), as `run` would.
"""

from __future__ import annotations

import json
from typing import Any

import click

from .terminal import neutralise


def models_table() -> dict[str, Any]:
    """What `orchestrator models --format json` prints."""
    # deferred: `orchestrator --help` reads no models file
    from ..definition.model_config import ALIASES, PRICES, default_model, load_config

    config = load_config()
    origin = config.source or "built in"

    def where(builtin: bool) -> str:
        return "built in" if builtin else origin

    return {
        "models_file": config.source,
        "default": {
            "model": default_model(),
            "from": "ORCHESTRATOR_MODEL"
            if default_model() != config.default
            else where(config.default == "sonnet"),
        },
        "providers": [
            {
                "name": p.name,
                "kind": p.kind,
                "base_url": p.base_url,
                "credentials": p.credentials(),
                "tools": p.tools,
                "from": p.source or "built in",
            }
            for p in config.providers.values()
        ],
        "aliases": [
            {"alias": a, "model": m, "from": where(ALIASES.get(a) == m)}
            for a, m in sorted(config.aliases.items())
        ],
        "prices": [
            {"model": m, **vars(p), "from": where(PRICES.get(m) == p)}
            for m, p in sorted(config.prices.items())
        ],
    }


@click.command("models")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: tables; json: {providers, aliases, prices, default}.",
)
def models(fmt: str) -> None:
    """Show the model providers, aliases and prices in effect, and where each comes from."""
    # deferred: `orchestrator --help` reads no models file
    from ..definition.model_config import ModelConfigError

    try:
        table = models_table()
    except ModelConfigError as exc:
        click.echo(f"error: {neutralise(str(exc))}", err=True)
        raise SystemExit(2) from None
    if fmt == "json":
        click.echo(json.dumps(table, indent=2))
        return
    click.echo(f"models file: {neutralise(table['models_file'] or '(none: built-in tables)')}")
    default = table["default"]
    click.echo(f"default model: {neutralise(default['model'])}  (from {default['from']})")
    click.echo("\nproviders:")
    for p in table["providers"]:
        at = f"  {p['base_url']}" if p["base_url"] else ""
        tools = "" if p["tools"] else "  (no tool calls)"
        click.echo(
            neutralise(
                f"  {p['name']:<12} {p['kind']:<18}{at}  key: {p['credentials']}{tools}"
                f"  (from {p['from']})"
            )
        )
    click.echo("\naliases:")
    for a in table["aliases"]:
        click.echo(neutralise(f"  {a['alias']:<12} -> {a['model']}  (from {a['from']})"))
    click.echo("\nprices (USD per million tokens: input, output, cache write, cache read):")
    for p in table["prices"]:
        figures = f"{p['input']:g} / {p['output']:g} / {p['cache_write']:g} / {p['cache_read']:g}"
        click.echo(neutralise(f"  {p['model']:<28} {figures}  (from {p['from']})"))
