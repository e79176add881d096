"""Where each of Jarvis's own surfaces is served, by name: the aggregator's routes, the CLI's relay and the client
entries the registry writes all read them here, so a path moved in one place moves everywhere."""

from __future__ import annotations

DISCOVERY_PATH = "/mcp"
JARVIS_PATH = "/mcp/jarvis"
DEBUG_PATH = "/mcp/debug"
ORCHESTRATOR_PATH = "/mcp/orchestrator"
ADMIN_PATH = "/mcp/admin"  # people and roles: admins only (decision 0069)
PROFILE_PATH_PREFIX = "/mcp/profile/"  # a profile's servers' tools: /mcp/profile/<name>

SURFACE_PATHS = {
    "discovery": DISCOVERY_PATH,
    "jarvis": JARVIS_PATH,
    "debug": DEBUG_PATH,
    "orchestrator": ORCHESTRATOR_PATH,
    "admin": ADMIN_PATH,
}
# What a client entry may be named after (`jarvis_client action=edit add=[…]`, `jarvis client edit --add …`).
ENTRY_NAMES_HELP = (
    f"an installed server, profile:<name> for a profile, or one of Jarvis's own surfaces ({', '.join(SURFACE_PATHS)})"
)
