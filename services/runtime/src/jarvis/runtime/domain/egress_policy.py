"""Who an agent may reach through the egress proxy: allowlist entries, their matching, and SSRF rules.

An entry is a host name (ports 80 and 443), `host:port` (that port only), or `*.domain` (any name below
the domain, not the domain itself). Addresses are refused as entries: a name is what an admin reviews,
and the proxy resolves it itself, so what it connects to is what it checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jarvis.common.addresses import Address as Address  # also the proxy's and the tests' name
from jarvis.common.addresses import is_internal as is_internal  # also the proxy's and git's
from jarvis.common.errors import InvalidArgument

DEFAULT_PORTS = (80, 443)
MAX_ENTRIES = 200
_TARGET_HOST = re.compile(r"[a-z0-9._:-]+")
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
# Refusal reasons: the only values of the metric's `reason` label (a bounded set).
NOT_ALLOWED = "not_allowed"
INTERNAL_ADDRESS = "internal_address"
UNRESOLVED = "unresolved"
BAD_REQUEST = "bad_request"
UPSTREAM_FAILED = "upstream_failed"
REASONS = (NOT_ALLOWED, INTERNAL_ADDRESS, UNRESOLVED, BAD_REQUEST, UPSTREAM_FAILED)


def _is_host_name(name: str) -> bool:
    if not name or len(name) > 253:
        return False
    labels = name.split(".")
    # A name whose last label is all digits is an IPv4 address in disguise (e.g. 10.1 or 2130706433).
    return all(_LABEL.match(label) for label in labels) and not labels[-1].isdigit()


def check_entry(raw: str) -> str:
    """The normalised entry (lower case, no trailing dot), or InvalidArgument saying what a valid one looks like."""
    entry = (raw or "").strip().lower().rstrip(".")
    host, sep, port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
    wildcard = host.startswith("*.")
    name = host[2:] if wildcard else host
    valid_port = not sep or (port.isdigit() and 1 <= int(port) <= 65535 and not port.startswith("0"))
    if not valid_port or not _is_host_name(name) or (wildcard and "." not in name):
        raise InvalidArgument(
            f"egress entry '{raw[:100]}' is not a host name: give a name such as api.example.com, "
            "api.example.com:8443 for another port than 80/443, or *.example.com for every name below a domain "
            "(no scheme, path or IP address)"
        )
    return f"{host}:{port}" if sep else host


def check_entries(raw: Iterable[str]) -> list[str]:
    """Validated, de-duplicated entries in their given order."""
    entries = list(dict.fromkeys(check_entry(e) for e in raw))
    if len(entries) > MAX_ENTRIES:
        raise InvalidArgument(f"at most {MAX_ENTRIES} egress entries per project, got {len(entries)}")
    return entries


def check_names(raw: Iterable[str], what: str) -> list[str]:
    """Plain host names (no port, no wildcard), e.g. for an admin setting; ValueError names the bad one."""
    names = []
    for name in raw:
        normal = name.strip().lower().rstrip(".")
        if not _is_host_name(normal):
            raise ValueError(f"{what}: '{name[:100]}' is not a host name")
        names.append(normal)
    return names


@dataclass(frozen=True)
class Allowlist:
    entries: tuple[str, ...]

    def allows(self, host: str, port: int) -> bool:
        host = host.lower().rstrip(".")
        for entry in self.entries:
            pattern, sep, fixed = entry.rpartition(":") if ":" in entry else (entry, "", "")
            if (int(fixed) != port) if sep else (port not in DEFAULT_PORTS):
                continue
            if pattern.startswith("*.") and host.endswith(pattern[1:]) and host != pattern[2:]:
                return True
            if host == pattern:
                return True
        return False


@dataclass(frozen=True)
class Policy:
    """What one project may reach now; the proxy looks it up on every request, so changes apply at once."""

    allowlist: Allowlist
    internal_names: frozenset[str] = frozenset()  # names an admin allowed to resolve to internal addresses


def parse_target(authority: str) -> tuple[str, int] | None:
    """`host:port` of a CONNECT (or a URL's authority with a default port), or None when malformed.

    Only names are accepted: a client asking for an address literal gets "not allowed" like any host
    missing from the allowlist (entries are names), so an address cannot slip past the name check.
    """
    host, sep, port = authority.rpartition(":")
    if not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
        return None
    host = host.strip("[]").lower().rstrip(".")
    # Name characters (and an IPv6 literal's colons) only: what is logged is what a DNS name can hold.
    if not _TARGET_HOST.fullmatch(host) or len(host) > 253:
        return None
    return host, int(port)


def choose(addresses: Sequence[Address], internal_allowed: bool) -> Address | None:
    """The address to connect to, or None when the name must be refused.

    Every address of the name is checked: a name that resolves to one public and one internal address
    (DNS rebinding) is refused as a whole, not connected to the public one by luck.
    """
    if not addresses:
        return None
    if not internal_allowed and any(is_internal(a) for a in addresses):
        return None
    return addresses[0]
