"""`jarvis oauth-keys list|rotate|prune`: the keys people's access tokens are signed with (issue 31 item 1), in
JARVIS_OAUTH_KEYS_DIR (default <data dir>/oauth-keys), shared by every worker and replica
(docs/decisions/0052-oauth-signing-keys.md)."""

from __future__ import annotations

import json
import time

import click

from jarvis.aggregator.oauth.keys import SigningKeys
from jarvis.aggregator.settings import AggregatorSettings
from jarvis.cli.settings import settings_for


def _keys() -> tuple[SigningKeys, AggregatorSettings]:
    """The keys `jarvis up` on the same data dir signs with (JARVIS_OAUTH_KEYS_DIR wins, as there)."""
    data_dir = settings_for(click.get_current_context().obj["data_dir"]).resolved_data_dir
    settings = AggregatorSettings(data_dir=data_dir)
    return SigningKeys.load(settings.signing_keys_dir), settings


@click.group("oauth-keys")
def oauth_keys() -> None:
    """Signing keys of sign-in access tokens (rotate, then prune once the old key's tokens have expired)."""


@oauth_keys.command("list")
def oauth_keys_list() -> None:
    """The keys, oldest first, as JSON; the last one signs, all verify and are published in the JWKS."""
    keys, _ = _keys()
    now = time.time()
    listing = keys.listing()
    shown = [
        {"kid": kid, "age_seconds": int(now - written), "signs": i == len(listing) - 1}
        for i, (kid, written) in enumerate(listing)
    ]
    click.echo(json.dumps({"directory": str(keys.directory), "keys": shown}, indent=2))


@oauth_keys.command("rotate")
def oauth_keys_rotate() -> None:
    """Add a key that signs from now on (every replica sees it at its next call); prints its kid."""
    keys, _ = _keys()
    click.echo(keys.rotate())


@oauth_keys.command("prune")
@click.option("--older-than", "older_than", type=int, required=True, help="Seconds; at least the token lifetime.")
def oauth_keys_prune(older_than: int) -> None:
    """Remove keys older than --older-than seconds (never the one that signs); prints the removed kids."""
    keys, settings = _keys()
    ttl = settings.oauth_access_token_ttl_seconds
    if older_than < ttl:
        raise click.UsageError(
            f"--older-than {older_than} is shorter than the access-token lifetime ({ttl} s): tokens signed with a "
            f"removed key would be refused before they expire; give at least {ttl}"
        )
    for kid in keys.prune(older_than):
        click.echo(kid)
