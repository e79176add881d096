"""The registry of state singletons that `inspect_state` can read (standard library only).

The application registers the objects worth inspecting, typically at import time of the
modules listed under `state_modules` in `project-server.toml`:

    from project_mcp_server.registry import register
    register("cache", CACHE)

`inspect_state(path="cache.users")` then reads `CACHE`'s `users` entry. Paths whose first
segment is not a registered name are looked up among imported modules instead.
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_registry: dict[str, Any] = {}


def register(name: str, obj: Any) -> Any:
    """Make `obj` inspectable as `name` (a dot-free identifier); returns `obj` for chaining."""
    if not name or "." in name:
        raise ValueError("a state name is a non-empty identifier without dots")
    with _lock:
        _registry[name] = obj
    return obj


def unregister(name: str) -> None:
    """Forget `name`; unknown names are ignored."""
    with _lock:
        _registry.pop(name, None)


def registered() -> dict[str, Any]:
    """A snapshot copy of the registry (name to object)."""
    with _lock:
        return dict(_registry)
