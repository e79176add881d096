"""DNS rebinding against what Jarvis fetches for strangers (issue 44 finding 2): a name answering a public address to
the first lookup and 127.0.0.1 to the next must not lead Jarvis to 127.0.0.1. Jarvis looks the name up once and
connects to that address, the public one, so the listener on 127.0.0.1 is never reached; and with the address pinned,
the Host header, SNI and the certificate check still go by the name.

Staged in namespaces of its own with a resolver of its own (tests/support/rebinding.py): no address beyond loopback
is reached.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.rebinding import GOOD_PORT, in_namespace


@pytest.fixture(scope="module")
def met() -> dict[str, Any]:
    return in_namespace()


@pytest.mark.parametrize("fetch", ["cimd", "guard"])
def test_a_name_rebound_to_loopback_after_its_check_never_reaches_loopback(met: dict[str, Any], fetch: str) -> None:
    """cimd: `client_id=https://rebind-cimd.test:8443/.well-known/x` at /oauth/authorize, fetched without
    authentication. guard: a downstream server's OAuth metadata URL, fetched by the SDK's client through the hook
    consent.py installs."""
    seen = met[fetch]
    assert seen["connections"] == 0, f"{fetch} connected to 127.0.0.1 after checking a public address: {seen}"
    assert seen["lookups"] == 1, f"{fetch} looked the name up {seen['lookups']} times: {seen}"
    # The public address it checked is where it went, and the namespace has no route there.
    assert "ConnectError" in seen["outcome"], seen


def test_a_pinned_request_keeps_the_name_for_host_sni_and_certificate(met: dict[str, Any]) -> None:
    assert met["cimd_good"] == "fetched", met["cimd_good"]
    assert met["guard_good"] == "HTTP 200", met["guard_good"]
    assert met["good_seen"] == [{"host": f"good.test:{GOOD_PORT}", "sni": "good.test"}] * 2
    # A certificate for 127.0.0.1 and localhost, not for good.test: refused, though the connection went to 127.0.0.1.
    assert "could not be fetched (ConnectError)" in met["cimd_wrong_name"], met["cimd_wrong_name"]
    assert met["wrong_seen"] == []
