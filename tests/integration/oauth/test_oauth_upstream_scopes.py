"""What Jarvis asks the team's provider for (JARVIS_OIDC_SCOPES, issue 31 item 5): `openid email profile groups` by
default; without `groups` for providers that refuse a scope they do not know (Google, Entra ID). Checked against a
real provider (npm oidc-provider): the authorization URL Jarvis builds from its metadata carries exactly those."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import anyio
import pytest

from jarvis.aggregator.oauth.upstream import Upstream, UpstreamConfig
from tests.support.oidc_provider import oidc_provider


@pytest.mark.parametrize("scopes", [None, "openid email profile"])
def test_the_provider_is_asked_for_the_configured_scopes(scopes: str | None) -> None:
    with oidc_provider(["http://127.0.0.1:9/oauth/callback"]) as provider:
        config = UpstreamConfig(provider.issuer, provider.client_id, provider.client_secret)
        if scopes is not None:
            config = UpstreamConfig(provider.issuer, provider.client_id, provider.client_secret, scopes)
        url = anyio.run(Upstream(config).authorization_url, "http://127.0.0.1:9/oauth/callback", "s", "n", "v" * 43)
    asked = parse_qs(urlsplit(url).query)
    assert url.startswith(provider.issuer)
    assert asked["scope"] == [scopes or "openid email profile groups"]
    assert asked["code_challenge_method"] == ["S256"]
