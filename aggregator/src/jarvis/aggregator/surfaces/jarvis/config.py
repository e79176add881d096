"""`jarvis_config`: Jarvis configuration values."""

from __future__ import annotations

import json
from typing import Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.downstream import report
from jarvis.aggregator.gateways.registry import to_dict
from jarvis.aggregator.tooling import schema as s
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.common.scopes import ADMIN_CONFIG_KEYS


def _entry(entry: pb.ConfigEntry) -> dict[str, Any]:
    return {
        "key": entry.key,
        "value": json.loads(entry.value_json) if entry.value_json else None,
        "default": entry.is_default,
        "description": entry.description,
    }


def build(ctx: ToolContext) -> Tool:
    reg = ctx.registry

    async def get(a: dict[str, Any], _: Principal) -> Any:
        return _entry(await reg.call(reg.registry.GetConfig, pb.GetConfigRequest(key=a["key"])))

    async def set_(a: dict[str, Any], _: Principal) -> Any:
        req = pb.SetConfigRequest(key=a["key"], value_json=json.dumps(a["value"]))
        entry = _entry(await reg.call(reg.registry.SetConfig, req))
        if entry["key"].startswith("servers."):  # hosting settings apply here at once, not at the next sync
            await report.refresh(ctx.downstream)
        return {"set": entry}

    async def list_(_: dict[str, Any], __: Principal) -> Any:
        resp = await reg.call(reg.registry.ListConfig, pb.ListConfigRequest())
        return {"version": resp.version, "path": resp.path, "config": [_entry(e) for e in resp.entries]}

    async def migrate(_: dict[str, Any], __: Principal) -> Any:
        return to_dict(await reg.call(reg.registry.MigrateConfig, pb.MigrateConfigRequest()))

    return Tool(
        name="jarvis_config",
        description="Config: get|set|list|migrate",
        properties={"key": s.string(), "value": {"description": "any JSON value"}},
        actions=[
            Action("get", get, read_only=True, idempotent=True, required=("key",)),
            Action(
                "set",
                set_,
                idempotent=True,
                required=("key", "value"),
                admin_if=lambda a: str(a.get("key", "")).strip() in ADMIN_CONFIG_KEYS,
            ),
            Action("list", list_, read_only=True, idempotent=True),
            Action("migrate", migrate, idempotent=True),
        ],
    )
