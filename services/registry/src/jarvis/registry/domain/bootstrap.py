"""First-run setup, safe to repeat: schema, bundled catalog, default servers and profiles, config file.

Repeating it never undoes a user's choice: a default server the user uninstalled or took out of the
core profile stays out (and is named in the result) unless `restore` asks to put it back.
"""

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
    restored: list[str] = field(default_factory=list)
    missing_defaults: list[str] = field(default_factory=list)


def bootstrap(
    db: Database, catalog: Catalog, servers: Servers, profiles: Profiles, config: ConfigFile, restore: bool = False
) -> BootstrapResult:
    result = BootstrapResult()
    before, after = upgrade_to_head(db.engine)
    result.steps.append(
        f"database ({db.dialect}) already at revision {after}"
        if before == after
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
            if name == "core":
                _check_core(catalog, servers, profiles, result, restore)
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


def _check_core(catalog: Catalog, servers: Servers, profiles: Profiles, result: BootstrapResult, restore: bool) -> None:
    """Default servers missing from an existing core profile: restored on request, else named."""
    members = set(profiles.get("core").servers)
    absent = [name for name in CORE_SERVERS if name not in members]
    if not absent:
        return
    if not restore:
        result.missing_defaults = absent
        result.steps.append(
            f"default server(s) {', '.join(absent)} not in profile 'core' (removed by a user); "
            "jarvis_system action=bootstrap restore=true puts them back"
        )
        return
    installed = _install_core(catalog, servers, result, absent)
    if installed:
        profiles.edit("core", add_servers=installed)
        result.restored = installed
        result.steps.append(f"profile 'core': {', '.join(installed)} restored")


def _install_core(
    catalog: Catalog, servers: Servers, result: BootstrapResult, names: tuple[str, ...] | list[str] = CORE_SERVERS
) -> list[str]:
    installed = {s.name for s in servers.list()}
    members = []
    for name in names:
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
