"""A real OpenID provider for the sign-in tests: npm `oidc-provider` (tools/node) run on a loopback port.

Accounts alice (group "dev"), bob (group "ops") and carol (groups "qa", "design"); `login` drives its login form the
way a person would. At the library's defaults email, name and groups come only in the userinfo answer, as OpenID
Connect says; `conform_id_token_claims=False` puts them in the ID token too, and `groups_claim` nests the groups
(`realm_access.roles`, as Keycloak does).
The tests fail, never skip, when node or the package is missing: sign-in is not tested without them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

from tests.support.downstream import NODE, NODE_TOOLS

SCRIPT = Path(__file__).with_name("oidc_provider.mjs")
PACKAGE = NODE_TOOLS / "oidc-provider"
_FORM_ACTION = re.compile(r'<form[^>]*action="(?P<action>[^"]+)"')
_HIDDEN = re.compile(r'<input type="hidden" name="(?P<name>[^"]+)" value="(?P<value>[^"]*)"')


@dataclass(frozen=True)
class Provider:
    issuer: str
    client_id: str
    client_secret: str


@contextmanager
def oidc_provider(
    redirect_uris: list[str],
    client_id: str = "jarvis",
    client_secret: str = "s3cret",
    conform_id_token_claims: bool = True,
    groups_claim: str = "groups",
) -> Iterator[Provider]:
    """The provider running, with one confidential client (Jarvis) allowed `redirect_uris`."""
    if not NODE.exists() or not PACKAGE.exists():
        raise AssertionError("oidc-provider or node is missing under tools/node: run scripts/bootstrap")
    config = {
        "clients": [
            {
                "client_id": client_id,
                "client_secret": client_secret,
                "redirect_uris": redirect_uris,
                "grant_types": ["authorization_code"],
                "response_types": ["code"],
            }
        ],
        "options": {"conformIdTokenClaims": conform_id_token_claims, "groupsClaim": groups_claim},
    }
    process = subprocess.Popen(
        [str(NODE), str(SCRIPT), json.dumps(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=NODE_TOOLS.parent,
        env={**os.environ, "OIDC_PROVIDER_MODULE": str(PACKAGE / "lib" / "index.js")},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"oidc-provider did not start: {process.stderr.read() if process.stderr else ''}")
        yield Provider(json.loads(line)["issuer"], client_id, client_secret)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def login(client: httpx2.Client, login_page: httpx2.Response, account: str) -> httpx2.Response:
    """Post the provider's login form on `login_page` as `account`; the answer is the redirect that follows it."""
    action = _FORM_ACTION.search(login_page.text)
    assert action, f"no login form on the provider's page:\n{login_page.text[:2000]}"
    fields = dict(_HIDDEN.findall(login_page.text))
    fields.update({"prompt": "login", "login": account, "password": "any"})
    return client.post(httpx2.URL(str(login_page.url)).join(action["action"]), data=fields)
