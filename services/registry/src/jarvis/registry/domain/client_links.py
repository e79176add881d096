"""Puts installed servers, profiles and Jarvis's own surfaces into MCP client configs (every entry through Jarvis),
and imports servers from them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jarvis.common.errors import FailedPrecondition, JarvisError
from jarvis.registry.domain.clients import ClientManager, ClientStatus, EditResult, PathInfo, ServerLaunch
from jarvis.registry.domain.config.store import ConfigFile
from jarvis.registry.domain.profiles import Profiles
from jarvis.registry.domain.records import Launch
from jarvis.registry.domain.servers import Servers

AUTOSTART = "servers.autostart_profiles"
UNPREFIXED = "servers.unprefixed_profiles"


@dataclass(frozen=True)
class ClientChange:
    """What one edit adds and removes: installed servers, profiles, and Jarvis's own surfaces by name."""

    add_servers: Sequence[str] = ()
    remove_servers: Sequence[str] = ()
    add_profiles: Sequence[str] = ()
    remove_profiles: Sequence[str] = ()
    add_surfaces: Sequence[str] = ()
    remove_surfaces: Sequence[str] = ()


@dataclass(frozen=True)
class Imported:
    names: list[str]
    skipped: list[str]  # "name: reason"


class ClientLinks:
    def __init__(
        self, manager: Callable[[], ClientManager], servers: Servers, profiles: Profiles, config: ConfigFile
    ) -> None:
        self._manager = manager
        self._servers = servers
        self._profiles = profiles
        self._config = config

    def list(self) -> list[ClientStatus]:
        return self._manager().list()

    def config_path(self, name: str, path: str | None = None) -> PathInfo:
        return self._manager().config_path(name, path)

    def edit(self, name: str, change: ClientChange, *, path: str | None = None, authorization: str = "") -> EditResult:
        """Add servers, profiles and Jarvis's own surfaces to a client, every entry through Jarvis.

        A server is served alone on its one-server profile (made here when missing, under the tools' own names);
        the profiles the client now uses start with Jarvis (`servers.autostart_profiles`), so the client's first
        look finds their servers running.
        """
        manager = self._manager()
        manager.config_path(name)  # an unknown client is refused before anything changes
        servers = [self._servers.get(s).name for s in change.add_servers]  # NotFound names one not installed
        profiles = [self._profiles.get(p).name for p in change.add_profiles]  # and an unknown profile
        for server in servers:
            self._serve_alone(server)
        result = manager.edit(
            name,
            add_servers=servers,
            remove_servers=list(change.remove_servers),
            add_profiles=profiles,
            remove_profiles=list(change.remove_profiles),
            add_surfaces=[s.strip().lower() for s in change.add_surfaces],
            remove_surfaces=[s.strip().lower() for s in change.remove_surfaces],
            path=path,
            authorization=authorization,
        )
        self._add_to(AUTOSTART, [*servers, *profiles])
        return result

    def _serve_alone(self, server: str) -> None:
        """Make profile `server` serve that server alone, under its tools' own names."""
        members = self._profiles.get(server).servers if self._profiles.exists(server) else None
        if members and members != (server,):
            raise FailedPrecondition(
                f"a client entry for server '{server}' goes through a profile of the same name serving it "
                f"alone, but profile '{server}' holds {', '.join(members)}; add profile:{server} to use that "
                f"profile, or rename it (jarvis_profile action=edit name={server} new_name=…)"
            )
        # The naming is written before the profile: an aggregator reads profiles, then config, so one that reads
        # between the two writes would otherwise serve the new profile's tools prefixed until its next read.
        self._add_to(UNPREFIXED, [server])
        if members is None:
            self._profiles.create(server, f"{server} alone, for client entries", [server])
        elif not members:
            self._profiles.edit(server, add_servers=[server])

    def _add_to(self, key: str, names: Sequence[str]) -> None:
        current = list(self._config.value(key))
        missing = [n for n in dict.fromkeys(names) if n not in current]
        if missing:
            self._config.set(key, current + missing)

    def import_servers(self, name: str) -> Imported:
        """Install the client's own server entries as custom servers."""
        found = self._manager().import_servers(name)
        imported: list[str] = []
        skipped = [f"{s.name}: {s.reason}" for s in found.skipped]
        for launch in found.servers:
            try:
                server = self._servers.create(launch.name, f"imported from {found.client}", registry_launch(launch))
            except JarvisError as exc:
                skipped.append(f"{launch.name}: {exc.message}")
            else:
                imported.append(server.name)
        return Imported(imported, skipped)


def registry_launch(launch: ServerLaunch) -> Launch:
    if launch.transport == "streamable-http":
        return Launch("streamable-http", url=launch.url, headers=dict(launch.headers))
    return Launch("stdio", command=launch.command, args=tuple(launch.args), env=dict(launch.env))
