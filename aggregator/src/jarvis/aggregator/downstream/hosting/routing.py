"""The call pipeline's route to a hosted server's tool (calls/routes.py), for every door that reaches one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jarvis.aggregator.calls.routes import Backend, DownstreamRoute, Send
from jarvis.aggregator.downstream.auth.ask import PersonConsent
from jarvis.aggregator.downstream.hosting import tools as served
from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.tooling.principal import Principal


def downstream_route(
    host: DownstreamHost,
    server: str,
    name: str,
    tool: str,
    person: str,
    sender: Send,
    deny: Callable[[Principal], str | None],
    listed_schema: Mapping[str, Any] | None = None,
) -> DownstreamRoute:
    """The route to `tool` (the server's own name) of `server`, called as `name`, for `person`: on the shared
    connection, the person's own OAuth grant, or the person's own keys. The audit redacts arguments by the schema the
    server lists (to the person, where it is theirs), else by `listed_schema`."""
    personal = host.personal
    oauth = server in personal.plans
    backend: Backend = "personal" if oauth else "keyed" if personal.keyed.serves(server) else "shared"

    def schema() -> Mapping[str, Any] | None:
        served = host.tools_of(server, person)
        listed = served.tools.get(tool, {}).get("inputSchema") if served is not None else None
        return listed if isinstance(listed, Mapping) else listed_schema

    return DownstreamRoute(
        server,
        name,
        backend,
        sender,
        deny,
        lambda: withheld(host, server, tool, person),
        schema,
        PersonConsent(personal, server) if oauth else None,
    )


def withheld(host: DownstreamHost, server: str, tool: str, person: str = "") -> str | None:
    """Why nobody may call `tool` (the server's own name) of `server` now: quarantined until an admin approves it,
    or declaring headers a client must not send (SEP-2243); None for a tool that may be called, or one not known
    yet (it is judged once its server lists it)."""
    running = host.hosts.get(server)
    known = host.tools_of(server, person) or (running.tools if running is not None else None)
    if known is None:
        return None
    if tool in known.quarantined:
        return served.quarantine_message(server, tool)
    if (broken := known.refused.get(tool)) is not None:  # SEP-2243: a client must not call it, named or not
        return served.refused_message(server, tool, broken)
    return None
