"""Where each built-in surface is served, by its name (kept in jarvis.common.surfaces, which the registry's client
entries read too)."""

from __future__ import annotations

from jarvis.common.surfaces import (
    ADMIN_PATH,
    DEBUG_PATH,
    DISCOVERY_PATH,
    JARVIS_PATH,
    ORCHESTRATOR_PATH,
    PROFILE_PATH_PREFIX,
    SURFACE_PATHS,
)

__all__ = [
    "ADMIN_PATH",
    "DEBUG_PATH",
    "DISCOVERY_PATH",
    "JARVIS_PATH",
    "ORCHESTRATOR_PATH",
    "PROFILE_PATH_PREFIX",
    "SURFACE_PATHS",
]
