"""jarvis.common.addresses: every special-purpose range of IANA's two registries, decided by Jarvis's own table and
never by the interpreter's copy of the registry (issue 51: CPython patch releases disagree about 6to4, ORCHIDv2,
local-use NAT64, mapped loopback)."""

from __future__ import annotations

import ast
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.common import addresses
from jarvis.common.addresses import (
    BEYOND_THE_REGISTRIES,
    IPV4_SPECIAL_PURPOSE,
    IPV6_SPECIAL_PURPOSE,
    Verdict,
    embedded_ipv4,
    is_internal,
    is_loopback,
    is_metadata_or_link_local,
    special_range,
)

ROOT = Path(__file__).resolve().parents[3]

# The registries as IANA publishes them (2025-2026): address block and "Globally Reachable" (None: N/A, or blank on
# a terminated entry). Written out again here so that a row dropped from the module's table is noticed.
IANA_IPV4 = [
    ("0.0.0.0/8", False),
    ("0.0.0.0/32", False),
    ("10.0.0.0/8", False),
    ("100.64.0.0/10", False),
    ("127.0.0.0/8", False),
    ("169.254.0.0/16", False),
    ("172.16.0.0/12", False),
    ("192.0.0.0/24", False),
    ("192.0.0.0/29", False),
    ("192.0.0.8/32", False),
    ("192.0.0.9/32", True),
    ("192.0.0.10/32", True),
    ("192.0.0.170/32", False),
    ("192.0.0.171/32", False),
    ("192.0.2.0/24", False),
    ("192.31.196.0/24", True),
    ("192.52.193.0/24", True),
    ("192.88.99.0/24", None),
    ("192.88.99.2/32", False),
    ("192.168.0.0/16", False),
    ("192.175.48.0/24", True),
    ("198.18.0.0/15", False),
    ("198.51.100.0/24", False),
    ("203.0.113.0/24", False),
    ("240.0.0.0/4", False),
    ("255.255.255.255/32", False),
]
IANA_IPV6 = [
    ("::1/128", False),
    ("::/128", False),
    ("::ffff:0:0/96", False),
    ("64:ff9b::/96", True),
    ("64:ff9b:1::/48", False),
    ("100::/64", False),
    ("100:0:0:1::/64", False),
    ("2001::/23", False),
    ("2001::/32", None),
    ("2001:1::1/128", True),
    ("2001:1::2/128", True),
    ("2001:1::3/128", True),
    ("2001:2::/48", False),
    ("2001:3::/32", True),
    ("2001:4:112::/48", True),
    ("2001:10::/28", None),
    ("2001:20::/28", True),
    ("2001:30::/28", True),
    ("2001:db8::/32", False),
    ("2002::/16", None),
    ("2620:4f:8000::/48", True),
    ("3fff::/20", False),
    ("5f00::/16", False),
    ("fc00::/7", False),
    ("fe80::/10", False),
]

ALL_ROWS = (*IPV4_SPECIAL_PURPOSE, *IPV6_SPECIAL_PURPOSE, *BEYOND_THE_REGISTRIES)

# (address, internal): a representative address inside every range, and the neighbours just outside where useful.
EXPECTED = [
    # "This network", "This host on this network"
    ("0.0.0.0", True),
    ("0.1.2.3", True),
    ("0.255.255.255", True),
    ("1.0.0.0", False),
    # Private-Use 10/8
    ("9.255.255.255", False),
    ("10.0.0.0", True),
    ("10.255.255.255", True),
    ("11.0.0.0", False),
    # Shared Address Space
    ("100.63.255.255", False),
    ("100.64.0.1", True),
    ("100.127.255.255", True),
    ("100.128.0.0", False),
    # Loopback
    ("126.255.255.255", False),
    ("127.0.0.1", True),
    ("127.255.255.255", True),
    ("128.0.0.0", False),
    # Link Local (cloud metadata)
    ("169.253.255.255", False),
    ("169.254.169.254", True),
    ("169.255.0.0", False),
    # Private-Use 172.16/12
    ("172.15.255.255", False),
    ("172.16.3.4", True),
    ("172.31.255.255", True),
    ("172.32.0.0", False),
    # IETF Protocol Assignments and what is inside
    ("191.255.255.255", False),
    ("192.0.0.0", True),
    ("192.0.0.7", True),  # IPv4 Service Continuity Prefix
    ("192.0.0.8", True),  # IPv4 dummy address
    ("192.0.0.9", False),  # PCP anycast, globally reachable
    ("192.0.0.10", False),  # TURN anycast, globally reachable
    ("192.0.0.11", True),
    ("192.0.0.170", True),  # NAT64/DNS64 discovery
    ("192.0.0.171", True),
    ("192.0.0.255", True),
    ("192.0.1.0", False),
    # Documentation TEST-NET-1
    ("192.0.2.1", True),
    ("192.0.3.0", False),
    # AS112-v4, AMT
    ("192.31.196.1", False),
    ("192.52.193.1", False),
    # Deprecated 6to4 relay anycast, 6a44 relay
    ("192.88.98.255", False),
    ("192.88.99.1", True),
    ("192.88.99.2", True),
    ("192.88.99.255", True),
    ("192.88.100.0", False),
    # Private-Use 192.168/16
    ("192.167.255.255", False),
    ("192.168.1.1", True),
    ("192.169.0.0", False),
    # Direct Delegation AS112
    ("192.175.48.1", False),
    # Benchmarking
    ("198.17.255.255", False),
    ("198.18.0.1", True),
    ("198.19.255.255", True),
    ("198.20.0.0", False),
    # Documentation TEST-NET-2, TEST-NET-3
    ("198.51.99.255", False),
    ("198.51.100.1", True),
    ("198.51.101.0", False),
    ("203.0.112.255", False),
    ("203.0.113.1", True),
    ("203.0.114.0", False),
    # Multicast, Reserved, Limited Broadcast
    ("223.255.255.255", False),
    ("224.0.0.1", True),
    ("239.255.255.255", True),
    ("240.0.0.1", True),
    ("255.255.255.254", True),
    ("255.255.255.255", True),
    # Ordinary unicast
    ("8.8.8.8", False),
    ("93.184.215.14", False),
    # Loopback, unspecified, IPv4-compatible (its IPv4 address decides)
    ("::", True),
    ("::1", True),
    ("::2", True),  # 0.0.0.2
    ("::127.0.0.1", True),
    ("::a00:1", True),  # 10.0.0.1
    ("::5db8:d70e", False),  # 93.184.215.14
    ("::1:0:0", False),  # just past ::/96
    # IPv4-mapped: the IPv4 address decides
    ("::ffff:10.0.0.1", True),
    ("::ffff:169.254.169.254", True),
    ("::ffff:127.0.0.1", True),
    ("::ffff:93.184.215.14", False),
    ("::ffff:192.0.0.9", False),
    # NAT64, well-known prefix: the IPv4 address decides
    ("64:ff9b::7f00:1", True),
    ("64:ff9b::a9fe:a9fe", True),
    ("64:ff9b::5db8:d70e", False),
    # NAT64, local-use prefix: refused whole
    ("64:ff9b:1::a00:5", True),
    ("64:ff9b:1::5db8:d70e", True),
    ("64:ff9b:1:ffff:ffff:ffff:ffff:ffff", True),
    ("64:ff9b:2::5db8:d70e", False),
    # Discard-Only, Dummy IPv6 Prefix
    ("100::1", True),
    ("100::ffff:ffff:ffff:ffff", True),
    ("100:0:0:1::1", True),
    ("100:0:0:2::", False),
    # IETF Protocol Assignments 2001::/23 and what is inside
    ("2001::1", True),  # Teredo
    ("2001:0:4136:e378::f5ff:fffe", True),  # Teredo, client 10.0.0.1
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", True),  # Teredo, a public client
    ("2001:1::1", False),  # PCP anycast
    ("2001:1::2", False),  # TURN anycast
    ("2001:1::3", False),  # DNS-SD SRP anycast
    ("2001:1::4", True),
    ("2001:2::1", True),  # Benchmarking
    ("2001:2:1::", True),  # past Benchmarking, still in 2001::/23
    ("2001:3::1", False),  # AMT
    ("2001:4:112::1", False),  # AS112-v6
    ("2001:4:113::", True),
    ("2001:10::1", True),  # deprecated ORCHID
    ("2001:20::1", False),  # ORCHIDv2
    ("2001:2f:ffff::", False),
    ("2001:30::1", False),  # DETs
    ("2001:3f:ffff::", False),
    ("2001:40::1", True),
    ("2001:1ff:ffff:ffff::", True),
    ("2001:200::1", False),  # just past 2001::/23
    # Documentation 2001:db8::/32
    ("2001:db7:ffff:ffff::", False),
    ("2001:db8::1", True),
    ("2001:db9::", False),
    # 6to4: the IPv4 address decides
    ("2002:5db8:d70e::1", False),  # 93.184.215.14
    ("2002:7f00:1::1", True),  # 127.0.0.1
    ("2002:a00:5::1", True),  # 10.0.0.5
    ("2002:a9fe:a9fe::", True),  # 169.254.169.254
    ("2002:c000:9::", False),  # 192.0.0.9
    ("2002::", True),  # 0.0.0.0
    ("2003::1", False),
    # Direct Delegation AS112
    ("2620:4f:8000::1", False),
    # Documentation 3fff::/20
    ("3ffe:ffff::", False),
    ("3fff::1", True),
    ("3fff:fff:ffff::", True),
    ("3fff:1000::", False),
    # Segment Routing SIDs
    ("5eff:ffff::", False),
    ("5f00::1", True),
    ("5f01::", False),
    # Unique-Local, Link-Local, Site-Local, Multicast
    ("fc00::1", True),
    ("fd00:ec2::254", True),
    ("fdff:ffff::1", True),
    ("fe80::1", True),
    ("febf:ffff::1", True),
    ("fec0::1", True),
    ("feff:ffff::1", True),
    ("ff02::1", True),
    ("ff0e::1", True),
    # Ordinary unicast
    ("2606:4700::6810:84e5", False),
    ("2a00:1450:4001::1", False),
]

# Properties of ipaddress objects whose answers come from the interpreter's copy of IANA's registries (or that
# recognise embedded forms the table decides on itself).
INTERPRETER_PROPERTIES = (
    "is_global",
    "is_private",
    "is_reserved",
    "is_loopback",
    "is_link_local",
    "is_site_local",
    "is_multicast",
    "is_unspecified",
    "ipv4_mapped",
    "sixtofour",
    "teredo",
)


def _rows(table: tuple[addresses.Range, ...]) -> list[tuple[str, bool | None]]:
    return [(str(r.network), r.globally_reachable) for r in table]


def test_the_tables_hold_both_registries_whole() -> None:
    assert _rows(IPV4_SPECIAL_PURPOSE) == IANA_IPV4
    assert _rows(IPV6_SPECIAL_PURPOSE) == IANA_IPV6
    networks = [r.network for r in ALL_ROWS]
    assert len(set(networks)) == len(networks)


@pytest.mark.parametrize("row", ALL_ROWS, ids=lambda r: str(r.network))
def test_each_verdict_is_the_registry_flag_or_says_why(row: addresses.Range) -> None:
    flag = row.globally_reachable
    by_flag = None if flag is None else Verdict.PUBLIC if flag else Verdict.INTERNAL
    if row.verdict is not by_flag:
        assert row.why, f"{row.network} ({row.name}) differs from the registry's flag without saying why"
    assert row.name


@pytest.mark.parametrize("row", ALL_ROWS, ids=lambda r: str(r.network))
def test_each_range_decides_its_own_ends(row: addresses.Range) -> None:
    """The first and last address of a range fall in it or in a more specific range inside it."""
    for address in (row.network[0], row.network[-1]):
        found = special_range(address)
        assert found is not None
        assert found.network.prefixlen >= row.network.prefixlen
        assert found.network.network_address in row.network
    if row.verdict is Verdict.EMBEDDED:
        assert row.network.version == 6
        assert row.network.prefixlen + 32 + row.ipv4_shift <= 128


def test_every_range_has_an_expected_address() -> None:
    hit = {special_range(ipaddress.ip_address(a)) for a, _ in EXPECTED}
    missing = [str(r.network) for r in ALL_ROWS if r not in hit]
    assert not missing


@pytest.mark.parametrize(("address", "internal"), EXPECTED)
def test_addresses(address: str, internal: bool) -> None:
    assert is_internal(ipaddress.ip_address(address)) is internal


@pytest.mark.parametrize(
    ("address", "ipv4"),
    [
        ("::ffff:10.0.0.1", "10.0.0.1"),
        ("64:ff9b::7f00:1", "127.0.0.1"),
        ("2002:5db8:d70e::1", "93.184.215.14"),
        ("::127.0.0.1", "127.0.0.1"),
        ("64:ff9b:1::a00:5", None),
        ("2001:0:4136:e378::f5ff:fffe", None),
        ("::1", None),
        ("2606:4700::6810:84e5", None),
        ("10.0.0.1", None),
    ],
)
def test_embedded_ipv4(address: str, ipv4: str | None) -> None:
    found = embedded_ipv4(ipaddress.ip_address(address))
    assert (str(found) if found is not None else None) == ipv4


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.255.255.254", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),  # 3.13 says so, 3.11 did not
        ("64:ff9b::7f00:1", False),  # the translator's loopback, not ours (internal all the same)
        ("2002:7f00:1::", False),
        ("128.0.0.1", False),
        ("10.0.0.1", False),
        ("::", False),
        ("::2", False),
    ],
)
def test_loopback(address: str, loopback: bool) -> None:
    assert is_loopback(ipaddress.ip_address(address)) is loopback


@pytest.mark.parametrize(
    ("address", "refused"),
    [
        ("169.254.169.254", True),
        ("::ffff:169.254.169.254", True),
        ("64:ff9b::a9fe:a9fe", True),
        ("2002:a9fe:a9fe::", True),
        ("fd00:ec2::254", True),
        ("fe80::1", True),
        ("0.0.0.0", True),
        ("::", True),
        ("224.0.0.1", True),
        ("ff02::1", True),
        # A team's servers live on private and loopback addresses: only the table's is_internal refuses those.
        ("10.0.0.1", False),
        ("127.0.0.1", False),
        ("fd00::1", False),
        ("0.0.0.1", False),
        ("93.184.215.14", False),
    ],
)
def test_metadata_or_link_local(address: str, refused: bool) -> None:
    assert is_metadata_or_link_local(ipaddress.ip_address(address)) is refused


def test_no_answer_comes_from_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """With every registry-dependent property of ipaddress made to fail, the answers stay the same."""

    def asked(self: object) -> object:
        raise AssertionError("jarvis.common.addresses asked the interpreter's registry")

    for cls in (ipaddress.IPv4Address, ipaddress.IPv6Address):
        for name in INTERPRETER_PROPERTIES:
            if hasattr(cls, name):
                monkeypatch.setattr(cls, name, property(asked))
    for address, internal in EXPECTED:
        parsed = ipaddress.ip_address(address)
        assert is_internal(parsed) is internal
        is_loopback(parsed)
        is_metadata_or_link_local(parsed)
        embedded_ipv4(parsed)


def _jarvis_sources() -> Iterator[Path]:
    for top in ("libs", "services", "aggregator", "src"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if "_pb2" not in path.name and "/template/" not in path.as_posix():
                yield path


def test_address_decisions_are_made_in_one_module() -> None:
    """No Jarvis module but jarvis.common.addresses judges an address (and that one asks ipaddress nothing)."""
    offenders = []
    for path in _jarvis_sources():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Attribute) or node.attr not in INTERPRETER_PROPERTIES:
                continue
            if isinstance(node.value, ast.Name) and node.value.id == "addresses":
                continue  # jarvis.common.addresses.is_loopback
            offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert not offenders
