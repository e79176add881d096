"""`jarvis_config`: Jarvis configuration values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.downstream.hosting import report
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.tooling.tool import Action, Tool
from jarvis.aggregator.views.registry import ConfigEntryView, ConfigListing, ConfigMigrated
from jarvis.common.params import Arg, NoParams
from jarvis.common.scopes import ADMIN_CONFIG_KEYS


@dataclass(frozen=True)
class Get:
    key: str


@dataclass(frozen=True)
class Set:
    key: str
    value: Annotated[Any, Arg("any JSON value")]


@dataclass(frozen=True)
class ConfigSet:
    set: ConfigEntryView


def _key(args: Mapping[str, Any]) -> str:
    return str(args.get("key", "")).strip()


def build(ctx: ToolContext) -> Tool:
    registry = ctx.registry

    async def get(p: Get, _: Principal) -> ConfigEntryView:
        return await registry.get_config(p.key)

    async def set_(p: Set, _: Principal) -> ConfigSet:
        entry = await registry.set_config(p.key, p.value)
        if entry.key.startswith("servers."):  # hosting settings apply here at once, not at the next sync
            await report.refresh(ctx.downstream)
        return ConfigSet(entry)

    async def list_(_: NoParams, __: Principal) -> ConfigListing:
        return await registry.list_config()

    async def migrate(_: NoParams, __: Principal) -> ConfigMigrated:
        return await registry.migrate_config()

    return Tool(
        name="jarvis_config",
        description="Config: get|set|list|migrate",
        summary=(
            "Jarvis's settings: read one, change one, list them all with their values, defaults and meaning, "
            "migrate the settings file to the current version."
        ),
        actions=[
            Action("get", get, Get, read_only=True, idempotent=True),
            Action(
                "set",
                set_,
                Set,
                idempotent=True,
                admin_if=lambda a: _key(a) in ADMIN_CONFIG_KEYS,
                admin_why=lambda a: (
                    f"config key '{_key(a)}' needs an admin token: it is one of the settings that "
                    "weaken security or the audit trail, or flow into other people's client configs"
                ),
            ),
            Action("list", list_, NoParams, read_only=True, idempotent=True),
            Action("migrate", migrate, NoParams, idempotent=True),
        ],
    )
