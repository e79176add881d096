"""Puts installed servers and profiles into MCP client configs, and imports servers from them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jarvis.common.errors import FailedPrecondition, JarvisError
from jarvis.registry.domain.clients import ClientManager, ClientStatus, EditResult, PathInfo, ServerLaunch
from jarvis.registry.domain.profiles import Profiles
from jarvis.registry.domain.records import Launch, Server
from jarvis.registry.domain.servers import Servers


@dataclass(frozen=True)
class Imported:
    names: list[str]
    skipped: list[str]  # "name: reason"


class ClientLinks:
    def __init__(self, manager: Callable[[], ClientManager], servers: Servers, profiles: Profiles) -> None:
        self._manager = manager
        self._servers = servers
        self._profiles = profiles

    def list(self) -> list[ClientStatus]:
        return self._manager().list()

    def config_path(self, name: str, path: str | None = None) -> PathInfo:
        return self._manager().config_path(name, path)

    def edit(
        self,
        name: str,
        add_servers: Sequence[str] = (),
        remove_servers: Sequence[str] = (),
        add_profiles: Sequence[str] = (),
        remove_profiles: Sequence[str] = (),
        *,
        path: str | None = None,
        authorization: str = "",
    ) -> EditResult:
        """Add installed servers (as direct launch entries) and profiles (as Jarvis entries) to a client."""
        launches = [client_launch(self._servers.get(s)) for s in add_servers]
        for profile in add_profiles:
            self._profiles.get(profile)  # NotFound names an unknown profile before any file changes
        return self._manager().edit(
            name,
            add_servers=launches,
            remove_servers=list(remove_servers),
            add_profiles=[p.strip().lower() for p in add_profiles],
            remove_profiles=list(remove_profiles),
            path=path,
            authorization=authorization,
        )

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


def client_launch(server: Server) -> ServerLaunch:
    """The entry a client needs to start `server` itself; containers run through `docker run`."""
    launch = server.launch
    if launch.transport == "streamable-http":
        return ServerLaunch(server.name, "streamable-http", url=launch.url, headers=launch.headers)
    if launch.cwd:
        raise FailedPrecondition(
            f"server '{server.name}' needs working directory {launch.cwd}, which client configs cannot carry; "
            "add a Jarvis profile containing it to the client instead"
        )
    if launch.transport == "container":
        # `-e NAME` passes the value from the environment given to docker, keeping it off the command line.
        env_flags = [flag for var in sorted(launch.env) for flag in ("-e", var)]
        args = ("run", "-i", "--rm", *env_flags, launch.image, *launch.args)
        return ServerLaunch(server.name, "stdio", command="docker", args=args, env=launch.env)
    return ServerLaunch(server.name, "stdio", command=launch.command, args=launch.args, env=launch.env)
