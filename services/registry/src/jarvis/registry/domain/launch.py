"""Validation of launch specs: each transport's required fields, and no SSRF-prone URLs."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from jarvis.common.addresses import is_metadata_or_link_local
from jarvis.common.errors import InvalidArgument
from jarvis.common.urls import masked_url
from jarvis.registry.domain.records import TRANSPORTS, Launch

# Cloud metadata endpoints reachable by name; their addresses are caught by the IP checks below.
_METADATA_HOSTS = {
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "instance-data",
    "instance-data.ec2.internal",
}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# RFC 9110 field names (tokens), and values without CR, LF or NUL: a value that broke the line would add a header.
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_HEADER_VALUE_BREAKS = re.compile(r"[\r\n\x00]")
_FIELDS_OF: dict[str, set[str]] = {
    "stdio": {"command", "args", "env", "cwd"},
    "streamable-http": {"url", "headers"},
    "container": {"image", "args", "env"},
}


def validate_launch(launch: Launch) -> Launch:
    """The launch spec if it is complete and consistent for its transport, else InvalidArgument."""
    if launch.transport not in TRANSPORTS:
        raise InvalidArgument(f"transport is required: one of {', '.join(TRANSPORTS)}")
    stray = sorted(
        f
        for f in ("command", "args", "env", "cwd", "url", "headers", "image")
        if getattr(launch, f) and f not in _FIELDS_OF[launch.transport]
    )
    if stray:
        raise InvalidArgument(
            f"{', '.join(stray)} {'does' if len(stray) == 1 else 'do'} not apply to a {launch.transport} server; "
            f"it takes {', '.join(sorted(_FIELDS_OF[launch.transport]))}"
        )
    if launch.transport == "stdio" and not launch.command.strip():
        raise InvalidArgument("a stdio server needs a command (the executable to run, e.g. 'npx' or 'uvx')")
    if launch.transport == "container" and not launch.image.strip():
        raise InvalidArgument("a container server needs an image (e.g. 'ghcr.io/org/server:1.0')")
    if launch.transport == "streamable-http":
        validate_url(launch.url)
    for name in launch.env:
        if not _ENV_NAME.match(name):
            raise InvalidArgument(f"invalid environment variable name '{name}': use letters, digits and '_'")
    for name, value in launch.headers.items():
        if not _HEADER_NAME.match(name):
            raise InvalidArgument(f"invalid header name {name!r}: use letters, digits and '-' (e.g. X-Api-Key)")
        if _HEADER_VALUE_BREAKS.search(value):
            raise InvalidArgument(f"header {name}'s value holds a line break or NUL: give it on one line")
    return launch


def validate_url(url: str) -> str:
    """An http(s) URL whose host is not a link-local or cloud-metadata address."""
    if not url.strip():
        raise InvalidArgument("a streamable-http server needs a url (e.g. 'https://mcp.example.com/mcp')")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise InvalidArgument(f"url '{masked_url(url)}' is not a valid URL ({exc})") from exc
    if parts.scheme not in ("http", "https") or not host:
        raise InvalidArgument(f"url '{masked_url(url)}' must be an http:// or https:// URL with a host")
    if host in _METADATA_HOSTS or _is_forbidden_address(host):
        raise InvalidArgument(
            f"url '{masked_url(url)}' points at a link-local or cloud-metadata address, which Jarvis refuses "
            "to register (SSRF protection); use the server's routable address"
        )
    return url


def _is_forbidden_address(host: str) -> bool:
    # Host names are not resolved here: DNS can change after registration, so resolution-time
    # checks belong to whatever connects. Literal addresses, including the numeric spellings
    # some resolvers accept (2852039166, 0xA9FEA9FE), are judged now.
    host = host.rstrip(".")
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        try:
            address = ipaddress.IPv4Address(int(host, 0))
        except ValueError:
            return False
    return is_metadata_or_link_local(address)
