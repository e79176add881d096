"""Which addresses an outbound request for a stranger may go to, and how a request is pinned to the one checked
(the rebinding itself is staged in tests/integration/oauth/test_dns_rebinding.py)."""

from __future__ import annotations

import ipaddress

import httpx2
import pytest

from jarvis.aggregator.pinned import Reach, Refused, Why, choose, pin

PUBLIC, LOOPBACK, PRIVATE = (ipaddress.ip_address(a) for a in ("93.184.215.14", "127.0.0.1", "10.0.0.1"))


@pytest.mark.parametrize(
    ("reach", "addresses", "why"),
    [
        (Reach(), [PUBLIC], None),
        (Reach(), [LOOPBACK], Why.INTERNAL),
        (Reach(), [PUBLIC, PRIVATE], Why.INTERNAL),  # refused whole, not connected to the first by luck
        (Reach(loopback=True), [LOOPBACK], None),
        (Reach(loopback=True), [PRIVATE], Why.INTERNAL),
        (Reach(public=False, loopback=True), [PUBLIC], Why.PUBLIC),
    ],
)
def test_a_name_is_refused_whole_when_any_address_is_not_allowed(
    reach: Reach, addresses: list[ipaddress.IPv4Address], why: Why | None
) -> None:
    if why is None:
        assert choose("h.test", list(addresses), reach) == addresses[0]
        return
    with pytest.raises(Refused) as refused:
        choose("h.test", list(addresses), reach)
    assert refused.value.why is why


@pytest.mark.anyio
async def test_a_request_goes_to_the_checked_address_under_its_own_name() -> None:
    request = httpx2.Request("GET", "https://localhost:8443/x")
    await pin(request, Reach(loopback=True))
    assert request.url.host in ("127.0.0.1", "::1")
    assert request.headers["host"] == "localhost:8443"
    assert request.extensions["sni_hostname"] == "localhost"
    assert request.headers["connection"] == "close"  # no connection checked for one name carries another


@pytest.mark.anyio
async def test_a_host_an_admin_allowed_is_left_alone() -> None:
    request = httpx2.Request("GET", "http://localhost/x")
    await pin(request, Reach(hosts=frozenset({"localhost"})))
    assert str(request.url) == "http://localhost/x"
    with pytest.raises(Refused):
        await pin(httpx2.Request("GET", "http://localhost/x"), Reach())
