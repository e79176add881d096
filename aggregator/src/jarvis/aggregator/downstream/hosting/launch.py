"""How the host launches or reaches a server, from its registry launch spec, and the `servers.*` settings it
follows."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jarvis.aggregator.downstream.transport.connection import LaunchPlan
from jarvis.aggregator.downstream.transport.container import ContainerSpec
from jarvis.aggregator.downstream.transport.stdio import StdioSpec
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.aggregator.views.registry import TRANSPORT_CONTAINER, TRANSPORT_STREAMABLE_HTTP, ServerView
from jarvis.common.errors import JarvisError

NO_RUNTIME = (
    "container-image servers run through the runtime service, and this aggregator has none: set "
    "JARVIS_AGGREGATOR_RUNTIME_TARGET to the runtime's host:port (`jarvis up` has one), or register the "
    "server as a stdio server whose command is `docker run -i --rm IMAGE`"
)


@dataclass
class HostConfig:
    idle_stop_seconds: int = 900
    autostart_profiles: tuple[str, ...] = ()
    unprefixed_profiles: tuple[str, ...] = ()
    interactive: tuple[str, ...] = ()  # servers whose calls may ask their caller (see relay.py)
    oauth: tuple[str, ...] = ()  # servers each person authorizes at with their own account (downstream/auth)
    oauth_clients: dict[str, dict[str, str]] = field(default_factory=dict)  # pre-registered clients, by server
    per_person: dict[str, list[str]] = field(default_factory=dict)  # each person's own env vars / headers, by server


async def read_host_config(reg: RegistryGateway) -> HostConfig:
    """The `servers.*` settings the host follows, read now; a key an older registry lacks keeps its default.

    Not from the read cache: a sync that read profiles fresh but settings cached from a read just before a
    client edit would serve the edit's new one-server profile under prefixed names until the next change.
    """
    values: dict[str, Any] = {}
    for key in (
        "servers.idle_stop_seconds",
        "servers.autostart_profiles",
        "servers.unprefixed_profiles",
        "servers.interactive",
        "servers.oauth",
        "servers.oauth_clients",
        "servers.per_person",
    ):
        try:
            entry = await reg.get_config(key)
            values[key] = entry.value
        except (JarvisError, ValueError):
            continue  # an older registry without the key: keep the default
    return HostConfig(
        idle_stop_seconds=int(values.get("servers.idle_stop_seconds", 900)),
        autostart_profiles=tuple(values.get("servers.autostart_profiles", ())),
        unprefixed_profiles=tuple(values.get("servers.unprefixed_profiles", ())),
        interactive=tuple(values.get("servers.interactive", ())),
        oauth=tuple(values.get("servers.oauth", ())),
        oauth_clients=dict(values.get("servers.oauth_clients", {})),
        per_person=dict(values.get("servers.per_person", {})),
    )


class LaunchPlanner:
    """Resolves launch specs: env references expanded, stdio servers run in the project root unless they name a
    directory, container-image servers through the runtime (when this aggregator has one)."""

    def __init__(
        self, project_root: Path, max_message_bytes: int, own_requests: bool, runtime: RuntimeGateway | None
    ) -> None:
        self.project_root = project_root
        self.max_message_bytes = max_message_bytes
        self.own_requests = own_requests
        self.runtime = runtime  # runs container-image servers; None: they cannot be hosted here

    def plan(self, server: ServerView) -> LaunchPlan | str:
        """How to reach `server`, or why it cannot be hosted here (the host reports it as the server's error)."""
        launch = server.launch
        if launch is None:
            return "the registry holds no launch spec for it; edit the server to give it a command, URL or image"
        if launch.transport == TRANSPORT_STREAMABLE_HTTP:
            return LaunchPlan(
                server.name,
                "streamable-http",
                url=launch.url,
                headers=dict(launch.headers),
                max_message_bytes=self.max_message_bytes,
                own_requests=self.own_requests,
            )
        try:
            env = {k: _expand(v) for k, v in launch.env.items()}
        except KeyError as exc:
            return f"environment variable {exc.args[0]} named in its env is not set where Jarvis runs"
        if launch.transport == TRANSPORT_CONTAINER:
            if self.runtime is None:
                return NO_RUNTIME
            return LaunchPlan(
                server.name,
                "container",
                container=ContainerSpec(
                    server.name, launch.image, self.runtime, tuple(launch.args), env, self.max_message_bytes
                ),
                own_requests=self.own_requests,
            )
        cwd = launch.cwd or str(self.project_root)
        return LaunchPlan(
            server.name,
            "stdio",
            stdio=StdioSpec(server.name, launch.command, tuple(launch.args), env, cwd, self.max_message_bytes),
            own_requests=self.own_requests,
        )


def _expand(value: str) -> str:
    """`${NAME}` takes the value from Jarvis's own environment, so secrets need not be stored in the registry."""
    if value.startswith("${") and value.endswith("}"):
        return os.environ[value[2:-1]]
    return value
