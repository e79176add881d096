"""The entries Jarvis writes into a client: every one goes through Jarvis.

- a profile `P`: entry `jarvis-P`, the surface `/mcp/profile/P`;
- a server `S`: entry `S`, the one-server profile `S` (client_links.py makes it), so the client sees the
  server's own tool names while its calls still pass Jarvis's gate, audit and hosting;
- one of Jarvis's own surfaces: `jarvis` for the `jarvis` surface, `jarvis-<surface>` for the others.

A client that speaks HTTP gets the surface's URL; a stdio-only one spawns `jarvis mcp --surface …`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, urlsplit

from jarvis.common.client_sign_in import signs_in
from jarvis.common.errors import InvalidArgument
from jarvis.common.surfaces import PROFILE_PATH_PREFIX, SURFACE_PATHS

from .formats import PROFILE_ENTRY_PREFIX, PROFILE_SURFACE_PREFIX, Access, ClientFormat
from .models import ServerLaunch, validate_name

EntryOf = Literal["server", "profile", "surface"]
SURFACES = tuple(SURFACE_PATHS)
PROFILE_NAME_PREFIX = "profile:"  # how `jarvis client edit --add` names a profile (the tool's client_edits.py)


@dataclass(frozen=True)
class JarvisEntry:
    """What one entry stands for: a server (through its one-server profile), a profile or a surface."""

    kind: EntryOf
    ref: str

    @property
    def entry_name(self) -> str:
        if self.kind == "server":
            return self.ref
        if self.kind == "profile" or self.ref != "jarvis":
            return PROFILE_ENTRY_PREFIX + self.ref
        return "jarvis"

    @property
    def label(self) -> str:
        """How the caller named it, for messages."""
        named = f"{self.kind} {self.ref!r}"
        return named if self.entry_name == self.ref else f"{named} (entry {self.entry_name!r})"

    @property
    def added_as(self) -> str:
        """The name `jarvis client edit --add` (and `jarvis_client action=edit add=[…]`) takes for it."""
        return PROFILE_NAME_PREFIX + self.ref if self.kind == "profile" else self.ref

    def validate(self) -> None:
        validate_name(self.ref, self.kind)
        if self.kind == "surface" and self.ref not in SURFACE_PATHS:
            raise InvalidArgument(f"{self.ref!r} is not a Jarvis surface; surfaces: {', '.join(SURFACES)}")

    def surface(self) -> str:
        """The `jarvis mcp --surface` value that serves this entry."""
        return self.ref if self.kind == "surface" else PROFILE_SURFACE_PREFIX + self.ref

    def path(self) -> str:
        if self.kind == "surface":
            return SURFACE_PATHS[self.ref]
        return PROFILE_PATH_PREFIX + quote(self.ref, safe="")


def jarvis_launch(client: ClientFormat, entry: JarvisEntry, access: Access) -> ServerLaunch:
    """The launch config that connects `client` to `entry` on this instance."""
    if client.url_key is None:
        # A stdio-only client spawns Jarvis itself: the absolute command of the running install
        # (a venv's `jarvis` is not on PATH) and its data dir, so it sees the same registry.
        # When a `jarvis up` serves that data dir, `jarvis mcp` relays to it over HTTP: a Jarvis that
        # requires tokens gets the entry's own (JARVIS_TOKEN, the bearer the relay sends).
        data = ("--data-dir", access.data_dir) if access.data_dir else ()
        args = (*data, "mcp", "--surface", entry.surface())
        token = access.authorization.removeprefix("Bearer ")
        env = {"JARVIS_TOKEN": token} if token else {}
        return ServerLaunch(entry.entry_name, "stdio", command=access.jarvis_command, args=args, env=env)
    headers = {"Authorization": access.authorization} if access.authorization else {}
    return ServerLaunch(entry.entry_name, "streamable-http", url=access.aggregator_url + entry.path(), headers=headers)


def needs_credential(client: ClientFormat, entry: JarvisEntry, raw: Any, sign_in: bool) -> bool:
    """Whether `raw`, the entry written for `entry`, reaches this Jarvis with no credential where one is required.

    With `sign_in` (Jarvis serves it) an HTTP entry of a client that signs in needs none: its person signs in. An
    entry that no longer points at Jarvis for `entry` (edited by hand) is not Jarvis's to judge.
    """
    if not isinstance(raw, dict) or client.carries_credential(raw):
        return False
    url = client.entry_url(raw)
    if url is not None:
        return urlsplit(url).path.rstrip("/") == entry.path() and not (sign_in and signs_in(client.name))
    command = raw.get(client.shape.command_key, raw.get("command"))
    args = command[1:] if isinstance(command, list) else raw.get(client.shape.args_key or "args")
    if not isinstance(args, list):
        return False
    return any(flag == "--surface" and value == entry.surface() for flag, value in itertools.pairwise(args))
