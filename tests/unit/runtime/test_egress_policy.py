"""The egress allowlist's entries and matching, and which addresses count as internal (no I/O at all)."""

from __future__ import annotations

import ipaddress

import pytest
from pydantic import ValidationError

from jarvis.common.errors import InvalidArgument
from jarvis.runtime.domain.egress_policy import Allowlist, check_entries, check_entry, choose, is_internal
from jarvis.runtime.settings import RuntimeSettings


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("api.anthropic.com", "api.anthropic.com"),
        ("API.Example.COM.", "api.example.com"),
        ("fake.test:8443", "fake.test:8443"),
        ("*.githubusercontent.com", "*.githubusercontent.com"),
        ("localhost", "localhost"),
        (" x-1.example.org ", "x-1.example.org"),
    ],
)
def test_entries_are_host_names_normalised(raw: str, normal: str) -> None:
    assert check_entry(raw) == normal


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "https://api.example.com",
        "api.example.com/v1",
        "10.0.0.1",
        "169.254.169.254",
        "[::1]",
        "::1",
        "user@example.com",
        "-bad.example.com",
        "a..b",
        "example.com:0",
        "example.com:65536",
        "example.com:08",
        "*.com",
        "*",
        "exa mple.com",
        "2130706433",
        "x" * 64 + ".com",
        "*.*.example.com",
    ],
)
def test_non_host_entries_get_a_clear_error(raw: str) -> None:
    with pytest.raises(InvalidArgument) as exc:
        check_entry(raw)
    assert "is not a host name" in exc.value.message
    assert "api.example.com" in exc.value.message


def test_entries_are_deduplicated_in_order() -> None:
    assert check_entries(["b.example", "A.example", "b.example."]) == ["b.example", "a.example"]


def test_matching_by_name_port_and_wildcard() -> None:
    allow = Allowlist(("api.example.com", "fake.test:8443", "*.cdn.example"))
    assert allow.allows("api.example.com", 443)
    assert allow.allows("API.example.com.", 80)
    assert not allow.allows("api.example.com", 22)
    assert not allow.allows("evil.api.example.com", 443)
    assert not allow.allows("example.com", 443)
    assert allow.allows("fake.test", 8443)
    assert not allow.allows("fake.test", 443)
    assert allow.allows("a.b.cdn.example", 443)
    assert not allow.allows("cdn.example", 443)
    assert not allow.allows("xcdn.example", 443)
    assert not Allowlist(()).allows("api.example.com", 443)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.0.0.5",
        "172.16.3.4",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "::",
        "fd00:ec2::254",
        "fe80::1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "224.0.0.1",
        "255.255.255.255",
        # IPv6 forms of internal IPv4 addresses, which Python calls global (issue 34 item 9):
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 of the metadata address
        "64:ff9b:1::a00:5",  # local-use NAT64 of 10.0.0.5
        "2002:a00:5::1",  # 6to4 of 10.0.0.5
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "::127.0.0.1",  # IPv4-compatible
        "2001:0:4136:e378::f5ff:fffe",  # Teredo, client 10.0.0.1
    ],
)
def test_internal_addresses(address: str) -> None:
    assert is_internal(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "address", ["93.184.215.14", "2606:4700::6810:84e5", "64:ff9b::5db8:d70e", "2002:5db8:d70e::1"]
)
def test_public_addresses(address: str) -> None:
    assert not is_internal(ipaddress.ip_address(address))


def test_a_name_with_any_internal_address_is_refused_whole() -> None:
    public, metadata = ipaddress.ip_address("93.184.215.14"), ipaddress.ip_address("169.254.169.254")
    assert choose([public], internal_allowed=False) == public
    assert choose([public, metadata], internal_allowed=False) is None
    assert choose([metadata], internal_allowed=False) is None
    assert choose([metadata], internal_allowed=True) == metadata
    assert choose([], internal_allowed=True) is None


def test_admin_settings_are_checked(tmp_path: object) -> None:
    with pytest.raises(ValidationError, match="egress_internal_hosts"):
        RuntimeSettings(egress_internal_hosts=["http://x"])
    with pytest.raises(ValidationError):
        RuntimeSettings(egress_resolve={"fake.test": ["not-an-address"]})
    settings = RuntimeSettings(egress_internal_hosts=["Fake.Test"], egress_resolve={"fake.test": ["127.0.0.1"]})
    assert settings.egress_internal_hosts == ["fake.test"]
    assert settings.egress_root == settings.data_dir / "egress"
