"""Registered state singletons and plain module globals."""

from __future__ import annotations

from collections import defaultdict

from project_mcp_server.registry import register

SENTINEL = {"value": 42, "nested": {"deep": {"deeper": {"deepest": [1, 2, 3]}}}}
CACHE = {"users": {"alice": {"id": 1, "roles": ["admin"]}, "bob": {"id": 2, "roles": []}}, 7: "seven"}
LAZY: defaultdict[str, list[int]] = defaultdict(list)  # a read by key would insert


class Settings:
    """A settings object with a slot-free instance dict and a class constant."""

    TIMEOUT = 30

    def __init__(self) -> None:
        self.debug = True
        self.name = "sample"


SETTINGS = Settings()
register("cache", CACHE)
register("settings", SETTINGS)
register("lazy", LAZY)
