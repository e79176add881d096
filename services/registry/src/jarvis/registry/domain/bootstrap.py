"""First-run setup, safe to repeat: schema, bundled catalog, default servers and profiles, config file."""

from __future__ import annotations

from dataclasses import dataclass, field

from jarvis.common.errors import NotFound
from jarvis.registry.domain.catalog.store import Catalog
from jarvis.registry.domain.config.store import ConfigFile
from jarvis.registry.domain.profiles import Profiles
from jarvis.registry.domain.servers import Servers
from jarvis.registry.storage.database import Database
from jarvis.registry.storage.migrate import upgrade_to_head

# Servers that need no credentials or arguments, installed into the "core" profile on first run.
CORE_SERVERS = ("time", "sequential-thinking")
DEFAULT_PROFILES = {
    "default": "Profile served when a client names none; add the servers you use everywhere.",
    "core": "Credential-free essentials installed by bootstrap.",
}


@dataclass
class BootstrapResult:
    steps: list[str] = field(default_factory=list)
    catalog_entries: int = 0
    profiles_created: list[str] = field(default_factory=list)


def bootstrap(db: Database, catalog: Catalog, servers: Servers, profiles: Profiles,
              config: ConfigFile) -> BootstrapResult:
    result = BootstrapResult()
    before, after = upgrade_to_head(db.engine)
    result.steps.append(
        f"database ({db.dialect}) already at revision {after}" if before == after
        else f"database ({db.dialect}) migrated from {before or 'empty'} to revision {after}"
    )
    loaded = catalog.load_bundled()
    result.catalog_entries = catalog.count()
    result.steps.append(
        f"catalog: {loaded.imported} bundled entries added, {loaded.updated} refreshed; "
        f"{result.catalog_entries} entries in total"
    )
    for name, description in DEFAULT_PROFILES.items():
        if profiles.exists(name):
            result.steps.append(f"profile '{name}' exists")
            continue
        members = _install_core(catalog, servers, result) if name == "core" else []
        profiles.create(name, description, members)
        result.profiles_created.append(name)
        result.steps.append(f"profile '{name}' created" + (f" with {', '.join(members)}" if members else ""))
    if config.write_defaults_if_missing():
        result.steps.append(f"config written to {config.path}")
    else:
        result.steps.append(f"config exists at {config.path} (version {config.version()})")
    return result


def _install_core(catalog: Catalog, servers: Servers, result: BootstrapResult) -> list[str]:
    installed = {s.name for s in servers.list()}
    members = []
    for name in CORE_SERVERS:
        if name not in installed:
            try:
                catalog.get(name)
            except NotFound:
                result.steps.append(f"server '{name}' skipped: not in the catalog")
                continue
            servers.install(name)
            result.steps.append(f"server '{name}' installed")
        members.append(name)
    return members
