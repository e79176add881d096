"""What a share tunnel accepts before anything reaches ssh's argv: targets, ports, host keys and fingerprints."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jarvis.aggregator.tunnel.keys import TunnelKeys
from jarvis.aggregator.tunnel.spec import SshTarget, check_remote_port, parse_host_key, parse_target
from jarvis.common.errors import InvalidArgument
from tests.support.required_tool import required_tool


def test_targets() -> None:
    assert parse_target("none") is None
    assert parse_target("") is None
    assert parse_target("ssh://deploy@relay.example.com") == SshTarget("deploy", "relay.example.com", 22)
    ipv6 = parse_target("ssh://me@[::1]:2222")
    assert ipv6 == SshTarget("me", "::1", 2222)
    assert ipv6 is not None
    assert (ipv6.known_hosts_name, ipv6.url_host, str(ipv6)) == ("[::1]:2222", "[::1]", "ssh://me@[::1]:2222")


@pytest.mark.parametrize(
    "text",
    [
        "ssh://-oProxyCommand=x@host",  # an option where the user goes
        "ssh://me@-oProxyCommand=x",  # an option where the host goes
        "ssh://me@host/path",
        "ssh://me:secret@host",
        "ssh://host",
        "http://me@host",
        "ssh://me@host:0x16",
        "ssh://me@ho st",
        "ssh://me@host?x=1",
    ],
)
def test_bad_targets(text: str) -> None:
    with pytest.raises(InvalidArgument):
        parse_target(text)


def test_ports() -> None:
    assert check_remote_port(None) == 0
    assert check_remote_port(8443) == 8443
    with pytest.raises(InvalidArgument):
        check_remote_port(70000)


def test_host_keys_and_their_fingerprint(tmp_path: Path) -> None:
    key = tmp_path / "host"
    subprocess.run([required_tool("ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    public = (tmp_path / "host.pub").read_text()
    listed = subprocess.run(
        [required_tool("ssh-keygen"), "-lf", str(tmp_path / "host.pub")], check=True, capture_output=True, text=True
    ).stdout.split()[1]
    parsed = parse_host_key(public)
    assert parsed.fingerprint == listed
    assert parse_host_key(f"[127.0.0.1]:2222 {public}") == parsed  # a keyscan / known_hosts line
    for bad in ("-oProxyCommand=x", "ssh-ed25519", "ssh-ed25519 not*base64", "ssh-dss AAAA"):
        with pytest.raises(InvalidArgument):
            parse_host_key(bad)


def test_a_key_given_again_replaces_the_old_one(tmp_path: Path) -> None:
    keys = TunnelKeys(tmp_path / "tunnel")
    relay, other = SshTarget("me", "relay", 2222), SshTarget("me", "other", 22)
    first, second = parse_host_key("ssh-ed25519 AAAAAQ=="), parse_host_key("ssh-ed25519 AAAAAg==")
    keys.trust(relay, first)
    keys.trust(other, first)
    keys.trust(relay, second)
    assert keys.trusted(relay) == [second]
    assert keys.trusted(other) == [first]
    assert keys.known_hosts.read_text() == "other ssh-ed25519 AAAAAQ==\n[relay]:2222 ssh-ed25519 AAAAAg==\n"
    assert keys.known_hosts.stat().st_mode & 0o777 == 0o600
