"""Upgrades of the config document between format versions, as pure functions."""

from __future__ import annotations

from typing import Any

from jarvis.common.errors import FailedPrecondition, InvalidArgument
from jarvis.registry.domain.config.keys import KEYS_BY_NAME

CURRENT_VERSION = 2

# Version 1 was a flat camelCase object without a "version" key.
V1_KEYS = {
    "aggregatorUrl": "aggregator_url",
    "defaultProfile": "default_profile",
    "logLevel": "log_level",
    "shareDefaultExpirySeconds": "share.default_expiry_seconds",
    "discoveryDefaultLimit": "discovery.default_limit",
    "usageEnabled": "usage.enabled",
    "serverIdleStopSeconds": "servers.idle_stop_seconds",
}


def version_of(doc: dict[str, Any]) -> int:
    version = doc.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise FailedPrecondition(f"config 'version' must be a positive integer, found {version!r}; fix the file")
    if version > CURRENT_VERSION:
        raise FailedPrecondition(
            f"config is version {version}, newer than this Jarvis understands ({CURRENT_VERSION}); upgrade Jarvis"
        )
    return version


def upgrade(doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The document at CURRENT_VERSION and the changes made, in words."""
    if version_of(doc) == CURRENT_VERSION:
        return doc, []
    return _v1_to_v2(doc)


def _v1_to_v2(doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    upgraded: dict[str, Any] = {"version": 2}
    changes = ["set version to 2"]
    for old, value in doc.items():
        if old == "version":
            continue
        new = V1_KEYS.get(old)
        if new is None:
            upgraded[old] = value
            changes.append(f"kept unknown key '{old}' unchanged")
            continue
        if new == "log_level" and isinstance(value, str):
            value = value.upper()  # version 1 accepted any case
        try:
            set_path(upgraded, new, KEYS_BY_NAME[new].validate(value))
            changes.append(f"renamed '{old}' to '{new}'")
        except InvalidArgument as exc:
            changes.append(f"dropped '{old}': {exc.message}; the default applies")
    return upgraded, changes


def get_path(doc: dict[str, Any], dotted: str) -> tuple[bool, Any]:
    """(found, value) for a dotted key such as 'share.default_expiry_seconds'."""
    node: Any = doc
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def set_path(doc: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = doc
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[leaf] = value
