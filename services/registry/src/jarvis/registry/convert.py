"""Translation between protobuf messages and domain values; no rules live here."""

from __future__ import annotations

import json
from datetime import UTC

from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.common.errors import InvalidArgument
from jarvis.common.protobuf import timestamp
from jarvis.registry.domain import records
from jarvis.registry.domain.clients import ClientStatus
from jarvis.registry.domain.config.store import ConfigValue
from jarvis.registry.domain.pins import ToolPin

_TRANSPORT_TO_PB: dict[records.TransportName, pb.Transport.ValueType] = {
    "stdio": pb.TRANSPORT_STDIO,
    "streamable-http": pb.TRANSPORT_STREAMABLE_HTTP,
    "container": pb.TRANSPORT_CONTAINER,
}
_TRANSPORT_FROM_PB = {v: k for k, v in _TRANSPORT_TO_PB.items()}


def launch_from_pb(spec: pb.LaunchSpec) -> records.Launch:
    transport = _TRANSPORT_FROM_PB.get(spec.transport)
    if transport is None:
        raise InvalidArgument(
            "launch.transport is required: TRANSPORT_STDIO, TRANSPORT_STREAMABLE_HTTP or TRANSPORT_CONTAINER"
        )
    return records.Launch(
        transport=transport,
        command=spec.command,
        args=tuple(spec.args),
        env=dict(spec.env),
        cwd=spec.cwd,
        url=spec.url,
        headers=dict(spec.headers),
        image=spec.image,
    )


def launch_to_pb(launch: records.Launch) -> pb.LaunchSpec:
    return pb.LaunchSpec(
        transport=_TRANSPORT_TO_PB[launch.transport],
        command=launch.command,
        args=launch.args,
        env=launch.env,
        cwd=launch.cwd,
        url=launch.url,
        headers=launch.headers,
        image=launch.image,
    )


def tools_to_pb(tools: tuple[records.Tool, ...]) -> list[pb.ToolSummary]:
    return [
        pb.ToolSummary(
            name=t.name,
            description=t.description,
            input_schema_json=json.dumps(t.input_schema, ensure_ascii=False) if t.input_schema is not None else "",
        )
        for t in tools
    ]


def server_to_pb(server: records.Server) -> pb.Server:
    return pb.Server(
        name=server.name,
        description=server.description,
        launch=launch_to_pb(server.launch),
        catalog_name=server.catalog_name,
        profiles=server.profiles,
        tools=tools_to_pb(server.tools),
        status=server.status,
        last_error=server.last_error,
        created_at=timestamp(server.created_at),
        updated_at=timestamp(server.updated_at),
        note=server.note,
    )


def catalog_entry_to_pb(entry: records.CatalogEntry) -> pb.CatalogEntry:
    return pb.CatalogEntry(
        name=entry.name,
        title=entry.title,
        description=entry.description,
        category=entry.category,
        source=entry.source,
        launch=launch_to_pb(entry.launch),
        required_env=entry.required_env,
        tools=tools_to_pb(entry.tools),
        installed=entry.installed,
        homepage=entry.homepage,
    )


def profile_to_pb(profile: records.Profile) -> pb.Profile:
    return pb.Profile(
        name=profile.name,
        description=profile.description,
        servers=profile.servers,
        created_at=timestamp(profile.created_at),
        updated_at=timestamp(profile.updated_at),
    )


def token_to_pb(token: records.Token) -> pb.Token:
    return pb.Token(
        id=token.id,
        name=token.name,
        prefix=token.prefix,
        scopes=token.scopes,
        created_at=timestamp(token.created_at),
        expires_at=timestamp(token.expires_at),
        revoked_at=timestamp(token.revoked_at),
        last_used_at=timestamp(token.last_used_at),
        owner=token.owner,
    )


def usage_event_from_pb(event: pb.UsageEvent) -> records.UsageEvent:
    at = event.at.ToDatetime(tzinfo=UTC) if event.HasField("at") else None
    return records.UsageEvent(
        tool=event.tool,
        action=event.action,
        ok=event.ok,
        latency_ms=event.latency_ms,
        at=at,
        token_id=event.token_id,
        token_name=event.token_name,
        surface=event.surface,
        target=event.target,
        outcome=event.outcome,
        arguments_json=event.arguments_json,
    )


def audit_entry_to_pb(entry: records.AuditEntry) -> pb.AuditEntry:
    event = entry.event
    return pb.AuditEntry(
        id=entry.id,
        event=pb.UsageEvent(
            tool=event.tool,
            action=event.action,
            ok=event.ok,
            latency_ms=event.latency_ms,
            at=timestamp(event.at),
            token_id=event.token_id,
            token_name=event.token_name,
            surface=event.surface,
            target=event.target,
            outcome=event.outcome,
            arguments_json=event.arguments_json,
        ),
    )


def usage_bucket_to_pb(bucket: records.UsageBucket) -> pb.UsageBucket:
    return pb.UsageBucket(
        start=timestamp(bucket.start),
        tool=bucket.tool,
        action=bucket.action,
        target=bucket.target,
        calls=bucket.calls,
        errors=bucket.errors,
        latency_bins=bucket.latency_bins,
    )


def usage_stat_to_pb(stat: records.UsageStat) -> pb.UsageStat:
    return pb.UsageStat(
        tool=stat.tool,
        action=stat.action,
        calls=stat.calls,
        errors=stat.errors,
        avg_latency_ms=stat.avg_latency_ms,
        max_latency_ms=stat.max_latency_ms,
        last_called_at=timestamp(stat.last_called_at),
    )


def config_entry_to_pb(value: ConfigValue) -> pb.ConfigEntry:
    return pb.ConfigEntry(
        key=value.key,
        value_json=json.dumps(value.value),
        description=value.description,
        is_default=value.is_default,
    )


def client_to_pb(client: ClientStatus) -> pb.Client:
    return pb.Client(
        name=client.name,
        display_name=client.display_name,
        config_path=client.config_path,
        detected=client.detected,
        config_exists=client.config_exists,
        custom_path=client.custom_path,
        entries=[pb.ClientEntry(name=e.name, kind=e.kind, managed=e.managed) for e in client.entries],
        error=client.error or "",
        http_entries=client.http_entries,
    )


def tool_pin_to_pb(pin: ToolPin) -> pb.ToolPin:
    return pb.ToolPin(
        server=pin.server,
        tool=pin.tool,
        state=pin.state,
        pinned_sha256=pin.pinned_sha256,
        seen_sha256=pin.seen_sha256,
        pinned_json=pin.pinned_json,
        seen_json=pin.seen_json,
        pinned_at=timestamp(pin.pinned_at),
        changed_at=timestamp(pin.changed_at),
    )
