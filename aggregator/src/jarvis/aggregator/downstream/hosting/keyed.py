"""Servers whose credentials are each person's own API keys (`servers.per_person`, issue 32 item 4).

A server lists which of its env variables (stdio, container) or headers (HTTP) are per person; each person sets
their own values (`jarvis_server action=connect`), kept sealed in the registry's vault beside their OAuth grants.
A person's calls run on an instance of their own: a stdio or container server is started with their values in its
environment on first use, an HTTP server gets them as headers; idle instances are stopped like any server's, and at
most `max_per_server` run at once per server. Values are never answered back.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable, Coroutine
from typing import Any

from mcp.shared.dispatcher import ProgressFnT

from jarvis.aggregator.calls.call import Refused
from jarvis.aggregator.downstream.auth.storage import GrantStore
from jarvis.aggregator.downstream.hosting.supervisor import HostOptions, ServerHost, ToolsLoader
from jarvis.aggregator.downstream.transport.connection import LaunchPlan
from jarvis.aggregator.downstream.transport.relay import Caller
from jarvis.common.errors import FailedPrecondition, InvalidArgument, Unavailable

MAX_VALUE_BYTES = 8 * 1024
# The outcome a call records when its person has not set every value the server needs: theirs to do, like a consent,
# so it feeds no error alert.
NEEDS_KEYS = "needs_keys"


def vault_key(server: str) -> str:
    """Where a person's values for `server` live in the vault (beside their OAuth grant, under the server's name)."""
    return f"keys:{server}"


def with_values(plan: LaunchPlan, values: dict[str, str]) -> LaunchPlan:
    """`plan` with a person's values: in the environment of a process or container, as headers of an HTTP server."""
    if plan.stdio is not None:
        return dataclasses.replace(plan, stdio=dataclasses.replace(plan.stdio, env={**plan.stdio.env, **values}))
    if plan.container is not None:
        return dataclasses.replace(
            plan, container=dataclasses.replace(plan.container, env={**plan.container.env, **values})
        )
    return dataclasses.replace(plan, headers={**plan.headers, **values})


class KeyedServers:
    def __init__(
        self, store: GrantStore | None, options: HostOptions, load_tools: ToolsLoader, max_per_server: int = 20
    ) -> None:
        self.store = store
        self.options = options
        self.max_per_server = max_per_server
        self._load_tools = load_tools
        self.plans: dict[str, tuple[LaunchPlan, tuple[str, ...]]] = {}  # server -> (plan, its per-person names)
        self.hosts: dict[tuple[str, str], tuple[ServerHost, str]] = {}  # (server, person) -> (host, values' digest)

    def serves(self, server: str) -> bool:
        return server in self.plans

    def running(self, server: str) -> int:
        return sum(1 for (name, _), (host, _) in self.hosts.items() if name == server and host.state != "stopped")

    async def set_plans(self, planned: dict[str, LaunchPlan | str], names: dict[str, list[str]]) -> None:
        plans = {
            server: (plan, tuple(names[server]))
            for server, plan in planned.items()
            if server in names and isinstance(plan, LaunchPlan)
        }
        for (server, person), (host, _) in list(self.hosts.items()):
            if plans.get(server) != self.plans.get(server):
                self.hosts.pop((server, person), None)
                await host.stop("launch spec changed")
        self.plans = plans

    async def values(self, server: str, person: str) -> dict[str, str]:
        raw = await self.store.get(person, vault_key(server)) if self.store is not None and person else None
        try:
            values = json.loads(raw) if raw else {}
        except ValueError:
            return {}
        return {str(k): str(v) for k, v in values.items()} if isinstance(values, dict) else {}

    async def ready(self, person: str) -> set[str]:
        """The servers `person` has set every one of their own values for."""
        return {
            server for server, (_, names) in self.plans.items() if set(names) <= set(await self.values(server, person))
        }

    async def set_value(self, server: str, person: str, key: str, value: str | None) -> list[str]:
        """Set (or, with None, remove) one of the person's values; the names they have set."""
        if self.store is None or not person:
            raise FailedPrecondition("per-person keys need a caller with a token of their own and a registry")
        names = self.plans[server][1] if server in self.plans else ()
        if key not in names:
            raise InvalidArgument(
                f"'{key[:60]}' is not a per-person key of server '{server}'; its keys: {', '.join(names) or 'none'}"
            )
        if value is not None and (
            not value or len(value.encode()) > MAX_VALUE_BYTES or any(c in value for c in "\r\n\0")
        ):
            raise InvalidArgument(f"the value of {key} must be 1 to {MAX_VALUE_BYTES} bytes on one line")
        values = await self.values(server, person)
        if value is None:
            values.pop(key, None)
        else:
            values[key] = value
        secret = json.dumps(values, separators=(",", ":"))
        await self.store.put(
            person, vault_key(server), secret, expires_at=0, refreshable=False, has_tokens=bool(values)
        )
        await self._drop(server, person, "its values changed")
        return sorted(values)

    async def forget(self, server: str, person: str) -> bool:
        """Remove all of the person's values for `server` (and stop their instance); whether there were any."""
        await self._drop(server, person, "its values were removed")
        return bool(self.store is not None and person and await self.store.delete(person, vault_key(server)))

    async def _drop(self, server: str, person: str, reason: str) -> None:
        found = self.hosts.pop((server, person), None)
        if found is not None:
            await found[0].stop(reason)

    async def call(
        self,
        server: str,
        person: str,
        params: dict[str, Any],
        progress: ProgressFnT | None,
        caller: Caller | None,
        caller_version: str | None,
        input_schema: dict[str, Any] | None,
    ) -> dict[str, Any]:
        plan, names = self.plans[server]
        values = await self.values(server, person)
        missing = [name for name in names if name not in values]
        if missing:  # the person has something to do, as for a consent: a refusal of its own, not a server error
            raise Refused(
                NEEDS_KEYS,
                f"server '{server}' runs with each person's own {', '.join(missing)}; set yours with "
                f'`jarvis_server action=connect name={server} env={{"{missing[0]}": "…"}}` (never shown back), then '
                "call again",
            )
        digest = hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()
        found = self.hosts.get((server, person))
        if found is not None and found[1] != digest:
            await self._drop(server, person, "its values changed")
            found = None
        if found is None:
            if self.running(server) >= self.max_per_server:
                raise Unavailable(
                    f"server '{server}' already runs {self.max_per_server} people's instances (the cap); try again "
                    "when one has stopped (idle ones stop after servers.idle_stop_seconds)"
                )
            host = ServerHost(server, with_values(plan, values), self.options, self._load_tools, lambda s, lists: None)
            found = (host, digest)
            self.hosts[(server, person)] = found
        return await found[0].call(
            "tools/call", params, None, progress, caller, caller_version=caller_version, input_schema=input_schema
        )

    def stop_idle(self, idle_seconds: float, spawn: Callable[[Coroutine[Any, Any, None]], object]) -> None:
        now = time.monotonic()
        stale = [
            key
            for key, (host, _) in self.hosts.items()
            if host.in_flight == 0 and host.state != "stopped" and now - host.last_used > idle_seconds
        ]
        for key in stale:
            spawn(self.hosts.pop(key)[0].stop(f"a person's instance idle for {idle_seconds:g} s"))

    async def stop(self) -> None:
        for host, _ in list(self.hosts.values()):
            await host.stop()
        self.hosts = {}
